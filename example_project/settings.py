"""Settings for the example project.

Embedded default: SQLite and the in-memory channel layer, no service needed.
Production shape: set ``DJANGO_MCP_DATABASE=postgres`` (with ``PGHOST``,
``PGPORT``, ``PGUSER``, ``PGPASSWORD``, ``PGDATABASE``) and ``REDIS_URL``.
"""

import os
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "django-mcp-example-insecure-key")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_mcp",
    "example_project.demo",
]

# The worker fleet (docs/deployment.md, "Worker fleet"): DJANGO_MCP_FLEET=1 sends the `crunch` tool's body to
# `manage.py db_worker --backend fleet` (needs `pip install -e ".[fleet]"`).
FLEET = os.environ.get("DJANGO_MCP_FLEET") == "1"
if FLEET:
    import django

    INSTALLED_APPS += ["django_tasks_db"] + (["django_tasks"] if django.VERSION < (6, 0) else [])
    TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend"},
        "fleet": {"BACKEND": "django_tasks_db.DatabaseBackend"},
    }

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
ASGI_APPLICATION = "example_project.asgi.application"
WSGI_APPLICATION = "example_project.wsgi.application"  # gunicorn example_project.wsgi (docs/deployment.md)

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]


def _databases() -> dict[str, Any]:
    if os.environ.get("DJANGO_MCP_DATABASE", "sqlite") == "mysql":  # MariaDB >= 10.6 or MySQL >= 8.0
        return {
            "default": {
                "ENGINE": "django.db.backends.mysql",
                "NAME": os.environ.get("MYSQL_DATABASE", "test"),
                "USER": os.environ.get("MYSQL_USER", "root"),
                "PASSWORD": os.environ.get("MYSQL_PASSWORD", ""),
                "HOST": os.environ.get("MYSQL_HOST", "127.0.0.1"),
                "PORT": os.environ.get("MYSQL_PORT", "3306"),
                "OPTIONS": {"charset": "utf8mb4", "connect_timeout": 3},
            }
        }
    if os.environ.get("DJANGO_MCP_DATABASE", "sqlite") == "postgres":
        return {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": os.environ.get("PGDATABASE", "test"),
                "USER": os.environ.get("PGUSER", "postgres"),
                "PASSWORD": os.environ.get("PGPASSWORD", ""),
                "HOST": os.environ.get("PGHOST", "127.0.0.1"),
                "PORT": os.environ.get("PGPORT", "5432"),
                "OPTIONS": {"pool": {"timeout": 5, "reconnect_timeout": 5}, "connect_timeout": 3},
            }
        }
    return {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("DJANGO_MCP_SQLITE", str(BASE_DIR / "db.sqlite3")),
            # IMMEDIATE + WAL + a busy timeout: concurrent writers wait instead of failing.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }


DATABASES = _databases()


def _channel_layers() -> dict[str, Any]:
    if os.environ.get("REDIS_URL"):
        return {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [os.environ["REDIS_URL"]]},
            }
        }
    return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


CHANNEL_LAYERS = _channel_layers()


def _caches() -> dict[str, Any]:
    # Handshake-era sessions live in the cache: with several processes it must be shared (check W007).
    if os.environ.get("REDIS_URL"):
        return {
            "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["REDIS_URL"]}
        }
    return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


CACHES = _caches()

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-example",
    "SERVER_VERSION": "0.1.0",
    "INSTRUCTIONS": "A demo server: echo text, look up word statistics, or run a slow job that reports progress.",
}

# -- Sign-in (OAuth 2.1) ---------------------------------------------------------------------------------
# DJANGO_MCP_OAUTH=1: this project is the endpoint's authorization server (django-oauth-toolkit, the
# `oauth` extra) and /mcp takes bearer tokens only. Sign in as a user of this site, e.g. one made with
# `DJANGO_SUPERUSER_PASSWORD=demo python manage.py createsuperuser --noinput --username demo --email demo@example.com`.
SILENCED_SYSTEM_CHECKS: list[str] = []  # each with its reason beside it
OAUTH = os.environ.get("DJANGO_MCP_OAUTH") == "1"
if OAUTH:
    from django_mcp.auth import authorization_server_settings

    INSTALLED_APPS.insert(INSTALLED_APPS.index("django_mcp"), "oauth2_provider")
    OAUTH2_PROVIDER = authorization_server_settings()
    # Plain-http redirect URIs: django-mcp takes them to loopback only, a native client's callback
    # (RFC 8252 §7.3); django_mcp.W020 warns if that stops being so.
    SILENCED_SYSTEM_CHECKS += ["oauth2_provider.W008"]
    DJANGO_MCP["AUTH"] = "django_mcp.auth.BearerAuth"
    if not DEBUG:
        DJANGO_MCP["OAUTH_RESOURCE_URL"] = os.environ.get("DJANGO_MCP_RESOURCE_URL", "https://localhost/mcp")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# One handler, on the root logger; every other logger (django, daphne, django_mcp) propagates to it.
# A handler on a named logger as well would print its lines twice: daphne configures the root logger
# too, and Django's default config gives the "django" logger a console handler of its own.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)-7s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "INFO"},
    "loggers": {
        "django": {"handlers": [], "level": "INFO"},  # drop Django's own console handler
        "daphne.server": {"level": "WARNING"},  # its startup lines repeat what runserver prints
    },
}

# -- manage.py check --deploy ---------------------------------------------------------------------------
# The demo runs with DEBUG on, over plain HTTP on 127.0.0.1. With DJANGO_DEBUG=0 it takes the production
# shape: it assumes HTTPS (a TLS-terminating proxy in front; set SECURE_PROXY_SSL_HEADER to match it).
HTTPS = not DEBUG
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = 3600 if HTTPS else 0  # start short: HSTS pins browsers to HTTPS for this host
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = False  # check --deploy suggests it (security.W021): opt in only to submit the domain
X_FRAME_OPTIONS = "DENY"

if DEBUG:
    # What the demo keeps on purpose; each comes back when DJANGO_DEBUG=0 unless fixed by then.
    SILENCED_SYSTEM_CHECKS += [
        "security.W018",  # DEBUG is on: tracebacks for the demo's only user, you (DJANGO_DEBUG=0 turns it off)
        "security.W009",  # a public, fixed SECRET_KEY: set DJANGO_SECRET_KEY to anything long and random
        "security.W008",  # no redirect to HTTPS: the demo serves plain http://127.0.0.1:8000
        "security.W004",  # no HSTS: there is no HTTPS to pin browsers to
        "security.W012",  # session cookie not Secure: the admin login must work over plain HTTP
        "security.W016",  # CSRF cookie not Secure: same reason
    ]

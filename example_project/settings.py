"""Settings for the example project.

Embedded default: SQLite and the in-memory channel layer, no service needed.
Production shape: set ``DJANGO_MCP_DATABASE=postgres`` (with ``PGHOST``,
``PGPORT``, ``PGUSER``, ``PGPASSWORD``, ``PGDATABASE``) and ``REDIS_URL``.
"""

import os
from pathlib import Path

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

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "example_project.urls"
ASGI_APPLICATION = "example_project.asgi.application"

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


def _databases() -> dict:
    if os.environ.get("DJANGO_MCP_DATABASE", "sqlite") == "postgres":
        return {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": os.environ.get("PGDATABASE", "test"),
                "USER": os.environ.get("PGUSER", "postgres"),
                "PASSWORD": os.environ.get("PGPASSWORD", ""),
                "HOST": os.environ.get("PGHOST", "127.0.0.1"),
                "PORT": os.environ.get("PGPORT", "5432"),
                "OPTIONS": {"pool": True},
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


def _channel_layers() -> dict:
    if os.environ.get("REDIS_URL"):
        return {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [os.environ["REDIS_URL"]]},
            }
        }
    return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


CHANNEL_LAYERS = _channel_layers()

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-example",
    "SERVER_VERSION": "0.1.0",
    "INSTRUCTIONS": "A demo server: echo text, look up word statistics, or run a slow job that reports progress.",
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_mcp": {"handlers": ["console"], "level": "INFO"}},
}

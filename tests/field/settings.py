"""The project a team already has: years of settings and middleware, django-mcp added last.

Serves the conformance fixtures (tests/conformance) behind what older production settings carry:
``ATOMIC_REQUESTS``, ``LoginRequiredMiddleware``, security middleware behind a TLS-terminating proxy,
compression, conditional GET, another language and time zone, persistent connections with health
checks, a custom user model signed in by email, a primary/replica router, django-cors-headers and
whitenoise. tests/field/ runs the live probes and the official conformance suite against it.

    DJANGO_SETTINGS_MODULE=tests.field.settings python manage.py migrate
    DJANGO_SETTINGS_MODULE=tests.field.settings python -m daphne tests.field.asgi:application
"""

import os
from pathlib import Path

from django_mcp.auth import authorization_server_settings

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = "django-mcp-field-project-insecure-key"
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]

INSTALLED_APPS = [
    "daphne",
    "corsheaders",
    "whitenoise.runserver_nostatic",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "oauth2_provider",
    "tests.field.accounts",
    "django_mcp",
    "tests.conformance.apps.ConformanceFixturesConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.http.ConditionalGetMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
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

ROOT_URLCONF = "tests.field.urls"
ASGI_APPLICATION = "tests.field.asgi.application"

_SQLITE = os.environ.get("DJANGO_MCP_SQLITE", str(BASE_DIR / ".db.sqlite3"))
_PRIMARY = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": _SQLITE,
    "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"},
    "ATOMIC_REQUESTS": True,
    "CONN_MAX_AGE": 600,
    "CONN_HEALTH_CHECKS": True,
    "TEST": {"NAME": os.environ.get("DJANGO_MCP_TEST_SQLITE", str(BASE_DIR / f".test-db-{os.getpid()}.sqlite3"))},
}
DATABASES = {
    "default": _PRIMARY,
    # The read replica: the same file here (Django's TEST MIRROR when tests run in-process).
    # A replica is read, never wrapped in the request's transaction.
    "replica": {**_PRIMARY, "ATOMIC_REQUESTS": False, "TEST": {"MIRROR": "default"}},
}
DATABASE_ROUTERS = ["tests.field.routers.PrimaryReplicaRouter"]

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "/accounts/login/"  # the project's own login page (LoginRequiredMiddleware sends browsers there)

# Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = os.environ.get("DJANGO_MCP_FIELD_SSL_REDIRECT", "0") == "1"
SECURE_HSTS_SECONDS = 3600
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_SECURE = SECURE_SSL_REDIRECT
CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT
X_FRAME_OPTIONS = "DENY"

LANGUAGE_CODE = "de"
LANGUAGES = [("de", "Deutsch"), ("en", "English")]
USE_I18N = True
TIME_ZONE = "Europe/Berlin"
USE_TZ = os.environ.get("DJANGO_MCP_FIELD_USE_TZ", "0") == "1"

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / ".static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# A browser client served from another loopback origin (tests/field/test_browser_client.py).
CORS_ALLOWED_ORIGIN_REGEXES = [r"^http://127\.0\.0\.1:\d+$", r"^http://localhost:\d+$"]
CORS_URLS_REGEX = r"^/(mcp[^/]*|o|\.well-known)(/.*)?$"
from django_mcp.cors import CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS  # noqa: E402, F401  (settings)

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-field",
    "SERVER_VERSION": "0.1.0",
    "SESSIONS_PER_PRINCIPAL": None,
    "SESSIONS_MAX": None,
    # Origins are exact (DNS-rebinding protection): the browser test names the page it serves.
    "ALLOWED_ORIGINS": [o for o in os.environ.get("DJANGO_MCP_FIELD_ORIGINS", "").split(",") if o],
    # What a team turns on after `check --deploy`: a rate limit per caller (one process here: its own cache
    # counts) and the audit log; tracing below.
    "RATE_LIMIT": "100000/m",
    "AUDIT": True,
}
SILENCED_SYSTEM_CHECKS = ["django_mcp.W017"]  # one process: the per-process cache counts every request

# Tracing on: the OpenTelemetry SDK with a batch processor, its spans written as JSON to DJANGO_MCP_FIELD_SPANS.
if os.environ.get("DJANGO_MCP_FIELD_SPANS"):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    _tracer_provider = TracerProvider()
    _spans = open(os.environ["DJANGO_MCP_FIELD_SPANS"], "a")  # open for the process's life
    _tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=_spans), schedule_delay_millis=100))
    trace.set_tracer_provider(_tracer_provider)

OAUTH2_PROVIDER = authorization_server_settings({"mcp": "Use the MCP tools"})

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_mcp": {"handlers": ["console"], "level": "INFO"}, "django.request": {"handlers": ["console"]}},
}

"""Settings for the conformance project: only django_mcp and the fixture app.

Do not add tests.toolapp or example_project.demo here: ``@tool`` registers into
one process-wide registry, so their tools would show up in ``tools/list`` too.

Run from the repository root::

    DJANGO_SETTINGS_MODULE=tests.conformance.settings python manage.py runserver 127.0.0.1:8931
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = "django-mcp-conformance-insecure-key"
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",  # tasks record the Django user who created them
    "django.contrib.contenttypes",
    "django_mcp",
    "tests.conformance.apps.ConformanceFixturesConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]

ROOT_URLCONF = "tests.conformance.urls"
ASGI_APPLICATION = "tests.conformance.asgi.application"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DJANGO_MCP_SQLITE", str(BASE_DIR / ".db.sqlite3")),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-conformance",
    "SERVER_VERSION": "0.1.0",
    # The suite opens a session per scenario from 127.0.0.1, run after run: the caps are tested elsewhere.
    "SESSIONS_PER_PRINCIPAL": None,
    "SESSIONS_MAX": None,
}

USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_mcp": {"handlers": ["console"], "level": "INFO"}},
}

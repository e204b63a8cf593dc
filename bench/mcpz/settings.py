"""Settings of the django-mcpz target: django-mcpz 1.2.0's ``MCPServer`` as a plain Django view.

Run by the harness in its own virtualenv (``django-mcpz==1.2.0`` and the same uvicorn pins as the
other targets), under uvicorn, as the django_mcp servers are: no middleware, ``DEBUG = False``, no
database (django-mcpz's server needs none; its optional apps ``bearer_tokens``/``oauth`` are not
installed), so the figure is the library's own cost, as for django_mcp and the floor.
"""

import os

# BENCH_MCPZ_AUTH: "" (public, as before), "oauth" (django_mcpz.oauth's access tokens, the ones its
# authorization server issues) or "tokens" (django_mcpz.bearer_tokens' personal tokens).
AUTH = os.environ.get("BENCH_MCPZ_AUTH", "")

SECRET_KEY = "django-mcpz-bench-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS: list[str] = []
if AUTH:
    # Token rows have a user FK: auth + contenttypes, as any deployment of these apps has.
    INSTALLED_APPS = [
        "django.contrib.auth",
        "django.contrib.contenttypes",
        {"oauth": "django_mcpz.oauth", "tokens": "django_mcpz.bearer_tokens"}[AUTH],
    ]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "bench.mcpz.urls"
DATABASES: dict = {}
if AUTH:
    # The same SQLite file setup as the django_mcp sqlite targets (bench/djbench/settings.py).
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("BENCH_SQLITE", "/tmp/mcpz-bench.sqlite3"),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}

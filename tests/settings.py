"""Test settings: SQLite by default; DJANGO_MCP_DATABASE=postgres and REDIS_URL switch to PG + Redis."""

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django_mcp.auth import authorization_server_settings
from example_project.settings import _channel_layers, _databases

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = "django-mcp-tests"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1", "[::1]"]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
    "django_mcp",
    "tests.toolapp",
    "tests.publishapp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
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
ROOT_URLCONF = "tests.urls"
ASGI_APPLICATION = "tests.asgi.application"

# pytest-xdist runs the suite in worker processes side by side: each its own Redis database (of the 16),
# so one worker's cache.clear() (a FLUSHDB) or layer traffic never reaches the other's. Set in the
# environment (once: the server processes a worker's live tests start inherit it, and the marker).
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
if os.environ.get("REDIS_URL") and _XDIST_WORKER != "0" and "DJANGO_MCP_TEST_REDIS_MOVED" not in os.environ:
    _redis = urlsplit(os.environ["REDIS_URL"])
    _redis_db = (int(_redis.path.strip("/") or 0) + int(_XDIST_WORKER)) % 16  # apart for up to 16 workers
    os.environ["REDIS_URL"] = urlunsplit(_redis._replace(path=f"/{_redis_db}"))
    os.environ["DJANGO_MCP_TEST_REDIS_MOVED"] = "1"

DATABASES = _databases()
# A file (not :memory:) test database, so server processes started by live tests share it.
# One per test run (concurrent runs in one checkout must not share it); setdefault hands the name
# down to the server processes the live tests start.
_TEST_SQLITE = os.environ.setdefault("DJANGO_MCP_TEST_SQLITE", str(BASE_DIR / f".test-db-{os.getpid()}.sqlite3"))
DATABASES["default"]["TEST"] = {"NAME": _TEST_SQLITE} if DATABASES["default"]["ENGINE"].endswith("sqlite3") else {}

CHANNEL_LAYERS = _channel_layers()
# Handshake-era sessions live in the cache: live multi-worker tests share it through Redis.
CACHES = (
    {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["REDIS_URL"]}}
    if os.environ.get("REDIS_URL")
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)

DJANGO_MCP = {
    "SERVER_NAME": "django-mcp-tests",
    "SERVER_VERSION": "9.9.9",
    "PAGE_SIZE": 3,
    # Server processes started by the live tests handle SIGTERM; the pytest process does not.
    "SHUTDOWN_SIGNALS": os.environ.get("DJANGO_MCP_TEST_SIGNALS") == "1",
    # Live tests shorten leases and grace to keep their runs short.
    "TASK_LEASE_SECONDS": float(os.environ.get("DJANGO_MCP_TEST_LEASE", "15")),
    "TASK_LEASE_RENEW_SECONDS": float(os.environ.get("DJANGO_MCP_TEST_LEASE", "15")) / 3,
    "SHUTDOWN_GRACE_SECONDS": float(os.environ.get("DJANGO_MCP_TEST_GRACE", "10")),
    # A test run opens thousands of handshake-era sessions from 127.0.0.1, and with Redis they outlive the
    # run: the session caps are tested where they are set (tests/transport/test_session_store.py).
    "SESSIONS_PER_PRINCIPAL": None,
    "SESSIONS_MAX": None,
    # The live test of limits counted across workers sets one (tests/live/test_workers.py).
    "RATE_LIMIT": os.environ.get("DJANGO_MCP_TEST_RATE_LIMIT"),
    # CI runs the suite both ways: the store's fast paths, and the plain ORM they must match.
    "TASK_FAST_PATHS": os.environ.get("DJANGO_MCP_TEST_FAST_PATHS", "1") == "1",
    # The suite registers OAuth clients from 127.0.0.1 all run long: the rate is tested where it is set.
    "OAUTH_REGISTRATION_RATE": None,
}

# This project is the authorization server of /mcp-oauth (tests/test_oauth*.py).
OAUTH2_PROVIDER = authorization_server_settings(
    {"mcp": "Use the MCP tools", "notes:write": "Write notes"},
    # Live tests register CIMD documents served from 127.0.0.1, which the default fetcher refuses.
    CIMD_METADATA_FETCHER="tests.oauth.LoopbackMetadataFetcher",
)

USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The worker fleet (McpTasks(task_backend=...)): Django Tasks backends; the live fleet test starts
# `manage.py db_worker --backend fleet --queue-name mcp` processes.
import django  # noqa: E402

INSTALLED_APPS += ["django_tasks_db"]
if django.VERSION < (6, 0):
    INSTALLED_APPS += ["django_tasks"]
_TASKS_PACKAGE = "django_tasks" if django.VERSION < (6, 0) else "django.tasks"
TASKS = {
    "default": {"BACKEND": f"{_TASKS_PACKAGE}.backends.immediate.ImmediateBackend"},
    "fleet": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["mcp"]},
}
if os.environ.get("DJANGO_MCP_TEST_RQ_URL"):  # the live fleet test's rq leg (its own web and rq worker processes)
    INSTALLED_APPS += ["django_rq"]
    TASKS["rq"] = {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["mcp"]}
    RQ_QUEUES = {"mcp": {"URL": os.environ["DJANGO_MCP_TEST_RQ_URL"], "DEFAULT_TIMEOUT": -1}}

if os.environ.get("DJANGO_MCP_TEST_CELERY_BROKER"):  # the live fleet test's Celery leg (RabbitMQ or Redis)
    TASKS["celery"] = {
        "BACKEND": "django_mcp.tasks.celery_backend.CeleryBackend",
        "QUEUES": ["mcp"],
        "OPTIONS": {"APP": "tests.celery_app.app"},
    }
    CELERY_BROKER_URL = os.environ["DJANGO_MCP_TEST_CELERY_BROKER"]
    CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# Live tests: the server processes export their spans as JSON lines (tests/otel_export.py).
if os.environ.get("DJANGO_MCP_TEST_OTEL_DIR"):
    from tests.otel_export import setup as _otel_setup

    _otel_setup(os.environ["DJANGO_MCP_TEST_OTEL_DIR"])

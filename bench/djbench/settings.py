"""Bench-only settings: the django_mcp bench server and the Django floor view.

Not the test settings. Switched by environment variables set by ``bench/run.py``:

- ``BENCH_DB=sqlite`` (default; ``BENCH_SQLITE`` is the file) or ``BENCH_DB=postgres``
  (``PGHOST``/``PGPORT``/``PGUSER``/``PGPASSWORD``/``PGDATABASE``, default 127.0.0.1:5432 postgres/test)
  or ``BENCH_DB=mysql`` (``MYSQL_HOST``/``MYSQL_PORT``/``MYSQL_USER``/``MYSQL_PASSWORD``/``MYSQL_DATABASE``,
  default 127.0.0.1:3306 root/bench)
- ``BENCH_PG_SCHEMA``: the PostgreSQL schema of the bench's tables (default ``bench``)
- ``BENCH_REDIS=redis://...``: the Redis pub/sub channel layer and the Redis cache (else the in-memory layer and
  Django's default, per-process cache)
- ``BENCH_POLL_MS``: the ``pollIntervalMs`` the tasks extension advertises (default 100)
- ``BENCH_DEPLOYED=1``: the shape a team deploys (with ``BENCH_DB=postgres`` and ``BENCH_REDIS``): sign-in with
  django-oauth-toolkit's access tokens as docs/sign-in.md sets it up, rate limits on (counted in the Redis
  cache), the audit log on, and the OpenTelemetry SDK exporting spans through a ``BatchSpanProcessor`` and
  metrics every 10 s over OTLP/HTTP to ``BENCH_OTLP`` (a receiver on 127.0.0.1)
- ``BENCH_MONITOR=1``: the admin (sessions, messages, their middleware) at ``/admin/``, for the task monitor's
  viewers of ``bench/monitor_viewers.py``
- ``BENCH_DEPLOYED_OFF=auth,limits,audit,tracing,export``: the deployed shape with those parts off (``export``:
  spans made but exported nowhere), to tell what each part costs inside it (``bench/ablate.py``)
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = "django-mcp-bench-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

# What django_mcp needs, as a uvicorn deployment would list them. Not "daphne": its app only replaces
# runserver (the bench starts daphne by its CLI), and it would load Twisted, autobahn and cryptography
# into the uvicorn servers too (~30,000 more objects for each full garbage collection to walk).
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django_mcp", "bench.djbench"]
# No middleware, for django_mcp and for the floor alike: the figures are the library's own cost.
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "bench.djbench.urls"
ASGI_APPLICATION = "bench.djbench.asgi.application"

if os.environ.get("BENCH_DB", "sqlite") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("PGDATABASE", "test"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "PASSWORD": os.environ.get("PGPASSWORD", ""),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
            "CONN_MAX_AGE": 0,
            # The production shape of docs/deployment.md: Django's pool, and parameters bound on the
            # server with its prepared statements (no transaction-mode pooler in between here). The
            # bench's tables live in their own schema.
            "OPTIONS": {
                "pool": {"timeout": 5, "reconnect_timeout": 5},  # as check W011 and docs/deployment.md advise
                "connect_timeout": 3,
                "server_side_binding": True,
                "prepare_threshold": 5,
                "options": f"-c search_path={os.environ.get('BENCH_PG_SCHEMA', 'bench')}",
            },
        }
    }
elif os.environ.get("BENCH_DB") == "mysql":  # MariaDB or MySQL, as docs/deployment.md sets it
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "NAME": os.environ.get("MYSQL_DATABASE", "bench"),
            "USER": os.environ.get("MYSQL_USER", "root"),
            "PASSWORD": os.environ.get("MYSQL_PASSWORD", ""),
            "HOST": os.environ.get("MYSQL_HOST", "127.0.0.1"),
            "PORT": os.environ.get("MYSQL_PORT", "3306"),
            # No pool in Django's MySQL backend: each request thread and store thread keeps its connection.
            "CONN_MAX_AGE": 300,
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {"charset": "utf8mb4", "connect_timeout": 3},
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("BENCH_SQLITE", str(BASE_DIR / "bench.sqlite3")),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

if os.environ.get("BENCH_REDIS"):
    # The production shape (docs/deployment.md): Redis is the cache too (handshake sessions, remembered tokens,
    # rate-limit counters), shared by every worker.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["BENCH_REDIS"],
            "KEY_PREFIX": "bench",
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [os.environ["BENCH_REDIS"]]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

MONITOR = os.environ.get("BENCH_MONITOR") == "1"
if MONITOR:  # the admin and its task monitor (bench/monitor_viewers.py), for the pages' and streams' sessions
    INSTALLED_APPS[:0] = ["django.contrib.admin", "django.contrib.sessions", "django.contrib.messages"]
    MIDDLEWARE = [
        "django.contrib.sessions.middleware.SessionMiddleware",
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

DEPLOYED = os.environ.get("BENCH_DEPLOYED") == "1"
DEPLOYED_OFF = set(filter(None, os.environ.get("BENCH_DEPLOYED_OFF", "").split(",")))

DJANGO_MCP = {
    "SERVER_NAME": "bench-django-mcp",
    "SERVER_VERSION": "0.1.0",
    "RATE_LIMIT": os.environ.get("BENCH_RATE_LIMIT"),  # the "limited" target: counted, never reached
    "AUDIT": os.environ.get("BENCH_AUDIT") == "1",  # the "audited" target: a row per tools/call
    # The harness stops servers itself (SIGTERM, then SIGKILL after the memory scenario).
    "SHUTDOWN_GRACE_SECONDS": 0,
}
if os.environ.get("BENCH_LISTENERS_UNCAPPED") == "1":  # the fan-out phase: 1,000 listeners of one client
    DJANGO_MCP["LISTEN_MAX_STREAMS_PER_PRINCIPAL"] = None
# W005: the in-memory layer outside DEBUG (one process is the point); E015: /mcp-auth/ measures token checks,
# no client looks for its sign-in metadata (serving it would add URL patterns to every request's routing).
SILENCED_SYSTEM_CHECKS = ["django_mcp.W005", "django_mcp.E015"]

if DEPLOYED:
    from django_mcp.auth import authorization_server_settings

    INSTALLED_APPS.insert(INSTALLED_APPS.index("django_mcp"), "oauth2_provider")
    OAUTH2_PROVIDER = authorization_server_settings()
    if "auth" not in DEPLOYED_OFF:
        DJANGO_MCP.update(AUTH="django_mcp.auth.BearerAuth", OAUTH_RESOURCE_URL="http://127.0.0.1/mcp/")
    if "limits" not in DEPLOYED_OFF:
        DJANGO_MCP["RATE_LIMIT"] = "100000000/h"  # counted in Redis on every request, never reached
    DJANGO_MCP["AUDIT"] = "audit" not in DEPLOYED_OFF

USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}

if DEPLOYED and not DEPLOYED_OFF & {"tracing", "export"}:  # spans and metrics exported over OTLP/HTTP, as a
    # collector beside the service would take them
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    _otlp = os.environ["BENCH_OTLP"]
    _provider = TracerProvider()
    _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{_otlp}/v1/traces")))
    trace.set_tracer_provider(_provider)
    _reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{_otlp}/v1/metrics"), 10_000)
    metrics.set_meter_provider(MeterProvider(metric_readers=[_reader]))
elif os.environ.get("BENCH_OTEL") == "1" or (DEPLOYED and "tracing" not in DEPLOYED_OFF):
    # the "traced" target: spans and metrics made, exported nowhere
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class _Nowhere(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    _provider = TracerProvider()
    _provider.add_span_processor(BatchSpanProcessor(_Nowhere()))
    trace.set_tracer_provider(_provider)
    metrics.set_meter_provider(MeterProvider())

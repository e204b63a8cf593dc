"""Settings of the django-mcpz target: django-mcpz 1.2.0's ``MCPServer`` as a plain Django view.

Run by the harness in its own virtualenv (``django-mcpz==1.2.0`` and the same uvicorn pins as the
other targets), under uvicorn, as the django_mcp servers are: no middleware, ``DEBUG = False``, no
database (django-mcpz's server needs none; its optional apps ``bearer_tokens``/``oauth`` are not
installed), so the figure is the library's own cost, as for django_mcp and the floor.
"""

SECRET_KEY = "django-mcpz-bench-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "bench.mcpz.urls"
DATABASES: dict = {}
USE_TZ = True
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}

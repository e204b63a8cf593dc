import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.djbench.settings")

if os.environ.get("BENCH_ASGI") == "django":
    # Django's own ASGI application: the floor as Django ships it (and a reference django_mcp target).
    from django.core.asgi import get_asgi_application
else:
    # What the docs tell a project to serve: Django's application with its request threads pooled.
    from django_mcp.asgi import get_asgi_application

application = get_asgi_application()

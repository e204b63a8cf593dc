import os

from django_mcp.asgi import get_asgi_application  # Django's, its request threads pooled

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

application = get_asgi_application()

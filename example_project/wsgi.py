"""WSGI entry point of the example project (gunicorn): what a WSGI server can serve, see docs/deployment.md, "Under WSGI"."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

application = get_wsgi_application()

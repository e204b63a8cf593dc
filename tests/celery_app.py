"""The test project's Celery app, as a project's ``proj/celery.py`` has one (the fleet's Celery leg).

``celery -A tests.celery_app worker -Q mcp --pool threads``; the broker is DJANGO_MCP_TEST_CELERY_BROKER.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

app = Celery("tests")
app.config_from_object("django.conf:settings", namespace="CELERY")

from django.apps import AppConfig


class PublishAppConfig(AppConfig):
    """Models and a django-ninja API that tests/publishapp/server.py publishes as tools."""

    name = "tests.publishapp"
    label = "publishapp"

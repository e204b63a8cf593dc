from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "example_project.demo"
    label = "demo"

    def ready(self) -> None:
        from django_mcp import registry

        from . import tools

        # The decorator form is used in tools.py; this is the explicit form.
        registry.register(tools.word_stats, output_schema=tools.WORD_STATS_SCHEMA)

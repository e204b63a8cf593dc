from django.apps import AppConfig


class ConformanceFixturesConfig(AppConfig):
    """Registers the conformance fixture tools from ready(), as a user's app would."""

    name = "tests.conformance"
    label = "mcp_conformance"
    verbose_name = "MCP conformance fixtures"

    def ready(self) -> None:
        from . import fixtures  # noqa: F401  (registers the fixture tools)

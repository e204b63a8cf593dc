from django.apps import AppConfig


class ToolAppConfig(AppConfig):
    """Registers the test tools the way a user's app does: from ready()."""

    name = "tests.toolapp"
    label = "toolapp"

    def ready(self) -> None:
        from . import tools  # noqa: F401

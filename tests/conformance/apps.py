from django.apps import AppConfig


class ConformanceFixturesConfig(AppConfig):
    """Registers the conformance fixtures from ready(), as a user's app would.

    Import order is registration order, which is the tools/list order:
    ``fixtures`` first (test_simple_text must be the first listed tool).
    """

    name = "tests.conformance"
    label = "mcp_conformance"
    verbose_name = "MCP conformance fixtures"

    def ready(self) -> None:
        from . import (
            fixtures,  # noqa: F401  (the core, tools, transport and HTTP-header tools)
            legacy_fixtures,  # noqa: F401  (tools only the 2025-11-25 wire calls: logging, sampling, elicitation)
            live_clients,  # noqa: F401  (echo and render, for tests/live/test_clients.py)
            mrtr,  # noqa: F401  (test_input_required_result_* tools and prompt)
            resources_prompts,  # noqa: F401  (resources, prompts, completion)
            tasks,  # noqa: F401  (the tasks-extension tools)
            triggers,  # noqa: F401  (test_trigger_tool_change, test_trigger_prompt_change)
        )

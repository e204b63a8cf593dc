"""The OAuth-guarded server of the sign-in tests (/mcp-oauth), and what the tests need of OAuth."""

from typing import Any

from django_mcp import McpRequest, McpServer, PromptRegistry, ResourceRegistry, ToolRegistry
from django_mcp.auth import BearerAuth
from django_mcp.tasks import McpTasks

oauth_tools = ToolRegistry(name="oauth")


@oauth_tools.register
def whoami(request: McpRequest) -> str:
    """The signed-in user's username."""
    return request.user.get_username()


@oauth_tools.register(scopes=["notes:write"], audit_arguments=["text"])
def write_note(request: McpRequest, text: str) -> str:
    """Needs the notes:write scope."""
    return f"{request.user.get_username()} wrote {text}"


@oauth_tools.register(permissions=["auth.view_user"])
def count_users(request: McpRequest) -> int:
    """Needs the auth.view_user permission."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.count()


@oauth_tools.register(task_support="required")
async def slow_report(request: McpRequest, n: int = 1) -> str:
    """A task: runs in the background as the signed-in user."""
    return f"report {n} for {request.user.get_username()}"


@oauth_tools.register(audit_arguments="all")
def echo(request: McpRequest, text: str) -> str:
    return text


@oauth_tools.register(task_support="optional")
async def render(request: McpRequest, scene: str, frames: int = 1) -> str:
    """What the live sign-in client runs as a task (the example project's render, in brief)."""
    return f"Rendered {scene!r} ({frames} frames)."


@oauth_tools.register(rate_limit="2/m")
def limited(request: McpRequest) -> str:
    """At most twice a minute per caller."""
    return "ok"


oauth_prompts = PromptRegistry(name="oauth")
oauth_resources = ResourceRegistry(name="oauth")


@oauth_prompts.register(permissions=["auth.view_user"], complete={"who": lambda request, value, known: ["alice"]})
def user_report(request: McpRequest, who: str) -> str:
    return f"Report on {who}"


@oauth_prompts.register
def greeting(request: McpRequest) -> str:
    return "Hello"


@oauth_resources.register("users://count", permissions=["auth.view_user"])
def user_count(request: McpRequest) -> str:
    return "1"


@oauth_resources.register("users://{name}", permissions=["auth.view_user"])
def user_by_name(request: McpRequest, name: str) -> str:
    return name


oauth_server = McpServer(
    tools=oauth_tools,
    prompts=oauth_prompts,
    resources=oauth_resources,
    auth=BearerAuth(),
    extension_plugins=[McpTasks(ttl_seconds=60, poll_interval_seconds=0.1)],
    urls_namespace="mcp_oauth",
)

CIMD_DOCUMENTS: dict[str, dict[str, Any]] = {
    "https://client.example/mcp-test-client": {
        "client_id": "https://client.example/mcp-test-client",
        "client_name": "django-mcp test client",
        "redirect_uris": ["http://127.0.0.1:3030/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
}


class LoopbackMetadataFetcher:
    """CIMD documents the tests hand out themselves (the real fetcher needs a public https host)."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        from oauth2_provider.cimd import CIMDError

        try:
            return CIMD_DOCUMENTS[client_id], 300
        except KeyError:
            raise CIMDError(f"no such test client document: {client_id}") from None

"""``subscriptions/listen``: what a filter asks for, what is honoured, and the stream that serves it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError, invalid_params
from ..protocol.jsonrpc import META_SERVER_INFO
from .context import McpRequest
from .listen import ListenStream
from .notify import has_channel_layer, resource_group
from .registry import Registry

if TYPE_CHECKING:
    from .server import McpServer


_LIST_FLAGS = {"toolsListChanged": "tools", "promptsListChanged": "prompts", "resourcesListChanged": "resources"}


async def listen(server: McpServer, request: McpRequest) -> ListenStream:
    """``subscriptions/listen``: check the filter, keep what can be honoured, and return the stream to serve."""
    wanted = request.params.get("notifications")
    if not isinstance(wanted, dict):
        raise invalid_params("Invalid params: subscriptions/listen needs a 'notifications' object")
    caps = server.capabilities(request.http_request)
    honoured: dict[str, Any] = {}
    groups: list[str] = []
    registries: dict[str, Registry[Any]] = {
        "tools": server.tools,
        "prompts": server.prompts,
        "resources": server.resources,
    }
    for flag, capability in _LIST_FLAGS.items():
        value = wanted.get(flag, False)
        if not isinstance(value, bool):
            raise invalid_params(f"Invalid params: notifications.{flag} must be a boolean")
        if value and caps.get(capability, {}).get("listChanged"):
            honoured[flag] = True
            groups.append(registries[capability].channel_group)
    uris = wanted.get("resourceSubscriptions", [])
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise invalid_params("Invalid params: notifications.resourceSubscriptions must be a list of URIs")
    if uris and caps.get("resources", {}).get("subscribe"):
        known = [u for u in dict.fromkeys(uris) if server.resources.resolve(u) is not None]
        if known:
            honoured["resourceSubscriptions"] = known
            groups += [resource_group(u) for u in known]
    snapshots = []
    for plugin in server.extension_plugins:
        if set(plugin.listen_filter_keys) & set(wanted) and plugin.enabled(request.http_request):
            part = await plugin.subscribe(request, wanted)
            honoured.update(part.honoured)
            groups += part.groups
            if part.snapshot is not None:
                snapshots.append(part.snapshot)
    if groups and not has_channel_layer():
        raise McpJsonRpcError(INTERNAL_ERROR, "Notifications need a channel layer: configure CHANNEL_LAYERS")
    settings = get_settings()
    options = server.options_for(request.http_request)
    assert request.id is not None  # requests always have one; notifications never get here
    return ListenStream(
        request.id,
        honoured,
        groups,
        snapshots,
        result_meta={META_SERVER_INFO: options.server_info()} if options.server_info_in_meta else {},
        keepalive_seconds=settings.LISTEN_KEEPALIVE_SECONDS,
        queue_size=settings.LISTEN_QUEUE_SIZE,
    )

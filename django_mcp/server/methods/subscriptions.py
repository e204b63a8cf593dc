"""``subscriptions/listen``: what a filter asks for, what is honoured, and the stream that serves it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...conf import get_settings
from ...protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from ...protocol.jsonrpc import META_SERVER_INFO
from ..access import avisible
from ..caller import principal_digest
from ..listen import ListenStream, admit_stream
from ..notify import has_channel_layer, resource_group
from ..params import ListenParams
from ..request import McpRequest, needs_asgi
from ..tools.registry import Registry

if TYPE_CHECKING:
    from ..context import ServerContext


async def listen(context: ServerContext, request: McpRequest, params: ListenParams) -> ListenStream:
    """``subscriptions/listen``: keep what of the filter can be honoured, and return the stream to serve."""
    if not request.served_by_asgi:
        raise needs_asgi("subscriptions/listen (a stream that stays open)")
    wanted = params.notifications
    caps = context.capabilities
    honoured: dict[str, Any] = {}
    groups: list[str] = []
    registries: dict[str, tuple[bool, Registry[Any]]] = {
        "toolsListChanged": (wanted.toolsListChanged, context.tools),
        "promptsListChanged": (wanted.promptsListChanged, context.prompts),
        "resourcesListChanged": (wanted.resourcesListChanged, context.resources),
    }
    for flag, (asked, registry) in registries.items():
        if asked and caps.get(registry.kind, {}).get("listChanged"):
            honoured[flag] = True
            groups.append(registry.channel_group)
    uris = wanted.resourceSubscriptions
    if uris and caps.get("resources", {}).get("subscribe"):
        known = [u for u in dict.fromkeys(uris) if await _areadable(context, request, u)]
        if known:
            honoured["resourceSubscriptions"] = known
            groups += [resource_group(u) for u in known]
    extension_keys = wanted.model_extra or {}
    snapshots = []
    for plugin in context.plugins:
        if set(plugin.listen_filter_keys) & set(extension_keys):
            part = await plugin.subscribe(request, extension_keys)
            honoured.update(part.honoured)
            groups += part.groups
            if part.snapshot is not None:
                snapshots.append(part.snapshot)
    if groups and not has_channel_layer():
        raise McpJsonRpcError(INTERNAL_ERROR, "Notifications need a channel layer: configure CHANNEL_LAYERS")
    settings = get_settings()
    options = context.options
    assert request.id is not None  # requests always have one; notifications never get here
    stream = ListenStream(
        request.id,
        honoured,
        groups,
        snapshots,
        result_meta={META_SERVER_INFO: options.server_info()} if options.server_info_in_meta else {},
        keepalive_seconds=settings.LISTEN_KEEPALIVE_SECONDS,
        queue_size=settings.LISTEN_QUEUE_SIZE,
    )
    return admit_stream(stream, principal_digest(request.namespace, request.limit_key))


async def _areadable(context: ServerContext, request: McpRequest, uri: str) -> bool:
    """Whether the caller may read ``uri`` (a resource it may not see is one that does not exist)."""
    found = context.resources.resolve(uri)
    return found is not None and bool(await avisible(request, [found[0]]))

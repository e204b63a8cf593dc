"""The 2026-07-28 front: an admitted message becomes an ``McpRequest`` for the dispatcher."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponseBase

from ..protocol.validation import Admitted
from ..server import telemetry
from ..server.request import McpRequest
from .http import aresolve_user
from .respond import Outbox, Served, aensure_started, arespond, atraced
from .responses import accepted

if TYPE_CHECKING:
    from .mounted import MountedServer


async def aserve_post(
    server: MountedServer, http_request: HttpRequest, admitted: Admitted, headers: Mapping[str, str]
) -> HttpResponseBase:
    """Serve one admitted 2026-07-28 POST: 202 for a notification, else the dispatcher's answer."""
    message = admitted.message
    if admitted.meta is None:
        # Notifications (e.g. notifications/cancelled) are accepted and ignored on HTTP.
        telemetry.notified(message.method, message.params, headers, headers.get("mcp-protocol-version", ""))
        return accepted()
    await aresolve_user(http_request)
    outbox = Outbox()
    request = McpRequest(
        http_request,
        request_id=message.id,
        method=message.method,
        params=message.params,
        meta=admitted.meta,
        headers=headers,
        sink=outbox.put,
        namespace=server.urls_namespace,
    )
    return await arespond(request, outbox, _aserve(server, request))


async def _aserve(server: MountedServer, request: McpRequest) -> Served:
    await aensure_started(server, request)
    if not telemetry.active():  # no span: no partial to build on every request
        return await server.dispatcher.adispatch(request)
    return await atraced(server, request, partial(server.dispatcher.adispatch, request))

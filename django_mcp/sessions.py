"""Handshake-era sessions (``Mcp-Session-Id``), kept in Django's cache so any worker can serve them.

A session is created by ``initialize``, bound to the principal that opened it
(another principal reads it as unknown), renewed on use, and ended by
``DELETE`` or expiry. With several server processes the cache named by
``DJANGO_MCP["SESSION_CACHE"]`` must be shared (Redis, database): check
``django_mcp.W007`` says so when it is per-process.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from django.core.cache import caches

from .conf import get_settings
from .protocol.errors import INTERNAL_ERROR, McpJsonRpcError
from .server.notify import throttle

_PREFIX = "django_mcp.session."
logger = logging.getLogger("django_mcp")
T = TypeVar("T")


@dataclass
class McpSession:
    """What a handshake-era client negotiated with ``initialize``."""

    id: str
    owner: str
    protocol_version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)

    @property
    def group(self) -> str:
        """The Channels group of this session's GET stream (control messages, resource subscriptions)."""
        return "django_mcp.session." + hashlib.sha256(self.id.encode()).hexdigest()[:48]


def owner_key(namespace: str, principal: str) -> str:
    """Who a session belongs to: a digest (a principal may be a secret, e.g. a bearer token)."""
    return hashlib.sha256(f"{namespace}\0{principal}".encode()).hexdigest()


def _cache() -> Any:
    return caches[get_settings().SESSION_CACHE]


async def _reach(operation: Awaitable[T]) -> T:
    """Run a cache operation; the store unreachable is a 503 for the request (logged once a minute)."""
    try:
        result = await operation
    except Exception as exc:  # a cache backend may fail in any way (Redis down, a full disk …)
        throttle.log(logger, logging.WARNING, "session-store", "Session store unavailable: %r", exc)
        raise McpJsonRpcError(
            INTERNAL_ERROR,
            "Sessions are unavailable (the session store cannot be reached): try again shortly",
            http_status=503,
        ) from None
    if throttle.failing("session-store"):
        throttle.recovered(logger, "session-store", "Session store reachable again")
    return result


async def create(owner: str, protocol_version: str, capabilities: dict[str, Any], client_info: Any) -> McpSession:
    """A new session with an unguessable id, stored for ``SESSION_TTL_SECONDS``."""
    session = McpSession(
        id=secrets.token_urlsafe(32),
        owner=owner,
        protocol_version=protocol_version,
        capabilities=capabilities,
        client_info=client_info if isinstance(client_info, dict) else None,
    )
    await save(session)
    return session


async def save(session: McpSession) -> None:
    """Store (and renew) the session."""
    await _reach(_cache().aset(_PREFIX + session.id, asdict(session), get_settings().SESSION_TTL_SECONDS))


async def load(session_id: str, owner: str) -> McpSession | None:
    """The session if it exists, has not expired and belongs to ``owner``; else None (all read the same)."""
    if not session_id or len(session_id) > 128:
        return None
    raw = await _reach(_cache().aget(_PREFIX + session_id))
    if not isinstance(raw, dict):
        return None
    try:
        session = McpSession(**raw)
    except TypeError:
        return None
    if not secrets.compare_digest(session.owner, owner):
        return None
    await _reach(_cache().atouch(_PREFIX + session_id, get_settings().SESSION_TTL_SECONDS))
    return session


async def delete(session: McpSession) -> None:
    """End the session: later requests with its id get 404 and the client initializes again."""
    await _reach(_cache().adelete(_PREFIX + session.id))

"""Handshake-era sessions (``Mcp-Session-Id``), kept in Django's cache so any worker can serve them.

A session is created by ``initialize``, bound to the principal that opened it
(another principal reads it as unknown), renewed on use, and ended by
``DELETE`` or expiry. With several server processes the cache named by
``DJANGO_MCP["SESSION_CACHE"]`` must be shared (Redis, database): check
``django_mcp.W007`` says so when it is per-process.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from django.core.cache import caches

from .conf import get_settings

_PREFIX = "django_mcp.session."


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
    await _cache().aset(_PREFIX + session.id, asdict(session), get_settings().SESSION_TTL_SECONDS)


async def load(session_id: str, owner: str) -> McpSession | None:
    """The session if it exists, has not expired and belongs to ``owner``; else None (all read the same)."""
    if not session_id or len(session_id) > 128:
        return None
    raw = await _cache().aget(_PREFIX + session_id)
    if not isinstance(raw, dict):
        return None
    try:
        session = McpSession(**raw)
    except TypeError:
        return None
    if not secrets.compare_digest(session.owner, owner):
        return None
    await _cache().atouch(_PREFIX + session_id, get_settings().SESSION_TTL_SECONDS)
    return session


async def delete(session: McpSession) -> None:
    """End the session: later requests with its id get 404 and the client initializes again."""
    await _cache().adelete(_PREFIX + session.id)

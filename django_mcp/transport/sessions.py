"""Handshake-era sessions (``Mcp-Session-Id``), kept in Django's cache so any worker can serve them.

A session is created by ``initialize``, bound to the principal that opened it
(another principal reads it as unknown), renewed on use, and ended by
``DELETE`` or expiry. With several server processes the cache named by
``DJANGO_MCP["SESSION_CACHE"]`` must be shared (Redis, database): check
``django_mcp.W007`` says so when it is per-process.

What the cache holds is bounded: a session's size (``SESSION_MAX_BYTES``), the sessions one
principal keeps open (``SESSIONS_PER_PRINCIPAL``; anonymous callers counted per client address),
and the sessions opened within one ``SESSION_TTL_SECONDS`` (``SESSIONS_MAX``). Past a bound a new
session is refused; none already open is evicted (check ``django_mcp.W014`` flags a cache that
would evict them itself).

Both caps are counted with the cache's atomic ``incr`` (exact under concurrency on Redis, Memcached
and the local-memory cache): a window of ``SESSION_TTL_SECONDS`` counts the sessions opened in it,
a refused opening counts nowhere, and ``DELETE`` gives its place back. A principal's cap also holds
over time: its list of open sessions, renewed ones included, is checked too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

from ..conf import get_settings
from ..protocol.errors import INTERNAL_ERROR, McpJsonRpcError, invalid_params
from ..server.outages import throttle, unavailable
from ..shared_caches import shared_cache

_PREFIX = "django_mcp.session."
_OF_PRINCIPAL = "django_mcp.sessions.of."  # the ids of the sessions one principal opened
_OPENED = "django_mcp.sessions.opened."  # how many sessions were opened in one TTL-long window
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
    counted_in: list[str] = field(default_factory=list)
    """The counters its opening took a place in (given back when it ends)."""

    @property
    def group(self) -> str:
        """The Channels group of this session's GET stream (control messages, resource subscriptions)."""
        return "django_mcp.session." + hashlib.sha256(self.id.encode()).hexdigest()[:48]


def _cache() -> Any:
    return shared_cache(get_settings().SESSION_CACHE)


async def _areach(operation: Awaitable[T]) -> T:
    """Run a cache operation; the store unreachable is a 503 for the request (logged once a minute)."""
    try:
        result = await operation
    except Exception as exc:  # a cache backend may fail in any way (Redis down, a full disk …)
        answer = "Sessions are unavailable (the session store cannot be reached): try again shortly"
        raise unavailable(logger, "session-store", "Session store", exc, answer) from None
    if throttle.failing("session-store"):
        throttle.recovered(logger, "session-store", "Session store reachable again")
    return result


async def acreate(
    owner: str, protocol_version: str, capabilities: dict[str, Any], client_info: Any, limit_key: str | None = None
) -> McpSession:
    """A new session with an unguessable id, stored for ``SESSION_TTL_SECONDS``.

    ``limit_key`` names whom ``SESSIONS_PER_PRINCIPAL`` counts (default: ``owner``). Past a bound
    the session is refused: 429 for the principal's, 503 for the server's, -32602 for its size.
    """
    session = McpSession(
        id=secrets.token_urlsafe(32),
        owner=owner,
        protocol_version=protocol_version,
        capabilities=capabilities,
        client_info=client_info if isinstance(client_info, dict) else None,
    )
    _check_size(session)
    settings = get_settings()
    ttl = settings.SESSION_TTL_SECONDS
    # The caller's own cap first: an opening it refuses must not count against everyone's.
    try:
        if settings.SESSIONS_PER_PRINCIPAL is not None:
            index_key = _OF_PRINCIPAL + hashlib.sha256((limit_key or owner).encode()).hexdigest()
            limit = settings.SESSIONS_PER_PRINCIPAL
            session.counted_in.append(await _atake_place(index_key, limit, ttl, _too_many_of_yours))
            await _aadd_to_principal(index_key, session.id, limit)
        if settings.SESSIONS_MAX is not None:
            session.counted_in.append(await _atake_place(_OPENED, settings.SESSIONS_MAX, ttl, _server_full))
        await asave(session)
    except BaseException:
        await _agive_back(session.counted_in)
        raise
    return session


async def asave(session: McpSession) -> None:
    """Store (and renew) the session; -32602 if it grew past ``SESSION_MAX_BYTES``."""
    _check_size(session)
    await _areach(_cache().aset(_PREFIX + session.id, asdict(session), get_settings().SESSION_TTL_SECONDS))


def _check_size(session: McpSession) -> None:
    size = len(json.dumps(asdict(session), default=str))
    limit = get_settings().SESSION_MAX_BYTES
    if size > limit:
        raise invalid_params(
            f"The session would keep {size} bytes (its capabilities, clientInfo and subscriptions); "
            f"this server keeps at most {limit}"
        )


async def _atake_place(key: str, limit: int, ttl: int, refusal: Callable[[int, int], McpJsonRpcError]) -> str:
    """Count one opening on ``key``'s counter of this TTL-long window (atomically); refuse past ``limit`` over
    this window and the last, counting nothing then. The counter's key, to give the place back."""
    window = int(time.time()) // ttl
    cache = _cache()
    counter = f"{key}.{window}"
    await _areach(cache.aadd(counter, 0, 2 * ttl))
    # The sync incr and decr: Django's aincr/adecr are a get and a set, not atomic (Redis' INCR and the
    # local-memory cache's locked incr are).
    opened = await _areach(sync_to_async(cache.incr, thread_sensitive=False)(counter))
    before = await _areach(cache.aget(f"{key}.{window - 1}", 0))
    if opened + before > limit:
        await _areach(sync_to_async(cache.decr, thread_sensitive=False)(counter))
        raise refusal(limit, ttl)
    return counter


async def _agive_back(counters: list[str]) -> None:
    """Give back the places an opening took (a session ended, or one refused after a first cap)."""
    decrement = sync_to_async(_cache().decr, thread_sensitive=False)
    for counter in counters:
        try:
            await decrement(counter)
        except ValueError:  # the window's counter expired meanwhile: nothing left to give back
            pass
        except Exception as exc:  # the store down: the place comes back with the next window
            throttle.log(logger, logging.WARNING, "session-store", "Session store unavailable: %s", exc)


def _too_many_of_yours(limit: int, ttl: int) -> McpJsonRpcError:
    return McpJsonRpcError(
        INTERNAL_ERROR,
        f"Too many sessions: at most {limit} open here per caller; end one with DELETE or let one expire",
        http_status=429,
    )


def _server_full(limit: int, ttl: int) -> McpJsonRpcError:
    return McpJsonRpcError(
        INTERNAL_ERROR,
        f"This server keeps at most {limit} sessions opened within {ttl} s: try again later",
        http_status=503,
    )


async def _aadd_to_principal(index_key: str, session_id: str, limit: int) -> None:
    """Add the session to its principal's list, dropping the ended and expired ones; refuse past ``limit``.

    The list bounds the sessions a principal keeps open over time (renewed sessions outlive their window);
    the counters above keep the bound exact under concurrency.
    """
    cache = _cache()
    ids: list[str] = await _areach(cache.aget(index_key, [])) or []
    live = await _areach(cache.aget_many([_PREFIX + i for i in ids])) if ids else {}
    open_ids = [i for i in ids if _PREFIX + i in live]
    if len(open_ids) >= limit:
        raise _too_many_of_yours(limit, get_settings().SESSION_TTL_SECONDS)
    await _areach(cache.aset(index_key, [*open_ids, session_id], get_settings().SESSION_TTL_SECONDS))


async def aload(session_id: str, owner: str) -> McpSession | None:
    """The session if it exists, has not expired and belongs to ``owner``; else None (all read the same)."""
    if not session_id or len(session_id) > 128:
        return None
    raw = await _areach(_cache().aget(_PREFIX + session_id))
    if not isinstance(raw, dict):
        return None
    try:
        session = McpSession(**raw)
    except TypeError:
        return None
    if not secrets.compare_digest(session.owner, owner):
        return None
    await _areach(_cache().atouch(_PREFIX + session_id, get_settings().SESSION_TTL_SECONDS))
    return session


async def adelete(session: McpSession) -> None:
    """End the session: later requests with its id get 404 and the client initializes again."""
    await _areach(_cache().adelete(_PREFIX + session.id))
    await _agive_back(session.counted_in)

"""The handshake era (2025-11-25 and earlier): which era a request belongs to, and version negotiation.

Pure functions; the session store and the HTTP front live in the Django glue
(``django_mcp/handshake.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from .errors import INVALID_REQUEST, McpJsonRpcError
from .jsonrpc import META_PROTOCOL_VERSION

HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The handshake-era revisions this server speaks, newest first."""

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
DEFAULT_WITHOUT_HEADER = "2025-03-26"
"""What a handshake-era request without ``MCP-Protocol-Version`` speaks (the 2025-06-18 rule)."""

# Methods that exist only in one era.
HANDSHAKE_ONLY_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
MODERN_ONLY_METHODS = frozenset({"server/discover", "subscriptions/listen"})


def is_handshake_era(obj: Any, headers: Mapping[str, str]) -> bool:
    """Whether a decoded POST body belongs to the handshake era.

    The body decides first: a request whose ``params._meta`` carries the
    modern protocol version is modern. Otherwise an ``initialize``, an
    ``Mcp-Session-Id``, a handshake-era ``MCP-Protocol-Version``, or a JSON-RPC
    response (a client answering a server request) make it handshake-era.
    """
    if not isinstance(obj, dict):
        return SESSION_HEADER in headers
    params = obj.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
        return False
    if obj.get("method") == "initialize" or SESSION_HEADER in headers:
        return True
    return headers.get(VERSION_HEADER, "").strip() in HANDSHAKE_VERSIONS


def negotiate(requested: Any, served: Collection[str]) -> str:
    """The revision to answer ``initialize`` with: the one asked for if served, else the newest served."""
    if isinstance(requested, str) and requested in served:
        return requested
    return next(v for v in HANDSHAKE_VERSIONS if v in served)


def check_version_header(headers: Mapping[str, str], negotiated: str, served: Collection[str]) -> str:
    """The revision a session request speaks; 400 for a header naming a revision this server does not serve."""
    raw = headers.get(VERSION_HEADER)
    if raw is None:
        return negotiated if negotiated in ("2025-03-26", "2024-11-05") else DEFAULT_WITHOUT_HEADER
    version = raw.strip()
    if version not in served:
        raise McpJsonRpcError(
            INVALID_REQUEST,
            f"Bad Request: unsupported MCP-Protocol-Version {version!r}; this server speaks {', '.join(served)}",
            {"supported": list(served), "requested": version},
            http_status=400,
        )
    return version

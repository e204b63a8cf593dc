"""Who may see and call what: Django permissions and OAuth scopes, the same rule for listing and calling.

The rule: a tool (prompt, resource) whose Django permissions the user lacks is not listed, and
calling (getting, reading) it answers exactly as for one that does not exist (nothing more is
revealed). A tool whose OAuth scopes the token lacks is listed, and calling it answers 403
``insufficient_scope`` naming every scope the call needs, so the client can step up once. Scopes
bind bearer tokens only: a principal with no scopes (a session user, another ninja auth) is
judged by permissions alone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from asgiref.sync import sync_to_async

from ..pooled import gives_back_pooled_connections
from .request import McpRequest

logger = logging.getLogger("django_mcp")


class _Guarded(Protocol):
    @property
    def permissions(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=_Guarded)


async def apermitted(request: McpRequest, permissions: Iterable[str]) -> bool:
    """Whether the request's user holds every one of ``permissions`` (none asked: anyone)."""
    wanted = list(permissions)
    if not wanted:
        return True
    user: Any = request.user
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    # The sync has_perms, in the request's thread: Django's async path skips backends without ahas_perm
    # (and BaseBackend.ahas_perm ignores an overridden has_perm), as with rules-style backends.
    return bool(await sync_to_async(gives_back_pooled_connections(user.has_perms))(wanted))


async def avisible(request: McpRequest, items: list[T]) -> list[T]:
    """The items (tools, prompts, resources) whose ``permissions`` the request's user holds."""
    return [item for item in items if not item.permissions or await apermitted(request, item.permissions)]


def require_scopes(request: McpRequest, scopes: Iterable[str]) -> None:
    """Raise the principal's 403 ``insufficient_scope`` unless its token carries every one of ``scopes``."""
    wanted = frozenset(scopes)
    if not wanted:
        return
    auth = request.auth
    held = getattr(auth, "scopes", None)
    if not isinstance(held, frozenset | set):
        return  # not a token: scopes do not apply
    if not wanted <= held:
        raise auth.insufficient_scope(sorted(wanted))


def log_refusal(request: McpRequest, kind: str, name: str) -> None:
    # The caller is told nothing; the operator can learn why from the log.
    logger.info("Refused %s %r to %s: it lacks a required Django permission", kind, name, request.principal_key)

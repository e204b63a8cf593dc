"""What a verified bearer token says, and the interface every token verifier implements."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..token_errors import InvalidToken, TokenServiceUnavailable

if TYPE_CHECKING:
    from django.http import HttpRequest

__all__ = ["InvalidToken", "TokenServiceUnavailable", "TokenVerifier", "VerifiedToken"]


@dataclass(frozen=True, eq=False)
class VerifiedToken:
    """A bearer token that a :class:`TokenVerifier` accepted: whose it is and what it allows.

    It is what ``request.auth`` holds on an endpoint guarded by :class:`~django_mcp.auth.BearerAuth`
    (the token's user is ``request.user``). The token itself is never kept.
    """

    user: Any
    """The Django user the token acts for (a token that acts for nobody is refused)."""
    scopes: frozenset[str]
    audiences: tuple[str, ...] | None
    """The resources (RFC 8707) the token was issued for; None when the verifier checked the audience
    itself (a JWT's ``aud``) or the token serves every endpoint of this project (a personal token)."""
    expires_at: datetime | None = None
    client_id: str | None = None
    issuer: str = "django"
    """Who issued it: ``"django"`` (this project), or a JWT issuer."""
    challenge: Callable[[Iterable[str]], Exception] | None = field(default=None, repr=False)
    """Builds the 403 ``insufficient_scope`` error for this request (set by ``BearerAuth``)."""

    @property
    def principal_key(self) -> str:
        """Tasks, sessions and listen streams bind to the token's user, whichever token it presents."""
        return f"{self.user._meta.label_lower}:{self.user.pk}"

    def insufficient_scope(self, needed: Iterable[str]) -> Exception:
        """The error that asks the client to step up to ``needed`` (every scope the call needs)."""
        if self.challenge is None:
            raise RuntimeError("This token was not verified by a BearerAuth: it cannot challenge")
        return self.challenge(needed)


@runtime_checkable
class TokenVerifier(Protocol):
    """Checks a bearer token; ``BearerAuth`` asks each of its verifiers in turn.

    ``verify`` runs in a worker thread (it may query the database or fetch keys). It returns
    None when the token is not of its kind (the next verifier is asked), a :class:`VerifiedToken`
    when it is good, and raises :class:`InvalidToken` when it is of its kind and not good.
    ``BearerAuth`` then checks the audience, the user and the endpoint's scopes.
    """

    def verify(self, token: str, request: HttpRequest) -> VerifiedToken | None: ...

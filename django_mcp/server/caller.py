"""Who is asking: worked out once, from what the endpoint's auth and Django's middleware set on the request."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.http import HttpRequest


@dataclass(frozen=True)
class Caller:
    """The caller of one HTTP request, as every per-caller rule names it."""

    key: str
    """``auth:<principal>`` (what the endpoint's ninja ``auth`` returned), else ``user:<pk>`` (the
    authenticated Django user), else ``anonymous``."""
    limit_key: str
    """Whom per-caller limits count (listen streams, sessions, rates): :attr:`key`, or for an anonymous
    caller its client address, so that one anonymous client cannot lock out the rest. Never a binding:
    every anonymous caller still sees the same tasks."""
    acting_for: Any
    """The object the caller is or acts for: the auth principal's ``user`` (a verified bearer token's),
    else the principal itself, else the authenticated Django user; None for an anonymous caller."""

    @property
    def is_principal(self) -> bool:
        """Whether the endpoint's auth named the caller (rather than Django's session user)."""
        return self.key.startswith("auth:")


def caller_of(http_request: HttpRequest) -> Caller:
    """The :class:`Caller` of ``http_request``.

    A principal that names nobody in particular (``True``, as some auths return) does not count: it
    would put every caller in one bucket.
    """
    auth = getattr(http_request, "auth", None)
    named = principal_of(auth)
    if named is not None:
        key, acting_for = f"auth:{named}", getattr(auth, "user", auth)
    else:
        user = getattr(http_request, "user", None)
        if user is not None and getattr(user, "is_authenticated", False):
            key, acting_for = f"user:{user.pk}", user
        else:
            key, acting_for = "anonymous", None
    if key == "anonymous":
        limit_key = f"anonymous@{getattr(http_request, 'META', {}).get('REMOTE_ADDR', '')}"
    else:
        limit_key = key
    return Caller(key, limit_key, acting_for)


def principal_of(value: Any) -> str | None:
    """A stable name for an authenticated principal, or None when it names nobody in particular.

    Strings, integers and UUIDs name themselves; a model instance is named by
    its model and primary key. ``True`` (as some auths return) names nobody.
    Anything else must say who it is with a ``principal_key`` attribute:
    naming it by ``repr()`` could be a memory address, different on every request.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str | int | uuid.UUID):
        return f"{type(value).__name__}:{value}"
    key = getattr(value, "principal_key", None)
    if isinstance(key, str) and key:
        return key
    meta, pk = getattr(value, "_meta", None), getattr(value, "pk", None)
    if meta is not None and pk is not None:
        return f"{meta.label_lower}:{pk}"
    raise TypeError(
        f"Cannot name the principal {type(value).__qualname__}: return a str, an int, a model instance, "
        "or an object with a `principal_key` string from the endpoint's auth"
    )


def principal_digest(namespace: str, principal_key: str) -> str:
    """A principal of a server as stored and counted: a digest (a principal may be a secret, e.g. a token).

    Task bindings, handshake-era session owners and the listen limits all name a caller this way, so a
    client's POST listen streams and its GET streams share one limit.
    """
    return hashlib.sha256(f"{namespace}\0{principal_key}".encode()).hexdigest()

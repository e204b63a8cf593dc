"""Verified tokens, remembered for a few seconds per process: a request with a known token then needs no
thread hop and no query. Revoking a token or changing its user clears this process's memory at once;
other processes forget within ``OAUTH_TOKEN_CACHE_SECONDS``."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import time
from collections import OrderedDict
from typing import Any

from .tokens import VerifiedToken

_MAX_ENTRIES = 10_000
_remembered: OrderedDict[str, tuple[float, VerifiedToken]] = OrderedDict()
_PER_USER_CACHES = ("_perm_cache", "_user_perm_cache", "_group_perm_cache")


def key_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()  # never the token itself


def recall(key: str) -> VerifiedToken | None:
    """The token verified under ``key`` if still fresh (shared: give a request :func:`own_user` of it)."""
    entry = _remembered.get(key)
    if entry is None:
        return None
    until, verified = entry
    if time.monotonic() >= until:
        _remembered.pop(key, None)
        return None
    return verified


def own_user(user: Any) -> Any:
    """A copy of ``user`` for one request: a request may change its user or fill its permission caches,
    and must never touch another request's instance. Built by hand: ``copy.copy()`` pickles a model
    instance's state, several times slower."""
    clone = object.__new__(type(user))
    clone.__dict__.update({k: v for k, v in user.__dict__.items() if k not in _PER_USER_CACHES})
    clone._state = copy.copy(user._state)  # its own cache of related objects
    return clone


def remember(key: str, verified: VerifiedToken, seconds: float) -> None:
    """Keep ``verified`` for ``seconds``, never past the token's own expiry."""
    if seconds <= 0:
        return
    if verified.expires_at is not None:
        from django.utils import timezone

        seconds = min(seconds, (verified.expires_at - timezone.now()).total_seconds())
    if seconds > 0:
        _remembered[key] = (time.monotonic() + seconds, dataclasses.replace(verified, user=own_user(verified.user)))
        _remembered.move_to_end(key)
        while len(_remembered) > _MAX_ENTRIES:
            _remembered.popitem(last=False)


def forget_all(*args: Any, **kwargs: Any) -> None:
    """A token was revoked or a user changed: this process verifies every token again."""
    _remembered.clear()


def watch() -> None:
    """Forget on every save or delete of a personal token, a user, or django-oauth-toolkit's tokens and
    applications (revoking deletes them), and on settings changes (tests)."""
    from django.apps import apps
    from django.conf import settings
    from django.core.signals import setting_changed
    from django.db.models.signals import post_delete, post_save

    models = [apps.get_model("django_mcp", "PersonalToken"), apps.get_model(settings.AUTH_USER_MODEL)]
    if apps.is_installed("oauth2_provider"):
        from oauth2_provider.models import get_access_token_model, get_application_model

        models += [get_access_token_model(), get_application_model()]
    for model in models:
        for signal in (post_save, post_delete):
            signal.connect(forget_all, sender=model, dispatch_uid=f"django_mcp.auth.forget.{model._meta.label}")
    setting_changed.connect(forget_all, dispatch_uid="django_mcp.auth.forget.settings")

"""Verified tokens, remembered for a few seconds per process: a request with a known token then needs no
thread hop and no query. Revoking a token or changing its user clears this process's memory at once;
other processes forget within ``OAUTH_TOKEN_CACHE_SECONDS``."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from .tokens import VerifiedToken

_MAX_ENTRIES = 10_000
_remembered: OrderedDict[str, tuple[float, VerifiedToken]] = OrderedDict()
_lock = threading.Lock()  # WSGI threads and signal receivers in worker threads touch it too
_generation = 0  # bumped by forget_all: a verification that began before it is not remembered
_PER_USER_CACHES = ("_perm_cache", "_user_perm_cache", "_group_perm_cache")


def key_of(token: str, *scope: str) -> str:
    """The cache key of ``token`` where ``scope`` (the endpoint and its auth) accepts it; never the token."""
    return hashlib.sha256("\0".join((token, *scope)).encode()).hexdigest()


def generation() -> int:
    """Read before verifying; :func:`remember` drops a result verified before a :func:`forget_all`."""
    return _generation


def recall(key: str) -> VerifiedToken | None:
    """The token verified under ``key`` if still fresh (shared: give a request :func:`own_user` of it)."""
    entry = _remembered.get(key)
    if entry is None:
        return None
    until, verified = entry
    if time.monotonic() >= until:
        with _lock:
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


def remember(key: str, verified: VerifiedToken, seconds: float, since: int) -> None:
    """Keep ``verified`` for ``seconds``, never past the token's own expiry, unless something was revoked or
    changed since generation ``since`` (its verification may have read the row before that)."""
    if seconds <= 0:
        return
    expires = verified.expires_at
    if expires is not None:
        if timezone.is_naive(expires):  # USE_TZ = False: the project's local time
            expires = timezone.make_aware(expires)
        seconds = min(seconds, (expires - datetime.now(UTC)).total_seconds())
    if seconds <= 0:
        return
    entry = (time.monotonic() + seconds, dataclasses.replace(verified, user=own_user(verified.user)))
    with _lock:
        if since != _generation:
            return
        _remembered[key] = entry
        _remembered.move_to_end(key)
        while len(_remembered) > _MAX_ENTRIES:
            _remembered.popitem(last=False)


def forget_all(*args: Any, **kwargs: Any) -> None:
    """A token was revoked or a user changed: this process verifies every token again."""
    global _generation
    with _lock:
        _generation += 1
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

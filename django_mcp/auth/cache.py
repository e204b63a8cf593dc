"""Verified tokens, remembered for a few seconds per process: a request with a known token then needs no
query, and no thread hop but the one reading the revocation mark, at most twice a second.

Revoking a token or changing its user clears this process's memory at once and, once committed, writes a
new revocation mark to the shared cache (``DJANGO_MCP["SESSION_CACHE"]``). Every process reads the mark at
most every ``REVOCATION_CHECK_SECONDS`` while it checks tokens, and forgets them all when it moved. A mark
that cannot be read forgets too: no token outlives a doubt."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import logging
import threading
import time
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.signals import setting_changed
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from ..conf import get_settings
from ..server.outages import throttle
from ..shared_caches import shared_cache
from .tokens import VerifiedToken

logger = logging.getLogger("django_mcp.auth")

_MAX_ENTRIES = 10_000
_remembered: OrderedDict[str, tuple[float, VerifiedToken]] = OrderedDict()
_lock = threading.Lock()  # WSGI threads and signal receivers in worker threads touch it too
_generation = 0  # bumped by forget_all: a verification that began before it is not remembered
_PER_USER_CACHES = ("_perm_cache", "_user_perm_cache", "_group_perm_cache")

REVOCATION_CHECK_SECONDS = 0.5
"""How often a process that remembers tokens reads the shared revocation mark: a token revoked anywhere is
refused everywhere at most this long after its revocation commits (plus one cache round trip)."""
_MARK_KEY = "django_mcp:auth:revocation-mark"
_mark_seen: object = object()  # none read yet: the first read forgets (nothing, or what came before it)
_mark_read_at = float("-inf")


def key_of(token: str, *scope: str) -> str:
    """The cache key of ``token`` where ``scope`` (the endpoint and its auth) accepts it; never the token."""
    return hashlib.sha256("\0".join((token, *scope)).encode()).hexdigest()


def generation() -> int:
    """Read before verifying; :func:`remember` drops a result verified before a :func:`forget_all`."""
    return _generation


async def arecall(key: str) -> VerifiedToken | None:
    """:func:`recall`, after reading the shared revocation mark if it is due."""
    # A token remembered after a read of the mark is forgotten by the next read that finds it moved.
    if time.monotonic() - _mark_read_at >= REVOCATION_CHECK_SECONDS:
        await _aread_mark()
    return recall(key)


async def _aread_mark() -> None:
    global _mark_seen, _mark_read_at
    _mark_read_at = time.monotonic()  # before the read: concurrent requests do not read it again meanwhile
    try:
        mark = await shared_cache(get_settings().SESSION_CACHE).aget(_MARK_KEY)
    except Exception as exc:  # a cache backend may fail in any way: verify every token afresh
        throttle.log(logger, logging.WARNING, _MARK_KEY, "Revocation mark unreadable, verifying tokens afresh: %r", exc)
        forget_all()
        _mark_read_at = time.monotonic()  # not again before the interval: the next tokens are fresh
        return
    if throttle.failing(_MARK_KEY):
        throttle.recovered(logger, _MARK_KEY, "Revocation mark readable again")
    if mark != _mark_seen:
        forget_all()
        _mark_seen, _mark_read_at = mark, time.monotonic()


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
    """This process verifies every token again (and reads the revocation mark before it next trusts one)."""
    global _generation, _mark_read_at
    with _lock:
        _generation += 1
        _remembered.clear()
        _mark_read_at = float("-inf")


def revoked(*args: Any, using: str | None = None, created: bool = False, **kwargs: Any) -> None:
    """A token was revoked or a user changed: this process forgets at once, and every process within
    ``REVOCATION_CHECK_SECONDS`` of the commit (a signal receiver; ``using`` is the database written). A row
    just created changes nothing another process remembers: only this one forgets (as it always did)."""
    forget_all()
    if not created:
        transaction.on_commit(_announce, using=using)


def _announce() -> None:
    forget_all()  # a verification in this process may have read the row before the commit
    try:
        shared_cache(get_settings().SESSION_CACHE).set(_MARK_KEY, uuid.uuid4().hex, None)
    except Exception:  # the revocation is committed; only other processes learn it late
        logger.exception("The revocation mark could not be written: other processes forget the token late")


def watch() -> None:
    """Forget on every save or delete of a personal token, a user, or django-oauth-toolkit's tokens and
    applications (revoking deletes them), and on settings changes (tests)."""
    models = [apps.get_model("django_mcp", "PersonalToken"), apps.get_model(settings.AUTH_USER_MODEL)]
    if apps.is_installed("oauth2_provider"):
        # Here: the oauth extra (django-oauth-toolkit) is optional.
        from oauth2_provider.models import get_access_token_model, get_application_model

        models += [get_access_token_model(), get_application_model()]
    for model in models:
        for signal in (post_save, post_delete):
            signal.connect(revoked, sender=model, dispatch_uid=f"django_mcp.auth.forget.{model._meta.label}")
    setting_changed.connect(forget_all, dispatch_uid="django_mcp.auth.forget.settings")

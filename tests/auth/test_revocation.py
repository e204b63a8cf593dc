"""A revoked token is refused everywhere soon after: this process at once, every other process once it reads the
shared revocation mark (``tests/live/test_revocation_everywhere.py`` runs two processes)."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.utils import timezone

from django_mcp.auth import cache
from django_mcp.models import PersonalToken
from django_mcp.shared_caches import shared_cache
from tests.wire import post, request_body

pytestmark = pytest.mark.django_db(transaction=True)  # the endpoint reads tokens in a thread of its own


async def _status(async_client, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return (await post(async_client, request_body("tools/list"), path="/mcp-oauth", headers=headers)).status_code


@pytest.fixture
def every_request_reads_the_mark(monkeypatch):
    monkeypatch.setattr(cache, "REVOCATION_CHECK_SECONDS", 0)


@pytest.fixture
def issued():
    return PersonalToken.issue(User.objects.create_user("rita"), "laptop")


def _revoked_elsewhere(row: PersonalToken) -> None:
    """What another process does: the row changes (no signal here) and the mark moves."""
    PersonalToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    caches["default"].set(cache._MARK_KEY, "another process's mark", None)


async def test_a_token_revoked_in_another_process_is_refused_once_the_mark_is_read(
    async_client, issued, every_request_reads_the_mark
):
    row, token = issued
    assert await _status(async_client, token) == 200  # now remembered
    await _revoked_elsewhere_async(row)
    assert await _status(async_client, token) == 401


async def test_without_a_new_mark_a_remembered_token_needs_no_query(async_client, issued, every_request_reads_the_mark):
    row, token = issued
    assert await _status(async_client, token) == 200
    with mock.patch("django_mcp.auth.bearer.BearerAuth.verify", side_effect=AssertionError("verified again")):
        assert await _status(async_client, token) == 200


async def test_an_unreadable_mark_forgets_every_token(async_client, issued, every_request_reads_the_mark):
    row, token = issued
    assert await _status(async_client, token) == 200
    with mock.patch.object(shared_cache("default"), "aget", side_effect=ConnectionError("cache down")):
        await _revoked_elsewhere_async(row, move_mark=False)
        assert await _status(async_client, token) == 401  # verified afresh: the row says revoked


def test_a_revocation_moves_the_mark_once_committed(issued):
    from django.db import transaction

    row, _ = issued
    before = caches["default"].get(cache._MARK_KEY)
    with transaction.atomic():
        row.revoke()
        assert caches["default"].get(cache._MARK_KEY) == before  # not before the commit: others would re-read it
    assert caches["default"].get(cache._MARK_KEY) != before


def test_the_admins_revoke_action_moves_the_mark(admin_client, issued):
    row, _ = issued
    before = caches["default"].get(cache._MARK_KEY)
    admin_client.post("/admin/django_mcp/personaltoken/", {"action": "revoke", "_selected_action": [row.pk]})
    assert caches["default"].get(cache._MARK_KEY) != before


async def _revoked_elsewhere_async(row: PersonalToken, move_mark: bool = True) -> None:
    from asgiref.sync import sync_to_async

    if move_mark:
        await sync_to_async(_revoked_elsewhere)(row)
    else:
        await PersonalToken.objects.filter(pk=row.pk).aupdate(revoked_at=timezone.now())


# -- what is remembered, and for how long -----------------------------------------------------------


def _verified(expires_at=None):
    from django_mcp.auth.tokens import VerifiedToken

    return VerifiedToken(user=User(pk=7, username="ada"), scopes=frozenset(), audiences=None, expires_at=expires_at)


def test_a_remembered_token_is_forgotten_once_its_time_is_up(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(cache.time, "monotonic", lambda: now[0])
    cache.remember("k", _verified(), 10, cache.generation())
    assert cache.recall("k") is not None
    now[0] += 10
    assert cache.recall("k") is None and "k" not in cache._remembered


@pytest.mark.parametrize("use_tz", [True, False])
def test_never_past_the_token_s_own_expiry(settings, use_tz):
    settings.USE_TZ = use_tz
    soon = timezone.now() + timedelta(seconds=2)  # naive, in the project's time zone, without USE_TZ
    expiring = _verified(expires_at=soon)
    cache.remember("soon", expiring, 3600, cache.generation())
    until, _ = cache._remembered["soon"]
    assert until - cache.time.monotonic() <= 2.5  # its expiry, not the hour asked
    cache.remember("gone", _verified(expires_at=timezone.now() - timedelta(seconds=1)), 3600, 0)
    assert cache.recall("gone") is None  # already expired: never remembered


def test_a_mark_that_cannot_be_written_is_logged_and_the_revocation_stands(caplog):
    class Down:
        def set(self, *args, **kwargs):
            raise ConnectionError("redis went away")

    cache.remember("k", _verified(), 10, cache.generation())
    with mock.patch.object(cache, "shared_cache", lambda alias: Down()):
        cache._announce()
    assert cache.recall("k") is None  # this process forgot at once
    assert "The revocation mark could not be written: other processes forget the token late" in caplog.text

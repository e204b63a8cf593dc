"""A request thread gives its pooled connections back once a token or a permission was checked (pooled.py).

On PostgreSQL with Django's pool (the suite's PostgreSQL settings); elsewhere nothing is pooled and nothing
is given back. tests/live/test_pooled_connections.py shows what holding them did to a server.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.db import connection, transaction

from django_mcp.pooled import gives_back_pooled_connections
from django_mcp.server.access import apermitted

pytestmark = pytest.mark.django_db(transaction=True)

pooled = pytest.mark.skipif(
    not (connection.settings_dict.get("OPTIONS") or {}).get("pool"), reason="needs Django's connection pool"
)


def _count_users() -> int:
    return User.objects.count()


@pooled
def test_a_wrapped_function_gives_its_connection_back_and_a_plain_one_keeps_it():
    _count_users()
    assert connection.connection is not None  # what a request's thread did before
    connection.close()
    assert gives_back_pooled_connections(_count_users)() == 0
    assert connection.connection is None


@pooled
def test_a_connection_inside_a_transaction_is_kept():
    with transaction.atomic():
        gives_back_pooled_connections(_count_users)()
        assert connection.connection is not None


@pooled
def test_the_answer_and_exceptions_pass_through_and_the_connection_goes_back_either_way():
    def fails() -> None:
        _count_users()
        raise LookupError("no such thing")

    with pytest.raises(LookupError, match="no such thing"):
        gives_back_pooled_connections(fails)()
    assert connection.connection is None


def test_without_a_pool_the_connection_stays():
    if (connection.settings_dict.get("OPTIONS") or {}).get("pool"):
        pytest.skip("the suite's database is pooled")
    gives_back_pooled_connections(_count_users)()
    assert connection.connection is not None


@pooled
async def test_a_permission_check_gives_the_request_threads_connection_back():
    def alice() -> User:
        user = User.objects.create_user("alice")
        user.user_permissions.add(Permission.objects.get(codename="view_user"))
        return User.objects.get(pk=user.pk)  # a fresh object: no permission cache yet

    user = await sync_to_async(alice)()
    await sync_to_async(lambda: connection.close())()
    assert await apermitted(SimpleNamespace(user=user), ["auth.view_user"])  # type: ignore[arg-type]
    assert await sync_to_async(lambda: connection.connection)() is None

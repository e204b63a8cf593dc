"""Users and books for the publishing tests, and MCP clients signed in as each user."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient

from django_mcp.testing import McpClient
from tests.publishapp.models import Author, Book

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people(db: Any) -> dict[str, User]:
    """``reader`` may view books; ``stranger`` may not; ``staff`` is staff and may view them."""
    view_book = Permission.objects.get(codename="view_book", content_type__app_label="publishapp")
    reader = User.objects.create_user("reader", password="x")
    reader.user_permissions.add(view_book)
    staff = User.objects.create_user("staff", password="x", is_staff=True)
    staff.user_permissions.add(view_book)
    stranger = User.objects.create_user("stranger", password="x")
    return {"reader": reader, "staff": staff, "stranger": stranger}


@pytest.fixture
def shelf(people: dict[str, User]) -> dict[str, Book]:
    """Six books: four without an owner, one the reader's, one the staff member's (with a secret note)."""
    ada = Author.objects.create(name="Ada", email="ada@example.com", user=people["staff"])
    books = {
        "dune": Book.objects.create(title="Dune", year=1965, price=Decimal("9.50"), author=ada),
        "emma": Book.objects.create(title="Emma", year=1815, price=Decimal("4.00"), published_on=date(1815, 12, 23)),
        "ulysses": Book.objects.create(title="Ulysses", year=1922, price=Decimal("12.00")),
        "neuromancer": Book.objects.create(title="Neuromancer", year=1984, price=Decimal("8.00")),
        "mine": Book.objects.create(title="Reader's Notes", year=2020, owner=people["reader"]),
        "theirs": Book.objects.create(title="Staff Diary", year=2021, owner=people["staff"], secret_note="s3cret"),
    }
    return books


@pytest.fixture
def signed_in(people: dict[str, User]) -> Callable[..., Any]:
    """``async with signed_in("reader") as mcp``: an MCP client of ``/mcp-publish`` as that user (None: anonymous)."""

    @asynccontextmanager
    async def connect(username: str | None, **options: Any) -> AsyncIterator[McpClient]:
        client = AsyncClient()
        if username is not None:
            await client.aforce_login(people[username])
        async with McpClient("/mcp-publish", client=client, **options) as mcp:
            yield mcp

    return connect

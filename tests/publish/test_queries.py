"""``publish_query``: a model query as a tool, and everything it refuses (over the wire, in both eras)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import models

from django_mcp import DefinitionError, ToolRegistry, publish_query
from django_mcp.publish.queries import _json_type
from django_mcp.testing import McpError
from tests.publishapp.models import Author, Book

pytestmark = pytest.mark.django_db(transaction=True)


def titles(result: dict[str, Any]) -> list[str]:
    return [row["title"] for row in result["structuredContent"]["results"]]


async def test_a_reader_finds_public_books_and_their_own_with_only_the_published_fields(shelf, signed_in):
    async with signed_in("reader") as mcp:
        result = await mcp.acall_tool("find_books", {"order_by": ["year"], "limit": 5})
    rows = result["structuredContent"]["results"]
    assert [row["title"] for row in rows] == ["Emma", "Ulysses", "Dune", "Neuromancer", "Reader's Notes"]
    assert set(rows[0]) == {"id", "title", "year", "price", "published_on", "author__name"}
    assert rows[0]["price"] == "4.00" and rows[0]["published_on"] == "1815-12-23"
    assert rows[2]["author__name"] == "Ada" and rows[1]["author__name"] is None
    assert "Staff Diary" not in str(result)  # narrowed away: another user's book
    assert "s3cret" not in str(result) and "ada@example.com" not in str(result)


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_filters_ordering_and_pages(shelf, signed_in, era):
    async with signed_in("reader", protocol_version=era) as mcp:
        older = await mcp.acall_tool("find_books", {"filter": {"year__lte": 1965}, "order_by": ["-year"]})
        assert titles(older) == ["Dune", "Ulysses"]  # default_results=2
        assert older["structuredContent"]["hasMore"] is True
        assert older["structuredContent"]["nextOffset"] == 2
        rest = await mcp.acall_tool("find_books", {"filter": {"year__lte": 1965}, "order_by": ["-year"], "offset": 2})
        assert titles(rest) == ["Emma"]
        assert rest["structuredContent"] == {**rest["structuredContent"], "hasMore": False, "nextOffset": None}
        both = await mcp.acall_tool(
            "find_books", {"filter": {"title__icontains": "u", "year__range": [1900, 1970]}, "order_by": ["title"]}
        )
        assert titles(both) == ["Dune", "Ulysses"]
        by_author = await mcp.acall_tool("find_books", {"filter": {"author__name": "Ada"}})
        assert titles(by_author) == ["Dune"]
        dated = await mcp.acall_tool("find_books", {"filter": {"published_on__isnull": False}})
        assert titles(dated) == ["Emma"]
        listed = {tool["name"]: tool for tool in await mcp.alist_tools()}
    schema = listed["find_books"]["inputSchema"]
    assert schema["properties"]["filter"]["additionalProperties"] is False
    assert listed["find_books"]["annotations"]["readOnlyHint"] is True
    assert listed["find_books"]["outputSchema"]["properties"]["results"]["type"] == "array"


async def test_a_count_stops_at_its_bound(shelf, signed_in):
    async with signed_in("reader") as mcp:
        many = await mcp.acall_tool("find_books", {"count": True})
        few = await mcp.acall_tool("find_books", {"filter": {"year__gte": 1980}, "count": True})
    assert (many["structuredContent"]["count"], many["structuredContent"]["countIsExact"]) == (3, False)  # 5 match
    assert (few["structuredContent"]["count"], few["structuredContent"]["countIsExact"]) == (2, True)


@pytest.mark.parametrize(
    "arguments",
    [
        {"filter": {"secret_note__contains": "s"}},  # a field not published
        {"filter": {"owner__password__startswith": "pbkdf2"}},  # through a relation to a secret
        {"filter": {"author__user__password__startswith": "p"}},
        {"filter": {"author__email": "ada@example.com"}},  # a published relation's other field
        {"filter": {"title__regex": ".*"}},  # a lookup not allowed for the field
        {"filter": {"year__lt": 2000}},  # a lookup the field does not publish
        {"filter": {"price": "4.00"}},  # equality not published for price (only lte)
        {"filter": {"id__in": list(range(101))}},  # too many values
        {"filter": {"id__in": [2**64]}},  # past any integer column (SQLite raised OverflowError)
        {"filter": {"year__gte": -(2**63) - 1}},
        {"filter": {"title__icontains": "x" * 60_000}},  # past the column (SQLite: "pattern too complex", a 503)
        {"filter": {"year__range": [1]}},
        {"order_by": ["secret_note"]},
        {"order_by": ["-author__name"]},  # published, but not for ordering
        {"limit": 6},  # past max_results
        {"limit": 0},
        {"offset": 21},  # past max_offset
        {"fields": ["secret_note"]},  # no such argument
        {"filter": "title=Dune"},
    ],
)
async def test_hostile_arguments_are_refused_before_any_query(shelf, signed_in, arguments):
    async with signed_in("reader") as mcp:
        with pytest.raises(McpError) as refused:
            await mcp.acall_tool("find_books", arguments)
    assert (refused.value.code, refused.value.http_status) == (-32602, 400)
    assert "Invalid arguments for tool 'find_books'" in refused.value.message


async def test_a_value_the_database_cannot_take_is_a_tool_error(shelf, signed_in):
    async with signed_in("reader") as mcp:
        result = await mcp.acall_tool("find_books", {"filter": {"published_on__gte": "1815-13-45"}})
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Invalid filter value:")
    assert "invalid date" in result["content"][0]["text"]


async def test_without_the_view_permission_the_tool_is_neither_listed_nor_callable(shelf, signed_in):
    for who in ("stranger", None):
        async with signed_in(who) as mcp:
            names = {tool["name"] for tool in await mcp.alist_tools()}
            with pytest.raises(McpError) as refused:
                await mcp.acall_tool("find_books", {})
        assert "find_books" not in names and "old_books" not in names
        assert (refused.value.code, refused.value.message) == (-32602, "Unknown tool: find_books")


async def test_a_queryset_is_the_most_a_tool_sees(shelf, signed_in):
    async with signed_in("reader") as mcp:
        result = await mcp.acall_tool("old_books", {"limit": 10})
    assert sorted(titles(result)) == ["Dune", "Emma", "Neuromancer", "Ulysses"]
    assert set(result["structuredContent"]["results"][0]) == {"title"}


def test_the_handler_refuses_what_the_schema_would_have(shelf):
    """Defence in depth: called directly, past the schema, the handler still refuses."""
    from django_mcp.protocol.errors import McpJsonRpcError
    from tests.publishapp.server import tools

    handler = tools.get("find_books").handler

    class Caller:
        user = User.objects.get(username="reader")

    for arguments in (
        {"filter": {"owner__password__startswith": "p"}},
        {"order_by": ["secret_note"]},
        {"limit": 1000},
        {"offset": 10_000},
    ):
        with pytest.raises(McpJsonRpcError):
            handler(Caller(), **arguments)


@pytest.mark.parametrize(
    ("fields", "options", "message"),
    [
        ({"nope": []}, {}, "Book has no field 'nope'"),
        ({"author__nope": []}, {}, "Author has no field 'nope'"),
        ({"title__name": []}, {}, "'title' of 'title__name' is not a relation"),
        ({"tags__name": []}, {}, "to-many relation"),
        ({"author__books__title": []}, {}, "to-many relation"),
        ({"title": ["regex"]}, {}, "lookup 'regex' of 'title' cannot be published"),
        ({"year": ["icontains_nope"]}, {}, "cannot be published"),
        ({"title": "icontains"}, {}, "the lookups of 'title' are a list"),
        ({}, {}, "publish at least one field"),
        ({"title": []}, {"ordering": ["year"]}, "ordering 'year' is not one of the published fields"),
        ({"title": []}, {"default_results": 50, "max_results": 10}, "default_results must be between"),
    ],
)
def test_what_cannot_be_published_is_refused_when_publishing(fields, options, message):
    with pytest.raises(DefinitionError, match=message):
        publish_query(Book, name="bad", fields=fields, registry=ToolRegistry("bad"), **options)


def test_publishing_takes_the_tool_options_and_the_permission_can_be_named():
    registry = ToolRegistry("options")
    tool = publish_query(
        Author,
        name="authors",
        fields={"name": ["icontains"]},
        permissions=["publishapp.view_book"],
        timeout_seconds=5,
        task_support="optional",
        registry=registry,
    )
    assert tool is registry.get("authors")
    assert tool.permissions == ("publishapp.view_book",)
    assert tool.timeout_seconds == 5 and tool.extension_options == {"task_support": "optional"}
    default = publish_query(Author, name="authors2", fields={"name": []}, registry=registry)
    assert default.permissions == ("publishapp.view_author",)
    assert "Search authors" in (default.description or "")


@pytest.mark.parametrize(
    ("field", "schema"),
    [
        (models.BooleanField(), {"type": "boolean"}),
        (models.BigIntegerField(), {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}),
        (models.FloatField(), {"type": "number"}),
        (models.DecimalField(), {"type": ["number", "string"]}),
        (models.DateTimeField(), {"type": "string", "format": "date-time"}),
        (models.DateField(), {"type": "string", "format": "date"}),
        (models.TimeField(), {"type": "string", "format": "time"}),
        (models.UUIDField(), {"type": "string", "format": "uuid"}),
        (models.EmailField(), {"type": "string", "maxLength": 254}),
        (models.TextField(), {"type": "string", "maxLength": 10_000}),
        (models.JSONField(), None),
        (models.BinaryField(), None),
    ],
)
def test_each_field_type_filters_with_its_json_type(field, schema):
    assert _json_type(field) == schema


def test_a_field_of_no_json_type_is_returned_but_not_filtered_on():
    from django.contrib.contenttypes.models import ContentType

    registry = ToolRegistry("json")
    tool = publish_query(ContentType, name="types", fields={"model": ["exact"]}, registry=registry)
    assert tool.input_schema["properties"]["filter"]["properties"] == {"model": {"type": "string", "maxLength": 100}}
    from django_mcp.tasks.models import Task

    with pytest.raises(DefinitionError, match="'arguments' is a JSONField, which cannot be filtered on here"):
        publish_query(Task, name="tasks", fields={"arguments": ["exact"]}, registry=registry)
    returned = publish_query(Task, name="tasks2", fields={"arguments": []}, registry=registry)
    assert returned.output_schema["properties"]["results"]["items"]["properties"]["arguments"] == {}

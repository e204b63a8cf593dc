"""``publish_drf``: DRF viewset actions and APIView methods as tools, run by DRF as the MCP caller (both eras)."""

from __future__ import annotations

import json

import pytest

from django_mcp import DefinitionError, ToolRegistry, publish_drf
from django_mcp.testing import McpError
from tests.publishapp.drf import BookViewSet, Stats
from tests.publishapp.models import Book

pytestmark = pytest.mark.django_db(transaction=True)


def text(result: dict) -> str:
    return result["content"][0]["text"]


async def test_each_action_is_a_tool_with_the_serializers_schema(signed_in):
    async with signed_in("reader") as mcp:
        listed = {tool["name"]: tool for tool in await mcp.alist_tools()}
    names = {name for name in listed if name.startswith("drf_")}
    assert names == {
        "drf_books_list",
        "drf_books_create",
        "drf_books_retrieve",
        "drf_books_update",
        "drf_books_partial_update",
        "drf_books_destroy",
        "drf_books_oldest",
        "drf_stats_get",
    }
    create = listed["drf_books_create"]
    assert create["inputSchema"]["required"] == ["body"]
    assert create["inputSchema"]["$defs"]["Book"]["required"] == ["title", "year"]
    assert "required" not in listed["drf_books_partial_update"]["inputSchema"]["properties"]["body"]
    assert set(listed["drf_books_list"]["inputSchema"]["properties"]) == {"limit", "offset"}  # the paginator's
    page = listed["drf_books_list"]["outputSchema"]
    assert page["properties"]["results"]["items"] == {"$ref": "#/$defs/Book"}
    assert page["$defs"]["Book"]["properties"]["published_on"]["type"] == ["string", "null"]  # nullable, said in JSON
    assert listed["drf_books_destroy"]["annotations"]["destructiveHint"] is True
    assert "outputSchema" not in listed["drf_stats_get"]  # no serializer: no shape is promised


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_reading_runs_the_viewset_with_its_pagination(shelf, signed_in, era):
    async with signed_in(None, protocol_version=era) as mcp:
        page = await mcp.acall_tool("drf_books_list", {"limit": 3, "offset": 1})
        one = await mcp.acall_tool("drf_books_retrieve", {"pk": shelf["emma"].pk})
        oldest = await mcp.acall_tool("drf_books_oldest", {})
    assert page["structuredContent"]["count"] == 6
    assert [book["title"] for book in page["structuredContent"]["results"]] == ["Emma", "Ulysses", "Neuromancer"]
    assert one["structuredContent"] == {
        "id": shelf["emma"].pk,
        "title": "Emma",
        "year": 1815,
        "price": "4.00",
        "published_on": "1815-12-23",
    }
    assert oldest["structuredContent"]["title"] == "Emma"


async def test_writing_needs_a_signed_in_user_and_runs_the_serializers_validation(shelf, signed_in):
    async with signed_in(None) as mcp:
        refused = await mcp.acall_tool("drf_books_create", {"body": {"title": "Anon", "year": 2000}})
    assert (refused["isError"], text(refused)) == (True, "HTTP 403: Authentication credentials were not provided.")
    async with signed_in("reader") as mcp:
        created = await mcp.acall_tool("drf_books_create", {"body": {"title": "Mine too", "year": 2024}})
        too_early = await mcp.acall_tool("drf_books_create", {"body": {"title": "Old", "year": 1200}})
        renamed = await mcp.acall_tool(
            "drf_books_partial_update", {"pk": created["structuredContent"]["id"], "body": {"title": "Renamed"}}
        )
        not_theirs = await mcp.acall_tool("drf_books_destroy", {"pk": shelf["theirs"].pk})
        missing = await mcp.acall_tool("drf_books_retrieve", {"pk": "999999"})
        removed = await mcp.acall_tool("drf_books_destroy", {"pk": shelf["mine"].pk})
        not_staff = await mcp.acall_tool("drf_stats_get", {})
    book = await Book.objects.select_related("owner").aget(pk=created["structuredContent"]["id"])
    assert (book.title, book.owner.username) == ("Renamed", "reader")
    assert renamed["structuredContent"]["title"] == "Renamed"
    assert too_early["isError"] is True
    assert json.loads(text(too_early).removeprefix("HTTP 400: ")) == {"year": ["Printing had not been invented yet"]}
    assert text(not_theirs) == "HTTP 403: Only the owner may remove a book"
    assert text(missing) == "HTTP 404: No Book matches the given query."
    assert removed.get("isError") is None and not await Book.objects.filter(pk=shelf["mine"].pk).aexists()
    assert text(not_staff) == "HTTP 403: You do not have permission to perform this action."
    async with signed_in("staff") as mcp:
        stats = await mcp.acall_tool("drf_stats_get", {})
    assert json.loads(text(stats)) == {"books": 6}  # created one, removed one


async def test_arguments_outside_the_schema_never_reach_the_view(signed_in):
    async with signed_in("reader") as mcp:
        for name, arguments in (
            ("drf_books_create", {}),
            ("drf_books_create", {"body": {"title": "No year"}}),
            ("drf_books_retrieve", {}),
            ("drf_books_list", {"limit": "many"}),
            ("drf_books_list", {"search": "x"}),
        ):
            with pytest.raises(McpError) as refused:
                await mcp.acall_tool(name, arguments)
            assert refused.value.code == -32602, (name, arguments)


def test_actions_are_chosen_and_unknown_ones_refused():
    registry = ToolRegistry("drf-chosen")
    chosen = publish_drf(BookViewSet, "list", "oldest", basename="books", registry=registry, task_support="optional")
    assert [tool.name for tool in chosen] == ["books_list", "books_oldest"]
    assert all(tool.extension_options == {"task_support": "optional"} for tool in chosen)
    with pytest.raises(DefinitionError, match="BookViewSet has no action 'archive'"):
        publish_drf(BookViewSet, "archive", basename="books2", registry=registry)
    with pytest.raises(DefinitionError, match="Stats has no action 'post'"):
        publish_drf(Stats, "post", basename="stats", registry=registry)

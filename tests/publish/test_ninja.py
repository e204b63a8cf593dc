"""``publish_ninja``: django-ninja operations as tools, run by ninja as the MCP caller (both eras)."""

from __future__ import annotations

import json

import pytest
from ninja import NinjaAPI, Router, Schema

from django_mcp import DefinitionError, ToolRegistry, publish_ninja
from django_mcp.testing import McpError
from tests.publishapp.api import api, books
from tests.publishapp.models import Book

pytestmark = pytest.mark.django_db(transaction=True)

ERAS = ["2026-07-28", "2025-11-25"]


class Payload(Schema):
    name: str


def text(result: dict) -> str:
    return result["content"][0]["text"]


async def test_the_schemas_are_the_operations_own(signed_in):
    async with signed_in("reader") as mcp:
        listed = {tool["name"]: tool for tool in await mcp.alist_tools()}
    assert {"list_books", "get_book", "create_book", "delete_book", "whoami", "slow_count", "broken"} <= set(listed)
    assert "upload" not in listed  # not published: another router's
    search = listed["list_books"]
    assert set(search["inputSchema"]["properties"]) == {"title_contains", "year_from", "limit"}
    assert search["description"].startswith("List Books\n\nList books, newest first.")
    assert search["annotations"] == {"readOnlyHint": True}
    assert search["outputSchema"]["properties"]["result"]["items"] == {"$ref": "#/$defs/BookOut"}
    assert set(search["outputSchema"]["$defs"]) == {"BookOut"}
    create = listed["create_book"]
    assert create["inputSchema"]["required"] == ["body"]
    assert create["inputSchema"]["$defs"]["BookIn"]["required"] == ["title", "year"]
    assert create["outputSchema"]["type"] == "object" and "year" in create["outputSchema"]["properties"]
    assert listed["delete_book"]["annotations"] == {"destructiveHint": True, "idempotentHint": True}


@pytest.mark.parametrize("era", ERAS)
async def test_calls_run_through_ninja_and_answer_structured_content(shelf, signed_in, era):
    async with signed_in(None, protocol_version=era) as mcp:
        found = await mcp.acall_tool("list_books", {"title_contains": "u", "limit": 5})
        one = await mcp.acall_tool("get_book", {"book_id": shelf["emma"].pk})
    assert [book["title"] for book in found["structuredContent"]["result"]] == ["Neuromancer", "Dune", "Ulysses"]
    assert json.loads(text(found)) == found["structuredContent"]["result"]
    assert one["structuredContent"] == {
        "id": shelf["emma"].pk,
        "title": "Emma",
        "year": 1815,
        "price": "4.00",
        "published_on": "1815-12-23",
    }


async def test_the_operations_auth_sees_the_mcp_caller_as_request_user(shelf, signed_in):
    async with signed_in(None) as mcp:
        anonymous = await mcp.acall_tool("create_book", {"body": {"title": "Anon", "year": 2000}})
    assert (anonymous["isError"], text(anonymous)) == (True, "HTTP 401: Unauthorized")
    async with signed_in("reader") as mcp:
        created = await mcp.acall_tool("create_book", {"body": {"title": "Mine", "year": 2024, "price": 3}})
        me = await mcp.acall_tool("whoami", {})
    assert created["structuredContent"]["title"] == "Mine"
    assert (await Book.objects.select_related("owner").aget(title="Mine")).owner.username == "reader"
    assert json.loads(text(me)) == {"username": "reader"}


async def test_the_operations_own_refusals_are_tool_errors(shelf, signed_in):
    async with signed_in("reader") as mcp:
        missing = await mcp.acall_tool("get_book", {"book_id": 999_999})
        too_early = await mcp.acall_tool("create_book", {"body": {"title": "Old", "year": 1200}})
        not_theirs = await mcp.acall_tool("delete_book", {"book_id": shelf["theirs"].pk})
        invalid = await mcp.acall_tool("create_book", {"body": {"title": "Bad price", "year": 2000, "price": "abc"}})
        removed = await mcp.acall_tool("delete_book", {"book_id": shelf["mine"].pk})
        staff_only = await mcp.acall_tool("staff_report", {})
    assert (missing["isError"], text(missing)) == (True, "HTTP 404: Not Found")
    assert text(too_early) == "HTTP 400: Printing had not been invented yet"
    assert text(not_theirs) == "HTTP 403: Only the owner may remove a book"
    assert invalid["isError"] is True and text(invalid).startswith("HTTP 422: ")
    assert json.loads(text(invalid).removeprefix("HTTP 422: "))[0]["loc"] == ["body", "payload", "price"]
    assert removed.get("isError") is None and not await Book.objects.filter(pk=shelf["mine"].pk).aexists()
    assert text(staff_only) == "HTTP 403: Staff only"
    async with signed_in("staff") as mcp:
        report = await mcp.acall_tool("staff_report", {})
    assert json.loads(text(report)) == {"books": 5}  # one removed above


async def test_an_operation_that_raises_is_an_error_result_not_a_500(signed_in):
    async with signed_in("reader") as mcp:
        result = await mcp.acall_tool("broken", {})
    assert result["isError"] is True
    assert text(result).startswith("Tool 'broken' failed: RuntimeError")


async def test_a_server_error_body_is_never_passed_on_and_text_answers_stay_text(signed_in, settings):
    settings.DEBUG = True  # ninja then answers 500 with the traceback as the body
    async with signed_in("reader") as mcp:
        failed = await mcp.acall_tool("broken", {})
        plain = await mcp.acall_tool("plain", {"words": ["plain", "text"]})
    assert (failed["isError"], text(failed)) == (True, "HTTP 500: the operation failed")
    assert "hunter2" not in json.dumps(failed)
    assert plain == {**plain, "content": [{"type": "text", "text": "plain text"}]}
    assert "structuredContent" not in plain


async def test_arguments_the_schema_refuses_never_reach_the_operation(signed_in):
    async with signed_in("reader") as mcp:
        for name, arguments in (
            ("get_book", {"book_id": "one"}),
            ("get_book", {}),
            ("create_book", {"body": {"title": "No year"}}),
            ("list_books", {"limit": 5, "password": "x"}),
        ):
            with pytest.raises(McpError) as refused:
                await mcp.acall_tool(name, arguments)
            assert refused.value.code == -32602, (name, arguments)


async def test_an_async_operation_runs_as_a_task_when_published_so(shelf, signed_in):
    async with signed_in("reader") as mcp:
        direct = await mcp.acall_tool("slow_count", {})
        handle = await mcp.astart_task("task_slow_count", {"seconds": 0.1})
        done = await mcp.await_task(handle["taskId"], "completed")
    assert direct["structuredContent"] == {"result": 6}
    assert done["result"]["structuredContent"] == {"result": 6}


def test_an_operation_that_cannot_be_a_tool_is_refused_when_publishing():
    registry = ToolRegistry("refused")
    with pytest.raises(DefinitionError, match="takes multipart/form-data; only JSON bodies"):
        publish_ninja(api, "upload", registry=registry)
    with pytest.raises(DefinitionError, match="takes 'x_tenant' from the header"):
        publish_ninja(api, "with_header", registry=registry)
    with pytest.raises(DefinitionError, match="the API has no operation 'nope'"):
        publish_ninja(api, "get_book", "nope", registry=registry)
    with pytest.raises(DefinitionError, match="name the operations to publish, or give a router"):
        publish_ninja(api, registry=registry)
    assert len(registry) == 0


def test_operations_are_chosen_by_name_or_router_and_take_tool_options():
    registry = ToolRegistry("chosen")
    chosen = publish_ninja(api, "get_book", "tests_publishapp_api_whoami", registry=registry, prefix="shop.")
    assert [tool.name for tool in chosen] == ["shop.get_book", "shop.whoami"]
    by_router = publish_ninja(api, router=books, registry=ToolRegistry("router"), permissions=["publishapp.view_book"])
    assert {tool.name for tool in by_router} >= {"list_books", "create_book"}
    assert all(tool.permissions == ("publishapp.view_book",) for tool in by_router)


def test_an_operation_left_out_of_the_schema_cannot_be_published():
    hidden_api, router = NinjaAPI(urls_namespace="publish_hidden"), Router()

    @router.get("/internal", include_in_schema=False)
    def internal(request) -> dict:
        return {}

    hidden_api.add_router("", router)
    for how in ({"router": router}, {}):
        names = () if how else ("internal",)
        with pytest.raises(DefinitionError, match="operation 'internal' is not in the API's OpenAPI schema"):
            publish_ninja(hidden_api, *names, registry=ToolRegistry("hidden"), **how)


def test_a_path_parameter_named_body_would_hide_the_body():
    other = NinjaAPI(urls_namespace="publish_clash")
    router = Router()

    @router.post("/things/{body}")
    def clash(request, body: int, payload: Payload) -> dict:
        return {}

    other.add_router("", router)
    with pytest.raises(DefinitionError, match="a parameter named 'body' would hide the request body"):
        publish_ninja(other, "clash", registry=ToolRegistry("clash"))

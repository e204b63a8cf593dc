"""``McpClient``: an MCP client for a project's own tests, in either era, with no port and no server process.

It speaks the wire to the project's endpoint through Django's :class:`~django.test.AsyncClient`, so
every request meets the same validation as a real client's (headers, ``_meta``, the routing headers),
and the answers are what a real client would read::

    from django_mcp.testing import McpClient

    async def test_add():  # pytest-django (or an async test method of Django's TestCase)
        async with McpClient("/mcp") as mcp:
            result = await mcp.acall_tool("add", {"a": 1, "b": 2})
        assert result["content"] == [{"type": "text", "text": "3"}]

Server-to-client questions (elicitation, sampling, roots) are answered by ``answer(method, params)``,
in both eras: the 2026-07-28 rounds (``input_required`` then a retry) and a handshake-era request on
the response stream alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from itertools import count
from types import TracebackType
from typing import Any, TypeVar

from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application
from django.test import AsyncClient

from .protocol import sse
from .protocol.handshake import HANDSHAKE_VERSIONS
from .protocol.headers import encode_value, param_header_values, param_headers
from .protocol.validation import PROTOCOL_VERSION
from .server.dispatch import CORE_NAME_PARAMS

__all__ = ["McpClient", "McpError", "SyncMcpClient"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL_STATUSES = ("completed", "failed", "cancelled")
T = TypeVar("T")
Answer = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]] | dict[str, Any]]

# The params key the Mcp-Name header mirrors, per method: the core's and the tasks extension's.
_NAME_PARAMS = {**CORE_NAME_PARAMS, **dict.fromkeys(("tasks/get", "tasks/update", "tasks/cancel"), "taskId")}


class McpError(Exception):
    """A JSON-RPC error the server answered with: ``code``, ``message``, ``data`` and the HTTP status."""

    def __init__(self, error: Mapping[str, Any], http_status: int) -> None:
        self.code: int = error.get("code", 0)
        self.message: str = error.get("message", "")
        self.data: Any = error.get("data")
        self.http_status = http_status
        super().__init__(f"{self.code}: {self.message} (HTTP {http_status})")


class McpClient:
    """One MCP client of the endpoint at ``path``, speaking ``protocol_version``.

    ``capabilities`` are the client's (``elicitation``, ``sampling``, ``roots``); with ``tasks`` (the
    default) a 2026-07-28 client also declares the tasks extension. A handshake-era
    ``protocol_version`` (``"2025-11-25"`` …) opens a session on first use (or :meth:`aconnect`) and
    ends it in :meth:`aclose`. ``headers`` go with every request (e.g. ``Authorization``); pass a
    logged-in ``client`` (``AsyncClient`` after ``aforce_login``) to call as a Django user.
    Notifications the server sends while answering (progress, log) are kept in :attr:`notifications`.
    """

    def __init__(
        self,
        path: str = "/mcp",
        *,
        protocol_version: str = PROTOCOL_VERSION,
        capabilities: Mapping[str, Any] | None = None,
        tasks: bool = True,
        answer: Answer | None = None,
        headers: Mapping[str, str] | None = None,
        client: AsyncClient | None = None,
    ) -> None:
        if protocol_version != PROTOCOL_VERSION and protocol_version not in HANDSHAKE_VERSIONS:
            raise ValueError(f"protocol_version must be {PROTOCOL_VERSION} or one of {', '.join(HANDSHAKE_VERSIONS)}")
        self.path = path
        self.protocol_version = protocol_version
        self.capabilities: dict[str, Any] = dict(capabilities or {})
        if tasks and self.modern:
            self.capabilities.setdefault("extensions", {})[TASKS_EXTENSION] = {}
        self.answer = answer
        self.headers = dict(headers or {})
        self.client = client if client is not None else AsyncClient()
        self.session_id: str | None = None
        self.server_info: dict[str, Any] = {}
        self.notifications: list[dict[str, Any]] = []
        self._ids = count(1)
        self._tool_schemas: dict[str, Mapping[str, Any]] | None = None

    @property
    def modern(self) -> bool:
        """Whether this client speaks 2026-07-28 (else a handshake-era revision, in a session)."""
        return self.protocol_version == PROTOCOL_VERSION

    # -- the session ------------------------------------------------------------------------------

    async def __aenter__(self) -> McpClient:
        await self.aconnect()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aconnect(self) -> dict[str, Any]:
        """Handshake era: ``initialize`` and ``notifications/initialized`` (once). 2026-07-28: ``server/discover``."""
        if self.modern:
            return await self.arequest("server/discover")
        if self.session_id is not None:
            return self.server_info
        params = {
            "protocolVersion": self.protocol_version,
            "capabilities": self.capabilities,
            "clientInfo": {"name": "django-mcp-testing", "version": "1"},
        }
        response = await self._apost(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": params}
        )
        result = await self._aresult(response)
        self.session_id = response.headers["Mcp-Session-Id"]
        self.protocol_version = result["protocolVersion"]
        self.server_info = result
        await self.anotify("notifications/initialized")
        return result

    async def aclose(self) -> None:
        """Handshake era: end the session (``DELETE``)."""
        if self.session_id is not None:
            await self.client.delete(self.path, headers=self._session_headers())
            self.session_id = None

    # -- requests ---------------------------------------------------------------------------------

    async def arequest(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; its result, after answering any questions. Raises :class:`McpError`."""
        if not self.modern and self.session_id is None:
            await self.aconnect()
        params = dict(params or {})
        while True:
            result = await self._aresult(await self._apost(self._body(method, params)))
            if result.get("resultType") != "input_required" or self.answer is None:
                return result
            answers = {
                key: await self._aanswer(r["method"], r.get("params", {})) for key, r in result["inputRequests"].items()
            }
            params = {**params, "inputResponses": answers}
            if "requestState" in result:
                params["requestState"] = result["requestState"]

    async def anotify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (accepted with 202)."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params:
            body["params"] = dict(params)
        response = await self._apost(body)
        if response.status_code != 202:
            raise McpError(json.loads(response.content).get("error", {}), response.status_code)

    # -- tools, prompts, resources ----------------------------------------------------------------------

    async def alist_tools(self) -> list[dict[str, Any]]:
        """Every tool, across pages."""
        return await self._alist_all("tools/list", "tools")

    async def acall_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``tools/call``: the ``CallToolResult`` (``isError`` for a tool's own failure), or a task's handle."""
        return await self.arequest("tools/call", {"name": name, "arguments": dict(arguments or {})})

    async def alist_prompts(self) -> list[dict[str, Any]]:
        return await self._alist_all("prompts/list", "prompts")

    async def aget_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await self.arequest("prompts/get", {"name": name, "arguments": dict(arguments or {})})

    async def alist_resources(self) -> list[dict[str, Any]]:
        return await self._alist_all("resources/list", "resources")

    async def aread_resource(self, uri: str) -> dict[str, Any]:
        return await self.arequest("resources/read", {"uri": uri})

    # -- tasks (2026-07-28, the tasks extension) --------------------------------------------------------

    async def astart_task(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Call a task tool and return the task's handle (``ValueError`` if it answered without a task)."""
        result = await self.acall_tool(name, arguments)
        if result.get("resultType") != "task":
            raise ValueError(f"Tool {name!r} answered without a task: {result}")
        return result

    async def aget_task(self, task_id: str) -> dict[str, Any]:
        return await self.arequest("tasks/get", {"taskId": task_id})

    async def await_task(self, task_id: str, *statuses: str, timeout: float = 10.0) -> dict[str, Any]:  # noqa: ASYNC109
        """Poll ``tasks/get`` (at the task's ``pollIntervalMs``, at most every 10 ms) until the task is in
        one of ``statuses`` (default: finished); ``TimeoutError`` after ``timeout`` seconds."""
        wanted = statuses or TERMINAL_STATUSES
        async with asyncio.timeout(timeout):
            while True:
                task = await self.aget_task(task_id)
                if task["status"] in wanted:
                    return task
                await asyncio.sleep(max(task.get("pollIntervalMs", 100), 10) / 1000)

    async def aupdate_task(self, task_id: str, responses: Mapping[str, Any]) -> dict[str, Any]:
        """``tasks/update``: answer the task's ``inputRequests`` by key."""
        return await self.arequest("tasks/update", {"taskId": task_id, "inputResponses": dict(responses)})

    async def acancel_task(self, task_id: str) -> dict[str, Any]:
        return await self.arequest("tasks/cancel", {"taskId": task_id})

    @asynccontextmanager
    async def alisten(self, notifications: Mapping[str, Any]) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """``subscriptions/listen`` (2026-07-28): the stream's messages, the acknowledgement first::

        async with mcp.alisten({"taskIds": [task_id]}) as messages:
            ack = await anext(messages)

        Driven through the ASGI application as a server would, so that leaving the block disconnects:
        the server ends the stream and frees its place (Django's test clients cannot disconnect).
        """
        body = self._body("subscriptions/listen", {"notifications": dict(notifications)})
        communicator = ApplicationCommunicator(get_asgi_application(), self._scope(await self._aheaders(body)))
        await communicator.send_input({"type": "http.request", "body": json.dumps(body).encode()})
        start = await communicator.receive_output(timeout=10)
        chunks = self._achunks(communicator)
        if start["status"] != 200:
            content = b"".join([chunk async for chunk in chunks])
            raise McpError(json.loads(content).get("error", {}), start["status"])
        events = self._amessages(chunks)
        try:
            yield events
        finally:
            await events.aclose()
            await communicator.send_input({"type": "http.disconnect"})
            with contextlib.suppress(Exception):  # the application ends as it sees the disconnect
                await communicator.wait(timeout=5)

    # -- the wire -----------------------------------------------------------------------------------------

    def _body(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.modern:
            meta = {
                "io.modelcontextprotocol/protocolVersion": self.protocol_version,
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "django-mcp-testing", "version": "1"},
            }
            params = {**params, "_meta": {**meta, **params.get("_meta", {})}}
        return {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}

    async def _apost(self, body: dict[str, Any]) -> Any:
        headers = await self._aheaders(body)
        return await self.client.post(self.path, json.dumps(body), content_type="application/json", headers=headers)

    async def _aheaders(self, body: dict[str, Any]) -> dict[str, str]:
        """The HTTP headers a conforming client sends with ``body``."""
        headers = {"Accept": "application/json, text/event-stream", **self._session_headers(), **self.headers}
        method = body.get("method")
        if self.modern and isinstance(method, str) and "id" in body:
            headers["Mcp-Method"] = method
            name_param = _NAME_PARAMS.get(method)
            if name_param and isinstance(body["params"].get(name_param), str):
                headers["Mcp-Name"] = encode_value(body["params"][name_param])
            if method == "tools/call":
                headers.update(await self._aparam_headers(body["params"]["name"], body["params"]["arguments"]))
        if self.modern and "MCP-Protocol-Version" not in headers:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _scope(self, headers: Mapping[str, str]) -> dict[str, Any]:
        """The ASGI scope of a POST to the endpoint with ``headers``, and the client's cookies (its login)."""
        sent = [(b"host", b"testserver"), (b"content-type", b"application/json")]
        sent += [(name.lower().encode(), value.encode()) for name, value in headers.items()]
        cookies = "; ".join(f"{morsel.key}={morsel.coded_value}" for morsel in self.client.cookies.values())
        if cookies:
            sent.append((b"cookie", cookies.encode()))
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": sent,
            "client": ("127.0.0.1", 0),
            "server": ("testserver", 80),
        }

    @staticmethod
    async def _achunks(communicator: ApplicationCommunicator) -> AsyncIterator[bytes]:
        while True:
            message = await communicator.receive_output(timeout=None)
            yield message.get("body", b"")
            if not message.get("more_body"):
                return

    def _session_headers(self) -> dict[str, str]:
        if self.session_id is None:
            return {}
        return {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": self.protocol_version}

    async def _aparam_headers(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, str]:
        """The ``Mcp-Param-*`` headers the tool's ``x-mcp-header`` arguments need (its schema read once)."""
        if self._tool_schemas is None:
            self._tool_schemas = {}  # set first: tools/list sends no tools/call
            self._tool_schemas = {t["name"]: t.get("inputSchema", {}) for t in await self.alist_tools()}
        return param_header_values(param_headers(self._tool_schemas.get(tool, {})), arguments)

    async def _aresult(self, response: Any) -> dict[str, Any]:
        if response.streaming:
            message: dict[str, Any] = {}
            async for message in self._amessages(response.streaming_content):
                if "id" in message and ("result" in message or "error" in message):
                    break
        else:
            message = json.loads(response.content)
        if "error" in message:
            raise McpError(message["error"], response.status_code)
        result: dict[str, Any] = message["result"]
        return result

    async def _amessages(self, chunks: AsyncIterator[bytes]) -> AsyncGenerator[dict[str, Any], None]:
        """The JSON-RPC messages of an SSE body; notifications are also kept, questions answered."""
        async for message in sse.amessages(chunks):
            if "method" in message and "id" in message:  # the server asks (handshake era)
                await self._areply(message)
                continue
            if "method" in message:
                self.notifications.append(message)
            yield message

    async def _areply(self, request: dict[str, Any]) -> None:
        try:
            reply: dict[str, Any] = {"result": await self._aanswer(request["method"], request.get("params", {}))}
        except McpError as refused:
            reply = {"error": {"code": refused.code, "message": refused.message}}
        await self._apost({"jsonrpc": "2.0", "id": request["id"], **reply})

    async def _aanswer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.answer is None:
            raise McpError({"code": -32601, "message": f"This test client does not answer {method}"}, 200)
        answered = self.answer(method, params)
        return await answered if inspect.isawaitable(answered) else answered

    async def _alist_all(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await self.arequest(method, {"cursor": cursor} if cursor else {})
            items += page[key]
            cursor = page.get("nextCursor")
            if not cursor:
                return items


class SyncMcpClient:
    """:class:`McpClient` for synchronous tests, as Django's ``Client`` is to its ``AsyncClient``::

        from django_mcp.testing import SyncMcpClient

        @pytest.mark.django_db(transaction=True)
        def test_add():  # pytest-django alone, or a method of Django's TransactionTestCase
            with SyncMcpClient("/mcp") as mcp:
                assert mcp.call_tool("add", {"a": 1, "b": 2})["content"] == [{"type": "text", "text": "3"}]

    The same arguments, and the same methods without the ``a`` (``call_tool``, ``start_task``,
    ``wait_task`` …). It serves the endpoint on an event loop of its own, in a thread it starts and
    stops with the client (``close()``, or leaving the ``with`` block), so a task goes on between calls
    as it would in a server. The endpoint therefore reads the database from other threads, as under
    ``LiveServerTestCase``: rows the test writes are seen with ``transaction=True``
    (``TransactionTestCase``), not inside a test's open transaction.
    """

    def __init__(self, path: str = "/mcp", **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="SyncMcpClient", daemon=True)
        self._thread.start()
        self.client = McpClient(path, **options)

    def _run(self, work: Awaitable[T]) -> T:
        async def run() -> T:
            return await work

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def __enter__(self) -> SyncMcpClient:
        self.connect()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    @property
    def session_id(self) -> str | None:
        return self.client.session_id

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return self.client.notifications

    def connect(self) -> dict[str, Any]:
        return self._run(self.client.aconnect())

    def close(self) -> None:
        """End a handshake-era session, then stop the client's event loop (tasks still running are cancelled)."""
        if self._loop.is_closed():
            return
        try:
            self._run(self.client.aclose())
        finally:
            self._run(_acancel_others())
            self._run(self._loop.shutdown_asyncgens())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self._run(self.client.arequest(method, params))

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        self._run(self.client.anotify(method, params))

    def list_tools(self) -> list[dict[str, Any]]:
        return self._run(self.client.alist_tools())

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self._run(self.client.acall_tool(name, arguments))

    def list_prompts(self) -> list[dict[str, Any]]:
        return self._run(self.client.alist_prompts())

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._run(self.client.aget_prompt(name, arguments))

    def list_resources(self) -> list[dict[str, Any]]:
        return self._run(self.client.alist_resources())

    def read_resource(self, uri: str) -> dict[str, Any]:
        return self._run(self.client.aread_resource(uri))

    def start_task(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self._run(self.client.astart_task(name, arguments))

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self._run(self.client.aget_task(task_id))

    def wait_task(self, task_id: str, *statuses: str, timeout: float = 10.0) -> dict[str, Any]:
        """:meth:`McpClient.await_task`: poll until the task is in one of ``statuses`` (default: finished)."""
        return self._run(self.client.await_task(task_id, *statuses, timeout=timeout))

    def update_task(self, task_id: str, responses: Mapping[str, Any]) -> dict[str, Any]:
        return self._run(self.client.aupdate_task(task_id, responses))

    def cancel_task(self, task_id: str) -> dict[str, Any]:
        return self._run(self.client.acancel_task(task_id))


async def _acancel_others() -> None:
    """Cancel every other task of the running loop and wait for them to end."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)

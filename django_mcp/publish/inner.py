"""The Django request a published operation runs on: made from the MCP request, as its own user."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpResponseBase

from ..compat import skip_csrf_check
from ..server.request import McpRequest

logger = logging.getLogger("django_mcp")

# What the inner request keeps of the MCP request's environment: where it was served, and from where.
_KEPT = ("SERVER_NAME", "SERVER_PORT", "HTTP_HOST", "REMOTE_ADDR", "wsgi.url_scheme", "SCRIPT_NAME")


def inner_request(
    request: McpRequest, method: str, path: str, query: Mapping[str, Any], body: Any = None
) -> WSGIRequest:
    """A ``WSGIRequest`` for ``method path?query`` with ``body`` as JSON, whose ``user`` is the MCP caller's.

    Nothing else of the MCP request goes in: no ``Authorization`` header or cookie is passed on (an MCP
    token is for this server only), so the operation's auth sees the caller as ``request.user``, as Django's
    session auth does. The CSRF check is off: it guards a browser's ambient cookies, and none are here.
    """
    outer = request.http_request.META
    payload = b"" if body is None else json.dumps(body).encode()
    environ: dict[str, Any] = {key: outer[key] for key in _KEPT if key in outer}
    environ.setdefault("SERVER_NAME", "localhost")
    environ.setdefault("SERVER_PORT", "80")
    environ.setdefault("wsgi.url_scheme", "http")
    environ.update(
        {
            "REQUEST_METHOD": method.upper(),
            "PATH_INFO": path,
            "QUERY_STRING": urlencode([(k, _text(v)) for k, v in _pairs(query)]),
            "CONTENT_TYPE": "application/json" if body is not None else "",
            "CONTENT_LENGTH": str(len(payload)),
            "HTTP_ACCEPT": "application/json",
            "wsgi.input": io.BytesIO(payload),
        }
    )
    inner = WSGIRequest(environ)
    inner.user = request.user
    skip_csrf_check(inner)
    return inner


def located_arguments(
    path: str, located: Mapping[str, str], arguments: Mapping[str, Any]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A tool's arguments as an HTTP operation takes them: ``path`` with its ``{name}`` parameters filled in,
    the path parameters (for the view's keyword arguments) and the query parameters."""
    path_args = {name: value for name, value in arguments.items() if located.get(name) == "path"}
    query = {name: value for name, value in arguments.items() if located.get(name) == "query"}
    for name, value in path_args.items():
        path = path.replace("{" + name + "}", str(value))
    return path, path_args, query


def _pairs(query: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(key, item) for key, value in query.items() for item in (value if isinstance(value, list) else [value])]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict) else str(value)


def tool_answer(response: HttpResponseBase, wrapped: bool) -> dict[str, Any]:
    """The tool result of an operation's HTTP answer: its JSON (as structured content when it is an object, or
    wrapped in ``result`` for a schema that says so), or ``HTTP <status>: <detail>`` as an error the model reads.
    A server error's body (a traceback under ``DEBUG``) is never passed on."""
    status = response.status_code
    raw = getattr(response, "content", b"")
    is_json = response.get("Content-Type", "").startswith("application/json")
    data = json.loads(raw) if raw and is_json else None
    if status >= 500:
        logger.error("A published operation answered HTTP %s", status)
        return _error(f"HTTP {status}: the operation failed")
    if status >= 400:
        detail = data.get("detail", data) if isinstance(data, dict) else (data or raw.decode(errors="replace"))
        text = detail if isinstance(detail, str) else json.dumps(detail)
        return _error(f"HTTP {status}: {text}")
    if data is None:
        return {"content": [{"type": "text", "text": raw.decode(errors="replace") or f"HTTP {status}"}]}
    result: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(data)}]}
    structured = {"result": data} if wrapped else data
    if isinstance(structured, dict):
        result["structuredContent"] = structured
    return result


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}

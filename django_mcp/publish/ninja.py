"""``publish_ninja``: django-ninja operations as tools, run by ninja itself as the MCP caller.

The tool's schemas come from the OpenAPI document ninja generates for the API (its parameters and
request body become ``inputSchema``, its response ``outputSchema``); a call becomes an inner Django
request handed to the operation's own ``run``, so ninja parses, validates, authenticates, throttles and
answers exactly as it does for its HTTP clients. Its answer becomes the tool's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.urls import NoReverseMatch

from ..compat import ninja_operations
from ..server.definition_errors import DefinitionError
from ..server.request import McpRequest
from ..server.tools.definition import Tool
from ..server.tools.registry import ToolRegistry
from ..server.tools.registry import registry as default_registry
from .inner import inner_request, located_arguments, tool_answer
from .openapi import output_schema, register_operation, tool_input_schema


def publish_ninja(
    api: Any,
    *operations: str,
    router: Any = None,
    registry: ToolRegistry | None = None,
    prefix: str = "",
    **tool_options: Any,
) -> list[Tool]:
    """Publish operations of the django-ninja ``api`` as tools; returns the tools, in the API's order.

    Name the operations (by view function name or ``operation_id``), or give a ``router`` to publish the
    operations it declares. A tool is named ``prefix`` + the operation's ``operation_id`` if one was set,
    else its function's name; its description is the operation's summary and docstring. Path and query
    parameters are the tool's arguments; a JSON request body is its ``body`` argument. Other options
    are :func:`~django_mcp.tool`'s and apply to each tool (e.g. ``task_support="optional"`` to run a slow
    operation as a task, or ``permissions``).

    The operation runs as the MCP caller: its auth sees them as ``request.user`` (``django_auth`` and any
    auth that reads the user work; no token or cookie of the MCP request is passed on).

    Raises ``DefinitionError`` for an operation not found, not in the OpenAPI schema, of several
    methods, or taking form data, files, headers or cookies.
    """
    if not operations and router is None:
        raise DefinitionError("publish_ninja: name the operations to publish, or give a router")
    document = api.get_openapi_schema(path_prefix="")
    described = {
        details["operationId"]: (path, details)
        for path, methods in document.get("paths", {}).items()
        for details in methods.values()
    }
    definitions = document.get("components", {}).get("schemas", {})
    found: dict[str, Any] = {}
    for owner, operation in ninja_operations(api):
        operation_id = operation.operation_id or api.get_openapi_operation_id(operation)
        names = {operation_id, operation.view_func.__name__}
        wanted = [name for name in operations if name in names]
        if wanted or (router is not None and owner is router):
            if operation_id not in described:  # include_in_schema=False: no schema to build a tool from
                name = operation.view_func.__name__
                raise DefinitionError(f"publish_ninja: operation {name!r} is not in the API's OpenAPI schema")
            found.setdefault(operation_id, (operation, wanted))
    missing = [name for name in operations if not any(name in wanted for _, wanted in found.values())]
    if missing:
        raise DefinitionError(f"publish_ninja: the API has no operation {missing[0]!r}")
    target = registry if registry is not None else default_registry
    tools = []
    for operation_id, (operation, _) in found.items():
        path, details = described[operation_id]
        tool_name = prefix + (operation.operation_id or operation.view_func.__name__)
        tools.append(_publish(target, api, operation, tool_name, path, details, definitions, tool_options))
    return tools


def _publish(
    target: ToolRegistry,
    api: Any,
    operation: Any,
    tool_name: str,
    path: str,
    details: Mapping[str, Any],
    definitions: Mapping[str, Any],
    tool_options: Mapping[str, Any],
) -> Tool:
    if len(operation.methods) != 1:
        raise DefinitionError(f"Tool {tool_name!r}: the operation answers {operation.methods}; publish one method")
    if getattr(operation, "stream_format", None):
        raise DefinitionError(f"Tool {tool_name!r}: a streaming operation cannot be a tool")
    method = operation.methods[0].upper()
    input_schema, located = tool_input_schema(tool_name, details, definitions)
    output, wrapped = output_schema(details.get("responses", {}), definitions)
    text = "\n\n".join(part for part in (details.get("summary"), details.get("description")) if part)
    handler = _handler(api, operation, method, path, located, wrapped)
    return register_operation(
        target,
        handler,
        name=tool_name,
        method=method,
        description=text or None,
        input_schema=input_schema,
        output_schema=output,
        tool_options=tool_options,
    )


def _handler(
    api: Any, operation: Any, method: str, path: str, located: Mapping[str, str], wrapped: bool
) -> Callable[..., Any]:
    """The tool's handler: sync for a sync operation (run in a thread), async for an async one."""

    def prepared(request: McpRequest, arguments: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        filled, path_args, query = located_arguments(path, located, arguments)
        try:
            root = api.get_root_path({}).rstrip("/")
        except NoReverseMatch:  # the API is not mounted in the URLconf: the path is for the operation only
            root = ""
        return inner_request(request, method, root + filled, query, arguments.get("body")), path_args

    if operation.is_async:

        async def acall_operation(request: McpRequest, **arguments: Any) -> dict[str, Any]:
            inner, path_args = prepared(request, arguments)
            return tool_answer(await operation.run(inner, **path_args), wrapped)

        return acall_operation

    def call_operation(request: McpRequest, **arguments: Any) -> dict[str, Any]:
        inner, path_args = prepared(request, arguments)
        return tool_answer(operation.run(inner, **path_args), wrapped)

    return call_operation

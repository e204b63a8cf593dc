"""``publish_drf``: Django REST framework views and viewsets as tools, run by DRF itself as the MCP caller.

Needs the ``drf`` extra. Each action of a viewset (or method of an ``APIView``) becomes a tool. Its
schemas are what DRF's own OpenAPI generator (``rest_framework.schemas.openapi.AutoSchema``) says of
it: path, filter and pagination parameters and the serializer as the body; the response serializer
(paginated or not) as the output. A call is an inner Django request given to the view, so DRF's
authentication, permission classes, throttles, validation and exception handler decide as they do
for its HTTP clients.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..server.definition_errors import DefinitionError
from ..server.request import McpRequest
from ..server.tools.definition import Tool
from ..server.tools.registry import ToolRegistry
from ..server.tools.registry import registry as default_registry
from .inner import inner_request, located_arguments, tool_answer
from .openapi import json_schema, output_schema, register_operation, tool_input_schema

_STANDARD_ACTIONS = {
    "list": ("GET", False),
    "create": ("POST", False),
    "retrieve": ("GET", True),
    "update": ("PUT", True),
    "partial_update": ("PATCH", True),
    "destroy": ("DELETE", True),
}
_METHODS = ("get", "post", "put", "patch", "delete")


def publish_drf(
    view: type[Any],
    *actions: str,
    basename: str,
    registry: ToolRegistry | None = None,
    **tool_options: Any,
) -> list[Tool]:
    """Publish a DRF viewset's actions (or an ``APIView``'s methods) as tools named ``{basename}_{action}``.

    ``actions`` chooses some (``"list"``, ``"retrieve"``, an ``@action``'s name, or ``"get"``, ``"post"`` …
    for an ``APIView``); none: every one the view has. Path parameters (the lookup) and query parameters
    (filters, pagination) are the tool's arguments, the request serializer its ``body`` argument. Other
    options are :func:`~django_mcp.tool`'s (e.g. ``task_support="optional"``, ``permissions``).

    The view runs as the MCP caller: DRF's ``SessionAuthentication`` sees them as the request's user (no
    token or cookie of the MCP request is passed on), and the view's permission classes decide.

    Raises ``DefinitionError`` for an action the view does not have, or one that takes no JSON.
    """
    # Here: the drf extra is optional.
    from rest_framework.viewsets import ViewSetMixin

    routes = _viewset_routes(view) if issubclass(view, ViewSetMixin) else _view_routes(view)
    unknown = [name for name in actions if name not in routes]
    if unknown:
        raise DefinitionError(f"publish_drf: {view.__name__} has no action {unknown[0]!r} (it has {', '.join(routes)})")
    target = registry if registry is not None else default_registry
    return [
        _publish(target, view, f"{basename}_{name}", action, method, detail, basename, tool_options)
        for name, (action, method, detail) in routes.items()
        if not actions or name in actions
    ]


def _viewset_routes(view: type[Any]) -> dict[str, tuple[str, str, bool]]:
    routes = {
        name: (name, method, detail) for name, (method, detail) in _STANDARD_ACTIONS.items() if hasattr(view, name)
    }
    for extra in view.get_extra_actions():
        for method, action in extra.mapping.items():
            routes[action if len(extra.mapping) == 1 else f"{action}_{method}"] = (action, method.upper(), extra.detail)
    return routes


def _view_routes(view: type[Any]) -> dict[str, tuple[str, str, bool]]:
    return {method: (method, method.upper(), False) for method in _METHODS if hasattr(view, method)}


def _publish(
    target: ToolRegistry,
    view_class: type[Any],
    tool_name: str,
    action: str,
    method: str,
    detail: bool,
    basename: str,
    tool_options: Mapping[str, Any],
) -> Tool:
    # Here: the drf extra is optional.
    from rest_framework.schemas.openapi import AutoSchema
    from rest_framework.viewsets import ViewSetMixin

    is_viewset = issubclass(view_class, ViewSetMixin)
    lookup = getattr(view_class, "lookup_url_kwarg", None) or getattr(view_class, "lookup_field", "pk")
    path = f"/{basename}/{{{lookup}}}/" if detail else f"/{basename}/"
    inspected = view_class(**({"action": action} if is_viewset else {}))
    inspected.action_map = {method.lower(): action} if is_viewset else None
    inspected.request, inspected.format_kwarg, inspected.args, inspected.kwargs = None, None, (), {}
    schema = inspected.schema if isinstance(inspected.schema, AutoSchema) else AutoSchema()
    schema.view = inspected
    try:
        operation = schema.get_operation(path, method)
        definitions = {name: json_schema(value) for name, value in schema.get_components(path, method).items()}
    except Exception as exc:  # a serializer or a filter backend that cannot describe itself
        raise DefinitionError(
            f"Tool {tool_name!r}: DRF cannot describe {view_class.__name__}.{action}: {exc}"
        ) from None
    input_schema, located = tool_input_schema(tool_name, _as_sent(operation, method, definitions), definitions)
    if hasattr(inspected, "get_serializer"):
        output, wrapped = output_schema(operation.get("responses", {}), definitions)
    else:  # without a serializer DRF can only guess the answer's shape: none is promised
        output, wrapped = None, False
    view_function = view_class.as_view({method.lower(): action}) if is_viewset else view_class.as_view()
    handler = _handler(view_function, method, path, located, wrapped)
    text = operation.get("description") or view_class.__doc__
    return register_operation(
        target,
        handler,
        name=tool_name,
        method=method,
        description=(f"{action.replace('_', ' ').capitalize()} ({basename}). {text or ''}").strip(),
        input_schema=input_schema,
        output_schema=output,
        tool_options=tool_options,
    )


def _as_sent(operation: Mapping[str, Any], method: str, definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The operation as a tool sends it: a path parameter as text or a number (a URL carries both alike),
    the body required when writing, and for ``PATCH`` a body of any of the serializer's fields."""
    adjusted = dict(operation)
    adjusted["parameters"] = [
        {**parameter, "schema": {**parameter["schema"], "type": ["string", "integer"]}}
        if parameter.get("in") == "path" and parameter.get("schema", {}).get("type") == "string"
        else parameter
        for parameter in operation.get("parameters", [])
    ]
    body = operation.get("requestBody")
    if body is not None and method in ("POST", "PUT", "PATCH"):
        content = dict(body.get("content", {}))
        schema = content.get("application/json", {}).get("schema", {})
        ref = schema.get("$ref", "")
        if method == "PATCH" and ref.startswith("#/components/schemas/"):
            partial = {key: value for key, value in definitions[ref.rsplit("/", 1)[1]].items() if key != "required"}
            content["application/json"] = {**content["application/json"], "schema": partial}
        adjusted["requestBody"] = {**body, "content": content, "required": True}
    return adjusted


def _handler(
    view_function: Callable[..., Any], method: str, path: str, located: Mapping[str, str], wrapped: bool
) -> Callable[..., Any]:
    def call_view(request: McpRequest, **arguments: Any) -> dict[str, Any]:
        filled, path_args, query = located_arguments(path, located, arguments)
        response = view_function(inner_request(request, method, filled, query, arguments.get("body")), **path_args)
        if hasattr(response, "render"):
            response.render()
        return tool_answer(response, wrapped)

    return call_view

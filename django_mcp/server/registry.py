"""Where tools are registered (from ``AppConfig.ready()``) and looked up."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypedDict, TypeVar, Unpack, overload

from django.core.exceptions import ImproperlyConfigured

from .tools import TaskSupport, Tool, ToolDefinitionError, build_tool

F = TypeVar("F", bound=Callable[..., Any])


class ToolOptions(TypedDict, total=False):
    """What :func:`tool` and :meth:`ToolRegistry.register` accept besides the handler."""

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    annotations: Mapping[str, Any]
    icons: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...]
    task_support: TaskSupport
    meta: Mapping[str, Any]


class ToolRegistry:
    """An ordered set of tools with unique names.

    ``tools/list`` serves them in registration order, so the order is
    deterministic for a given project.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    @overload
    def register(self, handler: F, /, **options: Unpack[ToolOptions]) -> F: ...
    @overload
    def register(self, handler: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def register(self, handler: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
        """Register ``handler`` as a tool; used bare, or as a decorator (with or without options).

        The handler is called as ``handler(request, **arguments)`` where
        ``request`` is the :class:`~django_mcp.McpRequest`. It may be sync (run
        in a worker thread) or async. Without ``input_schema`` the schema is
        derived from the handler's type hints; a given one is served and
        validated exactly as written. ``name`` defaults to the function's
        name, ``description`` to its docstring.

        Raises ``ImproperlyConfigured`` for an invalid or duplicate name or schema.
        """

        def add(func: F) -> F:
            try:
                tool = build_tool(func, **options)
            except ToolDefinitionError as exc:
                raise ImproperlyConfigured(str(exc)) from None
            if tool.name in self._tools:
                raise ImproperlyConfigured(f"A tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool
            return func

        return add if handler is None else add(handler)

    def unregister(self, name: str) -> None:
        """Remove a tool. Raises ``KeyError`` if there is none by that name."""
        del self._tools[name]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if registered."""
        return self._tools.get(name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


registry = ToolRegistry()
"""The project-wide tool registry that :func:`tool` registers into and servers serve by default."""


@overload
def tool(handler: F, /, **options: Unpack[ToolOptions]) -> F: ...
@overload
def tool(handler: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...


def tool(handler: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
    """Register a tool in the project-wide :data:`registry`: ``@tool`` or ``@tool(name=..., ...)``.

    Takes the same options as :meth:`ToolRegistry.register`.
    """
    return registry.register(handler, **options)

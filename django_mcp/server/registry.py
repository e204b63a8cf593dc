"""Where tools are registered (from ``AppConfig.ready()``) and looked up."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, overload

from django.core.exceptions import ImproperlyConfigured

from .tools import TaskSupport, Tool, ToolDefinitionError, build_tool

F = TypeVar("F", bound=Callable[..., Any])


class ToolRegistry:
    """An ordered set of tools with unique names.

    ``tools/list`` serves them in registration order, so the order is
    deterministic for a given project.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    @overload
    def register(self, handler: F, **options: Any) -> F: ...
    @overload
    def register(self, handler: None = None, **options: Any) -> Callable[[F], F]: ...

    def register(
        self,
        handler: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...] = (),
        task_support: TaskSupport = "forbidden",
        meta: Mapping[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register ``handler`` as a tool; used bare, or as a decorator (with or without options).

        The handler is called as ``handler(request, **arguments)`` where
        ``request`` is the :class:`~django_mcp.McpRequest`. It may be sync (run
        in a worker thread) or async. Without ``input_schema`` the schema is
        derived from the handler's type hints; a given one is served and
        validated exactly as written.

        Raises ``ImproperlyConfigured`` for an invalid or duplicate name or schema.
        """

        def add(func: F) -> F:
            try:
                tool = build_tool(
                    func,
                    name=name,
                    title=title,
                    description=description,
                    input_schema=input_schema,
                    output_schema=output_schema,
                    annotations=annotations,
                    icons=icons,
                    task_support=task_support,
                    meta=meta,
                )
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
def tool(handler: F, **options: Any) -> F: ...
@overload
def tool(handler: None = None, **options: Any) -> Callable[[F], F]: ...


def tool(handler: F | None = None, **options: Any) -> F | Callable[[F], F]:
    """Register a tool in the project-wide :data:`registry`: ``@tool`` or ``@tool(name=..., ...)``.

    Takes the same options as :meth:`ToolRegistry.register`.
    """
    return registry.register(handler, **options)

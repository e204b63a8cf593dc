"""Registries of tools, prompts and resources (filled from ``AppConfig.ready()``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar, Unpack, overload

from django.core.exceptions import ImproperlyConfigured

from .tools import Tool, ToolDefinitionError, ToolOptions, build_tool

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered set of uniquely keyed items. Lists serve them in registration order.

    Changes after startup are announced to ``subscriptions/listen`` streams
    (in every server process) through the Channels layer.
    """

    kind: ClassVar[str] = ""

    def __init__(self, name: str = "default") -> None:
        self.name = name
        self._items: dict[str, T] = {}

    @property
    def channel_group(self) -> str:
        """The Channels group whose members hear about changes to this registry."""
        return f"django_mcp.{self.kind}.{self.name}"

    def _add(self, key: str, item: T) -> None:
        if key in self._items:
            raise ImproperlyConfigured(f"A {self.kind[:-1]} {key!r} is already registered")
        self._items[key] = item
        self._changed()

    def unregister(self, key: str) -> None:
        """Remove an item. Raises ``KeyError`` if there is none by that key."""
        del self._items[key]
        self._changed()

    def get(self, key: str) -> T | None:
        """The item registered under ``key``, if any."""
        return self._items.get(key)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _changed(self) -> None:
        from .notify import announce_list_changed

        announce_list_changed(self)


class ToolRegistry(Registry[Tool]):
    """The tools a server serves, by unique name."""

    kind = "tools"

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
            self._add(tool.name, tool)
            return func

        return add if handler is None else add(handler)


registry = ToolRegistry()
"""The project-wide tool registry that :func:`tool` registers into and servers serve by default."""


tool = registry.register
"""Register a tool in the project-wide :data:`registry`: ``@tool``, ``@tool(name=..., ...)`` or ``tool(func)``."""

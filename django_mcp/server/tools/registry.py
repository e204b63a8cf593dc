"""Registries of tools, prompts and resources (filled from ``AppConfig.ready()``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, Generic, TypeVar, overload

from django.apps import apps

from ...protocol.jsonrpc import notification
from ..definition_errors import DefinitionError
from ..notify import broadcast
from .definition import Tool, build_tool

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered set of uniquely keyed items. Lists serve them in registration order.

    Every registry registers the same way (``register`` bare or as a decorator,
    a :class:`~django_mcp.server.definition_errors.DefinitionError` for a definition
    that cannot be served). Changes after startup are announced to
    ``subscriptions/listen`` streams (in every server process) through the
    Channels layer.
    """

    kind: ClassVar[str] = ""

    def __init__(self, name: str = "default") -> None:
        self.name = name
        self._items: dict[str, T] = {}

    @property
    def channel_group(self) -> str:
        """The Channels group whose members hear about changes to this registry."""
        return f"django_mcp.{self.kind}.{self.name}"

    @staticmethod
    def key_of(item: T) -> str:
        """The unique key of an item (its name or URI)."""
        raise NotImplementedError

    def _register(self, handler: F | None, build: Callable[[F], T]) -> F | Callable[[F], F]:
        def add(func: F) -> F:
            self.add(build(func))
            return func

        return add if handler is None else add(handler)

    def add(self, item: T) -> None:
        """Add a built item; a second one with the same key is a ``DefinitionError``."""
        key = self.key_of(item)
        if key in self._items:
            raise DefinitionError(f"A {self.kind[:-1]} {key!r} is already registered")
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
        """Tell listeners the list changed; registrations while the apps load are not changes."""
        if apps.ready:
            broadcast(self.channel_group, notification(f"notifications/{self.kind}/list_changed", {}))


class ToolRegistry(Registry[Tool]):
    """The tools a server serves, by unique name."""

    kind = "tools"

    def scopes_used(self) -> list[str]:
        """Every OAuth scope some tool asks for, in registration order (for the resource metadata)."""
        return list(dict.fromkeys(scope for tool in self for scope in sorted(tool.scopes)))

    @staticmethod
    def key_of(item: Tool) -> str:
        return item.name

    @overload
    def register(
        self,
        handler: F,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...] = (),
        meta: Mapping[str, Any] | None = None,
        single_use_state: bool | None = None,
        scopes: Iterable[str] = (),
        permissions: Iterable[str] = (),
        timeout_seconds: float | None = None,
        rate_limit: str | None = None,
        audit_arguments: str | Iterable[str] | None = None,
        **extension_options: Any,
    ) -> F: ...
    @overload
    def register(
        self,
        handler: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...] = (),
        meta: Mapping[str, Any] | None = None,
        single_use_state: bool | None = None,
        scopes: Iterable[str] = (),
        permissions: Iterable[str] = (),
        timeout_seconds: float | None = None,
        rate_limit: str | None = None,
        audit_arguments: str | Iterable[str] | None = None,
        **extension_options: Any,
    ) -> Callable[[F], F]: ...

    def register(
        self,
        handler: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...] = (),
        meta: Mapping[str, Any] | None = None,
        single_use_state: bool | None = None,
        scopes: Iterable[str] = (),
        permissions: Iterable[str] = (),
        timeout_seconds: float | None = None,
        rate_limit: str | None = None,
        audit_arguments: str | Iterable[str] | None = None,
        **extension_options: Any,
    ) -> F | Callable[[F], F]:
        """Register ``handler`` as a tool; used bare, or as a decorator (with or without options).

        The handler is called as ``handler(request, **arguments)`` where
        ``request`` is the :class:`~django_mcp.McpRequest`. It may be sync (run
        in a worker thread) or async. Without ``input_schema`` the schema is
        derived from the handler's type hints; a given one is served and
        validated exactly as written. ``name`` defaults to the function's
        name, ``description`` to its docstring. The other options are
        :func:`~.definition.build_tool`'s; any further option (e.g. the tasks extension's
        ``task_support``) is kept for the extensions, and ``manage.py check``
        reports one that no installed extension understands.

        Raises ``DefinitionError`` (an ``ImproperlyConfigured``) for an invalid or duplicate name or schema.
        """

        def build(func: Callable[..., Any]) -> Tool:
            return build_tool(
                func,
                name=name,
                title=title,
                description=description,
                input_schema=input_schema,
                output_schema=output_schema,
                annotations=annotations,
                icons=icons,
                meta=meta,
                single_use_state=single_use_state,
                scopes=scopes,
                permissions=permissions,
                timeout_seconds=timeout_seconds,
                rate_limit=rate_limit,
                audit_arguments=audit_arguments,
                **extension_options,
            )

        return self._register(handler, build)


registry = ToolRegistry()
"""The project-wide tool registry that :func:`tool` registers into and servers serve by default."""


tool = registry.register
"""Register a tool in the project-wide :data:`registry`: ``@tool``, ``@tool(name=..., ...)`` or ``tool(func)``."""

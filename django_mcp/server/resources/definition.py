"""Resources: static URIs and RFC 6570 (level 1) URI templates, with text or binary contents."""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypedDict, TypeVar, Unpack, overload
from urllib.parse import unquote

from ...protocol.jsonrpc import compact
from ..definition_errors import PERMISSION, DefinitionError, checked_names
from ..handlers import first_parameter_takes_request
from ..prompts.definition import Completer
from ..tools.registry import Registry

F = TypeVar("F", bound=Callable[..., Any])
_VARIABLE = re.compile(r"\{([A-Za-z0-9_]+)\}")


@dataclass(frozen=True, eq=False, kw_only=True)
class _Described:
    name: str
    handler: Callable[..., Any]
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None
    icons: tuple[Mapping[str, Any], ...] = ()
    meta: Mapping[str, Any] | None = None
    permissions: tuple[str, ...] = ()
    """Django permissions the user needs to see and read it."""

    def _wire(self, address: dict[str, Any]) -> dict[str, Any]:
        return compact(
            {
                **address,
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "mimeType": self.mime_type,
                "annotations": self.annotations,
                "icons": list(self.icons),
                "_meta": self.meta,
            }
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class Resource(_Described):
    """A resource at a fixed URI; ``handler(request)`` returns its contents."""

    uri: str

    def to_wire(self) -> dict[str, Any]:
        """The ``Resource`` object of ``resources/list``."""
        return self._wire({"uri": self.uri})


@dataclass(frozen=True, eq=False, kw_only=True)
class ResourceTemplate(_Described):
    """Resources whose URIs fill ``{variables}``; ``handler(request, **variables)`` returns contents."""

    uri_template: str
    completers: Mapping[str, Completer] = field(default_factory=dict)

    @cached_property
    def variables(self) -> tuple[str, ...]:
        return tuple(_VARIABLE.findall(self.uri_template))

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        parts = _VARIABLE.split(self.uri_template)
        # split() alternates literal text and variable names.
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/?#]+)" for i, p in enumerate(parts))
        return re.compile(f"^{regex}$")

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` if it is one of this template's URIs."""
        found = self._pattern.match(uri)
        return {k: unquote(v) for k, v in found.groupdict().items()} if found else None

    def to_wire(self) -> dict[str, Any]:
        """The ``ResourceTemplate`` object of ``resources/templates/list``."""
        return self._wire({"uriTemplate": self.uri_template})


def resource_contents(uri: str, mime_type: str | None, value: Any) -> list[dict[str, Any]]:
    """Normalise what a resource handler returned into ``contents``.

    ``str`` → text contents; ``bytes`` → a base64 ``blob``; a dict is one
    contents item (``uri`` defaulted); a list holds several.
    """
    if isinstance(value, list):
        return [item for v in value for item in resource_contents(uri, mime_type, v)]
    if isinstance(value, str):
        item: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, bytes | bytearray):
        item = {"uri": uri, "blob": base64.b64encode(value).decode("ascii")}
    elif isinstance(value, dict):
        item = {"uri": uri, **value}
    else:
        raise TypeError(f"Resource {uri!r} returned {type(value).__name__}; return str, bytes, a dict or a list")
    if mime_type is not None:
        item.setdefault("mimeType", mime_type)
    return [item]


class ResourceOptions(TypedDict, total=False):
    """What :func:`~django_mcp.resource` accepts besides the URI (or URI template) and handler."""

    name: str
    title: str
    description: str
    mime_type: str
    annotations: Mapping[str, Any]
    icons: list[Mapping[str, Any]]
    meta: Mapping[str, Any]
    complete: Mapping[str, Completer]
    permissions: list[str]


class ResourceRegistry(Registry[Resource | ResourceTemplate]):
    """Static resources by URI and templates by URI template; a URI with ``{var}`` is a template."""

    kind = "resources"

    @staticmethod
    def key_of(item: Resource | ResourceTemplate) -> str:
        return item.uri if isinstance(item, Resource) else item.uri_template

    @overload
    def register(self, uri: str, handler: F, /, **options: Unpack[ResourceOptions]) -> F: ...
    @overload
    def register(self, uri: str, handler: None = None, /, **options: Unpack[ResourceOptions]) -> Callable[[F], F]: ...

    def register(
        self, uri: str, handler: F | None = None, /, **options: Unpack[ResourceOptions]
    ) -> F | Callable[[F], F]:
        """Register a resource (``handler(request)``) or, if ``uri`` has ``{variables}``, a
        template (``handler(request, **variables)``); bare or as a decorator.

        ``complete={"var": completer}`` (templates only) offers ``completion/complete`` values.
        """

        return self._register(handler, lambda func: _build(uri, func, options))

    def static(self) -> list[Resource]:
        return [r for r in self if isinstance(r, Resource)]

    def templates(self) -> list[ResourceTemplate]:
        return [r for r in self if isinstance(r, ResourceTemplate)]

    def resolve(self, uri: str) -> tuple[Resource | ResourceTemplate, dict[str, str]] | None:
        """What serves ``uri``: the static resource, else the first matching template (with its variables)."""
        found = self._items.get(uri)
        if isinstance(found, Resource):
            return found, {}
        for template in self.templates():
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None


def _build(uri: str, handler: Callable[..., Any], options: ResourceOptions) -> Resource | ResourceTemplate:
    if not isinstance(uri, str) or not uri or any(c.isspace() for c in uri):
        raise DefinitionError(f"Invalid resource URI {uri!r}")
    if not first_parameter_takes_request(handler):
        raise DefinitionError(f"Resource {uri!r}: the handler's first parameter must take the request")
    common: dict[str, Any] = {
        "name": options.get("name", getattr(handler, "__name__", uri)),
        "handler": handler,
        "title": options.get("title"),
        "description": options.get("description", inspect.getdoc(handler)),
        "mime_type": options.get("mime_type"),
        "annotations": options.get("annotations"),
        "icons": tuple(options.get("icons", ())),
        "meta": options.get("meta"),
        "permissions": tuple(
            sorted(checked_names(f"Resource {uri!r}", "permissions", options.get("permissions", ()), PERMISSION))
        ),
    }
    completers = dict(options.get("complete", {}))
    if not _VARIABLE.search(uri):
        if completers:
            raise DefinitionError(f"Resource {uri!r}: completers need a URI template with variables")
        return Resource(uri=uri, **common)
    template = ResourceTemplate(uri_template=uri, completers=completers, **common)
    unknown = set(completers) - set(template.variables)
    if unknown:
        raise DefinitionError(f"Resource template {uri!r}: completers for unknown variables: {sorted(unknown)}")
    return template


resources = ResourceRegistry()
"""The project-wide resource registry that :func:`resource` registers into."""

resource = resources.register
"""Register a resource or resource template in the project-wide :data:`resources` registry."""

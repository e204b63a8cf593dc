"""Prompts: templates of messages with string arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar, Unpack, overload

from ...protocol.errors import invalid_params
from ...protocol.jsonrpc import compact
from ..definition_errors import PERMISSION, DefinitionError, checked_names
from ..handlers import first_parameter_takes_request
from ..tools.definition import TOOL_NAME
from ..tools.registry import Registry

F = TypeVar("F", bound=Callable[..., Any])
Completer = Callable[..., Any]
"""``completer(request, value, arguments) -> list[str]`` (sync or async): suggestions for one argument."""


@dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt (values are always strings on the wire)."""

    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return compact(
            {"name": self.name, "title": self.title, "description": self.description, "required": self.required}
        )


@dataclass(frozen=True, eq=False)
class Prompt:
    """A registered prompt. Build one with :func:`django_mcp.prompt`."""

    name: str
    handler: Callable[..., Any]
    arguments: tuple[PromptArgument, ...] = ()
    title: str | None = None
    description: str | None = None
    icons: tuple[Mapping[str, Any], ...] = ()
    meta: Mapping[str, Any] | None = None
    completers: Mapping[str, Completer] = field(default_factory=dict)
    permissions: tuple[str, ...] = ()
    """Django permissions the user needs to see and get it."""

    def to_wire(self) -> dict[str, Any]:
        return compact(
            {
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "arguments": [a.to_wire() for a in self.arguments],
                "icons": list(self.icons),
                "_meta": self.meta,
            }
        )

    def validate_arguments(self, arguments: Any) -> dict[str, str]:
        """The handler's keyword arguments; -32602 for a non-object, non-string values or missing ones."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise invalid_params(f"Invalid arguments for prompt {self.name!r}: arguments must be an object")
        known = {a.name for a in self.arguments}
        missing = [a.name for a in self.arguments if a.required and a.name not in arguments]
        if missing:
            raise invalid_params(
                f"Missing required argument(s) for prompt {self.name!r}: {', '.join(missing)}",
                {"prompt": self.name, "missing": missing},
            )
        wrong = [k for k, v in arguments.items() if k in known and not isinstance(v, str)]
        if wrong:
            raise invalid_params(
                f"Prompt arguments must be strings: {', '.join(wrong)}", {"prompt": self.name, "invalid": wrong}
            )
        return {k: v for k, v in arguments.items() if k in known}


class PromptOptions(TypedDict, total=False):
    """What :func:`~django_mcp.prompt` accepts besides the handler."""

    name: str
    title: str
    description: str
    arguments: list[PromptArgument]
    icons: list[Mapping[str, Any]]
    meta: Mapping[str, Any]
    complete: Mapping[str, Completer]
    permissions: list[str]


def build_prompt(handler: Callable[..., Any], **options: Unpack[PromptOptions]) -> Prompt:
    """Describe ``handler`` as a prompt; arguments default to its parameters after the request."""
    name = options.get("name", getattr(handler, "__name__", ""))
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise DefinitionError(f"Invalid prompt name {name!r}: use 1-128 characters of [A-Za-z0-9_.-]")
    if not first_parameter_takes_request(handler):
        raise DefinitionError(f"Prompt {name!r}: the handler's first parameter must take the request")
    arguments = options.get("arguments")
    if arguments is None:
        arguments = [
            PromptArgument(p.name, required=p.default is inspect.Parameter.empty)
            for p in list(inspect.signature(handler).parameters.values())[1:]
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
    completers = dict(options.get("complete", {}))
    unknown = set(completers) - {a.name for a in arguments}
    if unknown:
        raise DefinitionError(f"Prompt {name!r}: completers for unknown arguments: {', '.join(sorted(unknown))}")
    return Prompt(
        name=name,
        handler=handler,
        arguments=tuple(arguments),
        title=options.get("title"),
        description=options.get("description", inspect.getdoc(handler)),
        icons=tuple(options.get("icons", ())),
        meta=options.get("meta"),
        completers=completers,
        permissions=tuple(
            sorted(checked_names(f"Prompt {name!r}", "permissions", options.get("permissions", ()), PERMISSION))
        ),
    )


def prompt_result(prompt: Prompt, value: Any) -> dict[str, Any]:
    """Normalise a prompt handler's return value into a ``GetPromptResult``.

    A string is one user text message; a list holds messages (dicts with
    ``role`` and ``content``) or strings; a dict with ``messages`` is already
    a result.
    """
    if isinstance(value, dict) and "messages" in value:
        result = dict(value)
    elif isinstance(value, str):
        result = {"messages": [_user_text(value)]}
    elif isinstance(value, list):
        result = {"messages": [_user_text(m) if isinstance(m, str) else m for m in value]}
    else:
        raise TypeError(f"Prompt {prompt.name!r} returned {type(value).__name__}; return a str, a list or a dict")
    if prompt.description is not None:
        result.setdefault("description", prompt.description)
    return result


def _user_text(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


class PromptRegistry(Registry[Prompt]):
    """The prompts a server serves, by unique name."""

    kind = "prompts"

    @staticmethod
    def key_of(item: Prompt) -> str:
        return item.name

    @overload
    def register(self, handler: F, /, **options: Unpack[PromptOptions]) -> F: ...
    @overload
    def register(self, handler: None = None, /, **options: Unpack[PromptOptions]) -> Callable[[F], F]: ...

    def register(self, handler: F | None = None, /, **options: Unpack[PromptOptions]) -> F | Callable[[F], F]:
        """Register ``handler(request, **arguments)`` as a prompt; bare or as a decorator.

        ``complete={"arg": completer}`` offers ``completion/complete`` values for an argument.
        """

        return self._register(handler, lambda func: build_prompt(func, **options))


prompts = PromptRegistry()
"""The project-wide prompt registry that :func:`prompt` registers into."""


prompt = prompts.register
"""Register a prompt in the project-wide :data:`prompts` registry: ``@prompt`` or ``@prompt(...)``."""

"""A tool: its wire description, its argument validation and its handler."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.exceptions import ValidationError as SchemaValidationError
from pydantic import BaseModel, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema

from ...conf import check_rate
from ...protocol.errors import invalid_params
from ...protocol.headers import ParamHeader, param_headers
from ...protocol.jsonrpc import compact
from ..definition_errors import PERMISSION, SCOPE_TOKEN, DefinitionError, checked_names
from ..handlers import first_parameter_takes_request

TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # used with fullmatch
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, eq=False)
class Tool:
    """A registered tool. Build one with :func:`django_mcp.tool` or ``registry.register``."""

    name: str
    handler: Callable[..., Any]
    input_schema: Mapping[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    icons: tuple[Mapping[str, Any], ...] = ()
    meta: Mapping[str, Any] | None = None
    extension_options: Mapping[str, Any] = field(default_factory=dict)
    """Options meant for extensions (e.g. ``task_support``), checked against a server's plugins."""
    single_use_state: bool = False
    """Whether a ``requestState`` of this tool's MRTR rounds is refused when presented a second time."""
    scopes: frozenset[str] = frozenset()
    """OAuth scopes a bearer token needs to call it (beyond the endpoint's): 403 ``insufficient_scope``."""
    permissions: tuple[str, ...] = ()
    """Django permissions (``"app.codename"``) the user needs to see and call it."""
    timeout_seconds: float | None = None
    """How long a call answered in the request may run; past it the call answers an error (a task's body
    has its own limit, the tasks extension's ``task_timeout_seconds``)."""
    rate_limit: str | None = None
    """Calls per caller and period (``"10/m"``), on top of ``DJANGO_MCP["RATE_LIMIT"]``."""
    audit_arguments: str | tuple[str, ...] | None = None
    """What the audit log keeps of a call's arguments: ``"none"``, ``"all"``, or the keys to redact;
    None: ``DJANGO_MCP["AUDIT_ARGUMENTS"]``."""
    # Set when the schema was derived from the signature: arguments are then
    # converted to the annotated types before the handler sees them.
    arguments_model: type[BaseModel] | None = field(default=None, repr=False)

    @cached_property
    def _input_validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.input_schema)

    @cached_property
    def _output_validator(self) -> Draft202012Validator | None:
        return Draft202012Validator(self.output_schema) if self.output_schema is not None else None

    @cached_property
    def param_headers(self) -> tuple[ParamHeader, ...]:
        return param_headers(self.input_schema)

    @cached_property
    def _accepted_keywords(self) -> frozenset[str] | None:
        """Argument names the handler takes, or None if it takes ``**kwargs``."""
        params = list(inspect.signature(self.handler).parameters.values())[1:]
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return None
        return frozenset(p.name for p in params)

    def to_wire(self) -> dict[str, Any]:
        """The ``Tool`` object of ``tools/list``. The input schema goes out exactly as declared."""
        return compact(
            {
                "name": self.name,
                "title": self.title,
                "description": self.description,
                "inputSchema": self.input_schema,
                "outputSchema": self.output_schema,
                "annotations": self.annotations,
                "icons": list(self.icons),
                "_meta": self.meta,
            }
        )

    def validate_arguments(self, arguments: Any) -> dict[str, Any]:
        """Check ``arguments`` against the input schema and return the handler's keyword arguments.

        Raises -32602 naming the failing path.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise invalid_params(f"Invalid arguments for tool {self.name!r}: arguments must be an object")
        converted: dict[str, Any] | None = None
        if self._plain_arguments:
            # The schema was generated from the model and describes JSON values of plain types: a
            # value the model accepts unchanged (same types all the way down) is one the schema
            # accepts, so the schema's own pass would only repeat the work. Anything converted or
            # refused goes through the schema below, which words the error.
            try:
                converted = self._converted(arguments)
            except ValidationError:
                pass
            else:
                if all(_same(value, arguments[name]) for name, value in converted.items()):
                    return self._with_extras(converted, arguments)
        error = _first_error(self._input_validator, arguments)
        if error is not None:
            raise invalid_params(
                f"Invalid arguments for tool {self.name!r} at {error[0]}: {error[1]}",
                {"tool": self.name, "path": error[0]},
            )
        if self.arguments_model is not None:
            try:
                if converted is None:  # the model's conversion above is kept: it cannot differ
                    converted = self._converted(arguments)
            except ValidationError as exc:
                loc = json_pointer(exc.errors()[0]["loc"])
                raise invalid_params(
                    f"Invalid arguments for tool {self.name!r} at {loc}: {exc.errors()[0]['msg']}",
                    {"tool": self.name, "path": loc},
                ) from None
            return self._with_extras(converted, arguments)
        accepted = self._accepted_keywords
        return dict(arguments) if accepted is None else {k: v for k, v in arguments.items() if k in accepted}

    @cached_property
    def _plain_arguments(self) -> bool:
        """Whether the arguments model's fields are all of JSON's own types (see ``_plain``)."""
        model = self.arguments_model
        return model is not None and all(
            not field.metadata and field.json_schema_extra is None and _plain(field.annotation)
            for field in model.model_fields.values()
        )

    def _converted(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The given arguments as the arguments model converts them (raises pydantic's ``ValidationError``)."""
        assert self.arguments_model is not None
        model = self.arguments_model.model_validate(arguments)
        return {name: getattr(model, name) for name in type(model).model_fields if name in arguments}

    def _with_extras(self, converted: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
        if self._accepted_keywords is None:  # the handler takes **kwargs: extra arguments too
            converted.update({k: v for k, v in arguments.items() if k not in converted})
        return converted

    def output_error(self, structured: Any) -> str | None:
        """Why ``structured`` does not match the output schema, or None if it does."""
        if self._output_validator is None:
            return None
        error = _first_error(self._output_validator, structured)
        return None if error is None else f"{error[0]}: {error[1]}"


_PLAIN_TYPES: tuple[Any, ...] = (str, int, float, bool, type(None), Any)


def _plain(annotation: Any) -> bool:
    """A type built from JSON's own (``str``, ``int`` … ``list[…]``, ``dict[str, …]``, unions, literals).

    For these, pydantic's JSON Schema says exactly which JSON values the model takes without
    converting them: no format, no custom validator, no schema override (``Annotated`` is not plain).
    """
    if any(annotation is plain for plain in _PLAIN_TYPES):
        return True
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return all(isinstance(arg, str | int | bool) or arg is None for arg in args)
    if origin is Union or origin is UnionType or origin is list:
        return all(_plain(arg) for arg in args)
    if origin is dict:
        return len(args) == 2 and args[0] is str and _plain(args[1])
    return False


def _same(converted: Any, given: Any) -> bool:
    """Whether pydantic handed back ``given`` unchanged: equal, and of the same types all the way down."""
    if type(converted) is not type(given):
        return False
    if isinstance(given, dict):
        return converted.keys() == given.keys() and all(_same(converted[k], v) for k, v in given.items())
    if isinstance(given, list):
        return len(converted) == len(given) and all(_same(c, g) for c, g in zip(converted, given, strict=True))
    return bool(converted == given)


def _first_error(validator: Draft202012Validator, instance: Any) -> tuple[str, str] | None:
    best: SchemaValidationError | None = None
    for err in validator.iter_errors(instance):
        if best is None or len(err.absolute_path) > len(best.absolute_path):
            best = err
    if best is None:
        return None
    return json_pointer(best.absolute_path), best.message


def json_pointer(parts: Iterable[Any]) -> str:
    """RFC 6901: ``""`` for the root, ``/a~1b`` for the key ``a/b``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def build_tool(
    handler: Callable[..., Any],
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
) -> Tool:
    """Describe ``handler`` as a tool, deriving what was not given from its signature and docstring.

    ``single_use_state`` defaults to the ``destructiveHint`` annotation: a destructive action's
    ``requestState`` (its confirmation) cannot be replayed. ``scopes`` are the OAuth scopes a
    bearer token needs to call it; ``permissions`` the Django permissions its user needs to see
    and call it (see docs/sign-in.md). ``timeout_seconds`` bounds a call answered in the request; ``rate_limit``
    (``"10/m"``) how often one caller may call it; ``audit_arguments`` what the audit log keeps of its
    arguments.
    """
    tool_name = _checked_name(handler, name)
    model: type[BaseModel] | None = None
    if input_schema is None:
        model = _arguments_model(handler, tool_name, list(inspect.signature(handler).parameters.values())[1:])
        input_schema = model.model_json_schema(schema_generator=_UntitledSchema)
        input_schema.setdefault("properties", {})
    _check_schemas(tool_name, input_schema, output_schema)
    _check_timeout(tool_name, timeout_seconds)
    if rate_limit is not None:
        try:
            check_rate(rate_limit)
        except (ValueError, TypeError, AttributeError) as exc:
            raise DefinitionError(f"Tool {tool_name!r}: {exc}") from None
    tool = Tool(
        name=tool_name,
        handler=handler,
        input_schema=input_schema,
        description=description if description is not None else inspect.getdoc(handler),
        title=title,
        output_schema=output_schema,
        annotations=annotations,
        icons=tuple(icons),
        meta=meta,
        extension_options=extension_options,
        single_use_state=(
            bool((annotations or {}).get("destructiveHint")) if single_use_state is None else single_use_state
        ),
        arguments_model=model,
        scopes=checked_names(f"Tool {tool_name!r}", "scopes", scopes, SCOPE_TOKEN),
        permissions=tuple(sorted(checked_names(f"Tool {tool_name!r}", "permissions", permissions, PERMISSION))),
        timeout_seconds=timeout_seconds,
        rate_limit=rate_limit,
        audit_arguments=_checked_audit(tool_name, audit_arguments),
    )
    try:
        tool.param_headers  # noqa: B018 - validate x-mcp-header annotations now, not per call
    except ValueError as exc:
        raise DefinitionError(f"Tool {tool_name!r}: {exc}") from None
    return tool


def _checked_name(handler: Callable[..., Any], name: str | None) -> str:
    if not callable(handler):
        raise DefinitionError(f"Tool handler {handler!r} is not callable")
    tool_name = name if name is not None else getattr(handler, "__name__", "")
    if not isinstance(tool_name, str) or not TOOL_NAME.fullmatch(tool_name):
        raise DefinitionError(
            f"Invalid tool name {tool_name!r}: use 1-128 characters of letters, digits, '_', '-' and '.'"
        )
    if not first_parameter_takes_request(handler):
        raise DefinitionError(
            f"Tool {tool_name!r}: the handler's first parameter must take the request "
            f"(e.g. `def {tool_name}(request, ...)`)"
        )
    return tool_name


def _check_schemas(tool_name: str, input_schema: Mapping[str, Any], output_schema: Mapping[str, Any] | None) -> None:
    for label, schema in (("input_schema", input_schema), ("output_schema", output_schema)):
        if schema is None:
            continue
        if not isinstance(schema, Mapping):
            raise DefinitionError(f"Tool {tool_name!r}: {label} must be a JSON Schema object")
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise DefinitionError(f"Tool {tool_name!r}: {label} is not a valid JSON Schema: {exc.message}") from None
    if input_schema.get("type") != "object":
        raise DefinitionError(f'Tool {tool_name!r}: input_schema must have "type": "object"')


def _check_timeout(tool_name: str, timeout_seconds: float | None) -> None:
    if timeout_seconds is not None and (
        isinstance(timeout_seconds, bool)
        or not isinstance(timeout_seconds, int | float)
        or not 0 < timeout_seconds < float("inf")
    ):
        raise DefinitionError(f"Tool {tool_name!r}: timeout_seconds must be a positive number, not {timeout_seconds!r}")


def _checked_audit(tool_name: str, audit_arguments: str | Iterable[str] | None) -> str | tuple[str, ...] | None:
    if audit_arguments is None:
        return None
    if isinstance(audit_arguments, str):
        if audit_arguments not in ("none", "all"):
            raise DefinitionError(
                f"Tool {tool_name!r}: audit_arguments is 'none', 'all' or a list of keys to redact, "
                f"not {audit_arguments!r}"
            )
        return audit_arguments
    keys: list[Any] = list(audit_arguments) if isinstance(audit_arguments, list | tuple | set | frozenset) else [0]
    if not all(isinstance(key, str) for key in keys):
        raise DefinitionError(f"Tool {tool_name!r}: audit_arguments is 'none', 'all' or a list of keys to redact")
    return tuple(keys)


class _UntitledSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema without the ``title`` it invents for every field and model."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: Any, mode: Any = "validation") -> Any:
        result = super().generate(schema, mode)
        result.pop("title", None)
        for definition in result.get("$defs", {}).values():
            definition.pop("title", None)
        return result


def _arguments_model(handler: Callable[..., Any], tool_name: str, params: list[inspect.Parameter]) -> type[BaseModel]:
    try:
        hints = get_type_hints(handler, include_extras=True)
    except Exception as exc:  # unresolvable forward references
        raise DefinitionError(f"Tool {tool_name!r}: cannot read the handler's type hints: {exc}") from None
    fields: dict[str, Any] = {}
    for p in params:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise DefinitionError(f"Tool {tool_name!r}: argument {p.name!r} cannot be positional-only")
        annotation = hints.get(p.name, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (annotation, default)
    try:
        return create_model(f"{tool_name}_arguments", **fields)
    except Exception as exc:
        raise DefinitionError(f"Tool {tool_name!r}: cannot build an input schema: {exc}") from None

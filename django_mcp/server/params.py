"""Typed ``params`` of the core methods, validated before a handler runs (-32602 otherwise).

Every model allows extra members (``_meta``, MRTR's ``inputResponses`` and
``requestState``, future fields): only what a handler reads is checked here.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from ..protocol.errors import invalid_params
from ..protocol.jsonrpc import describe_validation_error

P = TypeVar("P", bound=BaseModel)

MAX_LISTEN_RESOURCES = 1000
"""At most this many ``resourceSubscriptions`` per listen stream (each one holds a group membership)."""


class Params(BaseModel):
    """Base of every params model: extra members are allowed and kept."""

    model_config = ConfigDict(extra="allow")


class ListParams(Params):
    cursor: Any = None  # opaque: pagination reads it and answers -32602 for anything it did not issue


class CallToolParams(Params):
    name: StrictStr
    arguments: Any = None  # checked against the tool's own schema, with a message naming the tool


class GetPromptParams(Params):
    name: StrictStr
    arguments: Any = None  # checked by the prompt, with a message naming it


class ReadResourceParams(Params):
    uri: StrictStr


class CompletionReference(Params):
    type: Literal["ref/prompt", "ref/resource"]
    name: StrictStr | None = None
    uri: StrictStr | None = None


class CompletionArgument(Params):
    name: StrictStr
    value: StrictStr = ""


class CompletionContext(Params):
    arguments: dict[str, StrictStr] = {}


class CompleteParams(Params):
    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None


class ListenFilter(Params):
    """``notifications`` of ``subscriptions/listen``; extensions read their own keys from the extras."""

    toolsListChanged: StrictBool = False  # noqa: N815 - wire names
    promptsListChanged: StrictBool = False  # noqa: N815
    resourcesListChanged: StrictBool = False  # noqa: N815
    resourceSubscriptions: list[StrictStr] = Field(default=[], max_length=MAX_LISTEN_RESOURCES)  # noqa: N815


class ListenParams(Params):
    notifications: ListenFilter


def parse_params(model: type[P], method: str, params: dict[str, Any]) -> P:
    """``params`` as ``model``, or -32602 saying where it does not fit."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise invalid_params(f"Invalid params for {method}: {describe_validation_error(exc)}") from None

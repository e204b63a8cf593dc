"""Multi round-trip requests (SEP-2322): asking the client for input mid-request.

A handler calls ``await request.ask({...})``. If the client already answered
(this round's ``inputResponses``, or earlier rounds carried in the signed
``requestState``) the answers come back; otherwise the request ends with
``resultType: "input_required"`` and the client retries with the answers.
The handler runs again from the top on each round, so it must be idempotent
up to its ``ask`` calls.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from django.core import signing
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, ValidationError

from ..conf import get_settings
from ..protocol.errors import invalid_params, missing_capability
from ..protocol.jsonrpc import describe_validation_error
from ..shared_caches import shared_cache
from .outages import unavailable

logger = logging.getLogger("django_mcp")

MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_SALT = "django_mcp.mrtr.request-state"


class ElicitAnswer(BaseModel):
    """The client's answer to :func:`elicit`: ``action`` and, when accepted, ``content``.

    Unvalidated client input unless the request was made with ``validate=True``.
    """

    model_config = ConfigDict(extra="allow")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class SamplingAnswer(BaseModel):
    """The client's answer to :func:`sample` (a ``CreateMessageResult``). Unvalidated client input."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    role: Literal["user", "assistant"]
    content: dict[str, Any] | list[dict[str, Any]]
    model: str | None = None
    stopReason: str | None = None  # noqa: N815 - the wire name


class Root(BaseModel):
    model_config = ConfigDict(extra="allow")

    uri: str
    name: str | None = None


class RootsAnswer(BaseModel):
    """The client's answer to :func:`list_roots`. Unvalidated client input."""

    model_config = ConfigDict(extra="allow")

    roots: list[Root]


A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class InputRequest(Generic[A]):
    """One request for client input.

    Build one with :func:`elicit`, :func:`elicit_url`, :func:`sample` or :func:`list_roots`.
    """

    method: str
    params: dict[str, Any]
    answer_type: type[A]
    required_capability: dict[str, Any]
    validate: bool = field(default=False, compare=False)

    def to_wire(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}

    def declared_by(self, capabilities: Mapping[str, Any]) -> bool:
        """Whether a client with these capabilities may be sent this request."""
        (kind, sub), *_ = self.required_capability.items()
        declared = capabilities.get(kind)
        if not isinstance(declared, dict):
            return False
        if kind == "elicitation":
            # An empty elicitation object means form mode only.
            mode = next(iter(sub), "form")
            return mode in declared or (mode == "form" and not declared)
        return True

    def parse(self, key: str, raw: Any) -> A:
        try:
            answer = self.answer_type.model_validate(raw)
        except ValidationError as exc:
            raise invalid_params(
                f"Invalid input response {key!r}: {describe_validation_error(exc)}", {"inputResponse": key}
            ) from None
        if self.validate and isinstance(answer, ElicitAnswer) and answer.action == "accept":
            errors = list(Draft202012Validator(self.params["requestedSchema"]).iter_errors(answer.content or {}))
            if errors:
                raise invalid_params(
                    f"Input response {key!r} does not match the requested schema: {errors[0].message}",
                    {"inputResponse": key},
                )
        return answer


def refuse_undeclared(requests: Iterable[InputRequest[Any]], capabilities: Mapping[str, Any]) -> None:
    """-32021 naming every capability the client did not declare that one of ``requests`` needs."""
    required: dict[str, Any] = {}
    for request in requests:
        if not request.declared_by(capabilities):
            for kind, sub in request.required_capability.items():
                required.setdefault(kind, {}).update(sub)
    if required:
        raise missing_capability(required)


def elicit(message: str, requested_schema: Mapping[str, Any], *, validate: bool = False) -> InputRequest[ElicitAnswer]:
    """Ask the user to fill a form (``elicitation/create``, form mode).

    With ``validate=True`` an accepted answer must match ``requested_schema``
    (else -32602); otherwise the content is unvalidated client input.
    """
    return InputRequest(
        "elicitation/create",
        {"mode": "form", "message": message, "requestedSchema": dict(requested_schema)},
        ElicitAnswer,
        {"elicitation": {}},
        validate,
    )


def elicit_url(message: str, url: str, elicitation_id: str) -> InputRequest[ElicitAnswer]:
    """Send the user to ``url`` (``elicitation/create``, URL mode)."""
    return InputRequest(
        "elicitation/create",
        {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id},
        ElicitAnswer,
        {"elicitation": {"url": {}}},
    )


def sample(
    messages: list[dict[str, Any]], *, max_tokens: int, system_prompt: str | None = None, **params: Any
) -> InputRequest[SamplingAnswer]:
    """Ask the client's model for a completion (``sampling/createMessage``)."""
    body: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **params}
    if system_prompt is not None:
        body["systemPrompt"] = system_prompt
    return InputRequest("sampling/createMessage", body, SamplingAnswer, {"sampling": {}})


def list_roots() -> InputRequest[RootsAnswer]:
    """Ask for the client's roots (``roots/list``)."""
    return InputRequest("roots/list", {}, RootsAnswer, {"roots": {}})


class InputRequired(Exception):
    """Raised by ``ask`` when answers are missing; dispatch turns it into an ``input_required`` result."""

    def __init__(self, input_requests: dict[str, Any], request_state: str) -> None:
        super().__init__("input required")
        self.input_requests = input_requests
        self.request_state = request_state

    def to_result(self) -> dict[str, Any]:
        return {
            "resultType": "input_required",
            "inputRequests": self.input_requests,
            "requestState": self.request_state,
        }


def binding(principal: str, method: str, params: Mapping[str, Any]) -> str:
    """A digest of who asked what: the principal, the method, its target and its arguments."""
    subject = {
        "principal": principal,
        "method": method,
        "target": params.get("name", params.get("uri")),
        "arguments": params.get("arguments") or {},  # omitted and {} are the same call
    }
    return hashlib.sha256(json.dumps(subject, sort_keys=True, default=str).encode()).hexdigest()


def issue_state(bound_to: str, answers: Mapping[str, Any]) -> str:
    """A signed, timestamped ``requestState`` carrying the answers gathered so far, and an id of its own."""
    return signing.dumps({"b": bound_to, "a": dict(answers), "n": secrets.token_hex(12)}, salt=_SALT, compress=True)


def read_state(token: Any, bound_to: str, max_age: int) -> dict[str, Any]:
    """The payload of a ``requestState`` (its answers ``a``, its id ``n``); -32602 if tampered, expired or
    bound to another request."""
    if not isinstance(token, str):
        raise invalid_params("Invalid requestState: must be a string")
    try:
        payload = signing.loads(token, salt=_SALT, max_age=max_age)
    except signing.SignatureExpired:
        raise invalid_params("requestState has expired: start the request again") from None
    except signing.BadSignature:
        raise invalid_params("Invalid requestState: it was not issued by this server or was altered") from None
    if not isinstance(payload, dict) or payload.get("b") != bound_to or not isinstance(payload.get("a"), dict):
        raise invalid_params("Invalid requestState: it belongs to another request or principal")
    return payload


async def aconsume_state(state_id: str, max_age: int) -> None:
    """Record that the ``requestState`` ``state_id`` was used, in the shared cache; -32602 if it was before.

    Kept as long as the state could be presented (its maximum age), so a replay is refused on every
    worker that shares the cache.
    """
    cache = shared_cache(get_settings().SESSION_CACHE)
    try:
        first = await cache.aadd(f"django_mcp.mrtr.used.{state_id}", 1, timeout=max_age + 1)
    except Exception as exc:  # a cache backend may fail in any way: without the record, refuse (and say why)
        answer = "Cannot check this requestState (the cache is unavailable): try again"
        raise unavailable(logger, "mrtr-cache", "The cache of used requestStates", exc, answer) from None
    if not first:
        raise invalid_params("requestState was already used: this action runs once per confirmation; start it again")


class InputRounds:
    """The input gathered for one request across rounds (state) and in this round (responses)."""

    def __init__(self, params: Mapping[str, Any], bound_to: str, max_age: int) -> None:
        self._presented = params
        responses = params.get("inputResponses", {})
        if not isinstance(responses, dict):
            raise invalid_params("Invalid params: inputResponses must be an object")
        self._bound_to = bound_to
        self._max_age = max_age
        state = read_state(params["requestState"], bound_to, max_age) if "requestState" in params else {}
        self._earlier: dict[str, Any] = state.get("a", {})
        self._state_id: str | None = state.get("n") if isinstance(state.get("n"), str) else None
        self._responses: dict[str, Any] = responses
        self._asked: dict[str, Any] = {}

    async def aconsume(self) -> None:
        """Make the presented ``requestState`` single-use (-32602 if it was used before); none: nothing to do."""
        if "requestState" in self._presented:
            if self._state_id is None:  # issued before states had ids: it cannot be told apart, so refuse it
                raise invalid_params("requestState is from an older server version: start the request again")
            await aconsume_state(self._state_id, self._max_age)

    def ask(self, requests: Mapping[str, InputRequest[Any]], capabilities: Mapping[str, Any]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        missing: dict[str, InputRequest[Any]] = {}
        for key, request in requests.items():
            raw = self._earlier.get(key, self._responses.get(key))
            if raw is None:
                missing[key] = request
                continue
            answers[key] = request.parse(key, raw)
            self._asked[key] = raw
        if not missing:
            return answers
        refuse_undeclared(missing.values(), capabilities)
        raise InputRequired(
            {key: r.to_wire() for key, r in missing.items()},
            issue_state(self._bound_to, {**self._earlier, **self._asked}),
        )

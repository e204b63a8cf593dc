"""Routing headers (SEP-2243): value decoding and ``x-mcp-header`` tool parameters."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import header_mismatch

_SENTINEL_PREFIX = "=?base64?"
_SENTINEL_SUFFIX = "?="
_OWS = " \t"
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token (used with fullmatch)
_JSON_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
# Keywords whose values are maps of name -> schema, and keywords whose values are data, not schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_HEADER_TYPES = ("string", "integer", "boolean")
_MISSING = object()


def decode_value(raw: str, header: str) -> str:
    """The value a routing header carries: whitespace-trimmed, base64 sentinel decoded.

    Raises -32020 for characters outside visible ASCII or a malformed sentinel.
    """
    value = raw.strip(_OWS)
    if not (value.isascii() and value.isprintable()):  # visible ASCII and space: 0x20-0x7E
        raise header_mismatch(f"Header {header} contains characters outside visible ASCII", header)
    if value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX) and len(value) >= 11:
        encoded = value[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
        try:
            decoded = base64.b64decode(encoded, validate=True)
            if base64.b64encode(decoded).decode("ascii") != encoded:
                raise ValueError("non-canonical base64")
            return decoded.decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise header_mismatch(f"Header {header} has a malformed base64 value", header) from None
    return value


def encode_value(value: str) -> str:
    """A routing header's value as a client sends it: as is when plain visible ASCII, else the base64 sentinel."""
    if value.isascii() and value.isprintable() and value == value.strip() and not value.startswith(_SENTINEL_PREFIX):
        return value
    return _SENTINEL_PREFIX + base64.b64encode(value.encode()).decode() + _SENTINEL_SUFFIX


@dataclass(frozen=True)
class ParamHeader:
    """A tool argument mirrored into an ``Mcp-Param-{name}`` header."""

    name: str
    path: tuple[str, ...]
    type: str

    @property
    def header(self) -> str:
        return f"Mcp-Param-{self.name}"


def param_headers(input_schema: Mapping[str, Any]) -> tuple[ParamHeader, ...]:
    """The ``x-mcp-header`` annotations of a tool's input schema.

    Raises ``ValueError`` for an annotation that clients would reject: on a
    property that is not a string, integer or boolean, not reachable from the
    root through ``properties`` alone, not an RFC 9110 token, or a duplicate.
    """
    found = list(_walk_properties(input_schema, ()))
    seen: set[str] = set()
    for ph in found:
        if not isinstance(ph.name, str) or not _TOKEN.fullmatch(ph.name):
            raise ValueError(f"x-mcp-header {ph.name!r} at {'.'.join(ph.path)} is not an RFC 9110 token")
        if ph.type not in _HEADER_TYPES:
            raise ValueError(
                f"x-mcp-header {ph.name!r} at {'.'.join(ph.path)} must annotate a string, integer or boolean property"
            )
        if ph.name.lower() in seen:
            raise ValueError(f"x-mcp-header {ph.name!r} is used twice (names are case-insensitive)")
        seen.add(ph.name.lower())
    if _count_annotations(input_schema) != len(found):
        raise ValueError("x-mcp-header may only annotate properties reachable from the root through 'properties'")
    return tuple(found)


def param_header_values(specs: tuple[ParamHeader, ...], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a client sends for ``arguments`` (lower-case names, encoded values)."""
    headers = {}
    for spec in specs:
        value: Any = arguments
        for key in spec.path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None:
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            headers[spec.header.lower()] = encode_value(text)
    return headers


def _walk_properties(schema: Mapping[str, Any], path: tuple[str, ...]) -> Iterator[ParamHeader]:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return
    for key, sub in props.items():
        if not isinstance(sub, Mapping):
            continue
        if "x-mcp-header" in sub:
            yield ParamHeader(sub["x-mcp-header"], (*path, key), str(sub.get("type")))
        yield from _walk_properties(sub, (*path, key))


def _count_annotations(schema: Any) -> int:
    """``x-mcp-header`` annotations anywhere in a schema (a property merely *named* so is not one)."""
    if isinstance(schema, list):
        return sum(_count_annotations(v) for v in schema)
    if not isinstance(schema, Mapping):
        return 0
    count = int("x-mcp-header" in schema)
    for keyword, value in schema.items():
        if keyword in _DATA_KEYWORDS or keyword == "x-mcp-header":
            continue
        if keyword in _SCHEMA_MAPS and isinstance(value, Mapping):
            count += sum(_count_annotations(v) for v in value.values())
        else:
            count += _count_annotations(value)
    return count


def check_param_headers(
    specs: tuple[ParamHeader, ...], arguments: Mapping[str, Any], headers: Mapping[str, str]
) -> None:
    """Every annotated argument must be mirrored, exactly, by its header (-32020 otherwise).

    ``headers`` has lower-case names.
    """
    for spec in specs:
        value: Any = arguments
        for key in spec.path:
            value = value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING
        raw = headers.get(spec.header.lower())
        if value is _MISSING or value is None:
            if raw is not None:
                raise header_mismatch(f"Header {spec.header} is set but the argument is absent", spec.header)
            continue
        if raw is None:
            raise header_mismatch(f"Header {spec.header} is required when the argument is present", spec.header)
        if not _same_value(decode_value(raw, spec.header), value, spec.type):
            raise header_mismatch(f"Header {spec.header} does not match the argument's value", spec.header)


def _same_value(header_value: str, body_value: Any, type_: str) -> bool:
    if type_ == "boolean":
        return isinstance(body_value, bool) and header_value == ("true" if body_value else "false")
    if type_ == "integer":
        if isinstance(body_value, bool) or not isinstance(body_value, int | float):
            return False
        # Exact and JSON-only: 42 == 42.0, but no float rounding above 2**53 and no "4_2".
        if not _JSON_NUMBER.fullmatch(header_value):
            return False
        try:
            return Decimal(header_value) == Decimal(body_value)
        except InvalidOperation:  # an exponent past what Decimal holds ("1e99999999999999999999")
            return False
    return isinstance(body_value, str) and header_value == body_value

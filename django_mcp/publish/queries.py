"""``publish_query``: a read-only query tool over a model, safe by construction.

What the tool can touch is decided when it is published, never by its arguments: the fields it
returns, the lookups it filters with, the orderings it sorts by. The input schema lists exactly those
(``additionalProperties: false``), so the validation ladder refuses anything else with -32602 before
the handler runs; the handler checks again, and reads rows with ``values(*fields)`` only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import QuerySet

from ..protocol.errors import invalid_params
from ..server.definition_errors import DefinitionError
from ..server.request import McpRequest
from ..server.results import ToolError
from ..server.tools.definition import Tool
from ..server.tools.registry import ToolRegistry
from ..server.tools.registry import registry as default_registry

# Lookups a published field may allow: comparisons and text matches. Regular expressions are left
# out (a caller's pattern can make the database work for a long time), as are transforms.
SAFE_LOOKUPS = frozenset(
    {
        "exact",
        "iexact",
        "contains",
        "icontains",
        "startswith",
        "istartswith",
        "endswith",
        "iendswith",
        "gt",
        "gte",
        "lt",
        "lte",
        "in",
        "range",
        "isnull",
    }
)
_TEXT_LOOKUPS = frozenset({"iexact", "contains", "icontains", "startswith", "istartswith", "endswith", "iendswith"})
MAX_IN_VALUES = 100
MAX_TEXT_VALUE = 10_000
"""The longest text a filter takes where the field sets no ``max_length`` (SQLite's LIKE takes 50,000 bytes)."""
_INT64 = {"minimum": -(2**63), "maximum": 2**63 - 1}  # what any database's widest integer column holds

Narrow = Callable[[McpRequest, QuerySet[Any]], QuerySet[Any]]


def publish_query(
    model: type[models.Model] | QuerySet[Any],
    *,
    name: str,
    fields: Mapping[str, Sequence[str]],
    ordering: Sequence[str] = (),
    narrow: Narrow | None = None,
    max_results: int = 100,
    default_results: int = 20,
    max_offset: int = 10_000,
    max_count: int = 1_000,
    permissions: Iterable[str] | None = None,
    description: str | None = None,
    registry: ToolRegistry | None = None,
    **tool_options: Any,
) -> Tool:
    """Publish a read-only query over ``model`` (a model class or a queryset) as the tool ``name``.

    ``fields`` maps each field the tool may return to the lookups a caller may filter it with
    (``{"title": ["icontains"], "year": ["gte", "lte"], "author__name": ["exact"]}``; ``[]``: returned,
    not filtered on). A path through a relation is published only as written: ``author__name`` gives
    nothing else of ``author``. ``ordering`` names the fields a caller may sort by (either direction).
    ``narrow(request, queryset)`` returns the rows this caller may see (e.g. their own). Results come
    ``default_results`` at a time, at most ``max_results``, from an offset of at most ``max_offset``; a
    count, when asked for, stops at ``max_count``. The user needs the model's ``view`` permission
    unless ``permissions`` says otherwise. Other options are :func:`~django_mcp.tool`'s (e.g.
    ``task_support``, ``timeout_seconds``).

    Raises ``DefinitionError`` for a field, lookup or ordering that cannot be published.
    """
    queryset = model.all() if isinstance(model, QuerySet) else model._default_manager.all()
    meta = queryset.model._meta
    published = {path: _published_field(name, queryset.model, path, lookups) for path, lookups in fields.items()}
    if not published:
        raise DefinitionError(f"Tool {name!r}: publish at least one field")
    for key in ordering:
        if key not in published:
            raise DefinitionError(f"Tool {name!r}: ordering {key!r} is not one of the published fields")
    if not 1 <= default_results <= max_results:
        raise DefinitionError(f"Tool {name!r}: default_results must be between 1 and max_results ({max_results})")
    filters = {
        (path if lookup == "exact" else f"{path}__{lookup}"): _value_schema(field, lookup)
        for path, (field, lookups, _) in published.items()
        for lookup in lookups
    }
    query = _Query(
        queryset,
        tuple(published),
        frozenset(filters),
        tuple(ordering),
        narrow,
        max_results,
        default_results,
        max_offset,
        max_count,
    )
    row = {
        "type": "object",
        "properties": {path: _output_schema(field, nullable) for path, (field, _, nullable) in published.items()},
    }
    output_schema = {
        "type": "object",
        "properties": {
            "results": {"type": "array", "items": row},
            "hasMore": {"type": "boolean"},
            "nextOffset": {"type": ["integer", "null"]},
            "count": {"type": "integer", "description": f"the matches, counted up to {max_count}"},
            "countIsExact": {"type": "boolean"},
        },
        "required": ["results", "hasMore", "nextOffset"],
    }
    order_terms = [term for key in ordering for term in (key, f"-{key}")]
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "description": "Conditions all rows match: a field for equality, field__lookup for the others.",
                "properties": filters,
                "additionalProperties": False,
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": max_results, "default": default_results},
            "offset": {"type": "integer", "minimum": 0, "maximum": max_offset, "default": 0},
            "count": {
                "type": "boolean",
                "default": False,
                "description": f"Also count the matches (up to {max_count}).",
            },
        },
        "additionalProperties": False,
    }
    if order_terms:
        input_schema["properties"]["order_by"] = {
            "type": "array",
            "items": {"enum": order_terms},
            "maxItems": len(ordering),
            "description": "Fields to sort by, '-' first for descending.",
        }
    target = registry if registry is not None else default_registry
    target.register(
        query,
        name=name,
        description=description or f"Search {meta.verbose_name_plural}: returns {', '.join(published)}.",
        input_schema=input_schema,
        output_schema=output_schema,
        annotations={"readOnlyHint": True, "openWorldHint": False, **tool_options.pop("annotations", {})},
        permissions=(f"{meta.app_label}.view_{meta.model_name}",) if permissions is None else permissions,
        **tool_options,
    )
    published_tool = target.get(name)
    assert published_tool is not None
    return published_tool


class _Query:
    """The handler of a published query (a callable object: the fields are fixed, the arguments vary)."""

    def __init__(
        self,
        queryset: QuerySet[Any],
        fields: tuple[str, ...],
        filters: frozenset[str],
        ordering: tuple[str, ...],
        narrow: Narrow | None,
        max_results: int,
        default_results: int,
        max_offset: int,
        max_count: int,
    ) -> None:
        self.queryset, self.fields, self.filters, self.ordering = queryset, fields, filters, ordering
        self.narrow, self.max_results, self.default_results = narrow, max_results, default_results
        self.max_offset, self.max_count = max_offset, max_count
        self.__name__ = "query"

    def __call__(
        self,
        request: McpRequest,
        filter: Mapping[str, Any] | None = None,  # noqa: A002  (the argument's name on the wire)
        order_by: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
        count: bool = False,
    ) -> dict[str, Any]:
        # The schema has refused all of this already; checked again so that nothing here relies on it.
        conditions = dict(filter or {})
        unknown = sorted(set(conditions) - self.filters)
        if unknown:
            raise invalid_params(f"Cannot filter on {unknown[0]!r}: not a published lookup")
        terms = [term for term in order_by if term.removeprefix("-") in self.ordering]
        if len(terms) != len(order_by):
            raise invalid_params("order_by names a field that is not published for ordering")
        limit = self.default_results if limit is None else limit
        if not (1 <= limit <= self.max_results and 0 <= offset <= self.max_offset):
            raise invalid_params(f"limit is 1 to {self.max_results} and offset 0 to {self.max_offset}")
        queryset = self.queryset.all()
        if self.narrow is not None:
            queryset = self.narrow(request, queryset)
        try:
            matching = queryset.filter(**conditions)
            ordered = matching.order_by(*terms, "pk")  # pk last: pages do not overlap
            rows = list(ordered.values(*self.fields)[offset : offset + limit + 1])
            found = matching.order_by()[: self.max_count + 1].count() if count else None
        except (ValidationError, ValueError, TypeError, OverflowError) as exc:
            # The schema bounds what reaches here; a value the database still cannot take is the caller's.
            messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
            raise ToolError(f"Invalid filter value: {'; '.join(messages)}") from None
        more = len(rows) > limit
        answer: dict[str, Any] = {
            "results": json.loads(json.dumps(rows[:limit], cls=DjangoJSONEncoder)),
            "hasMore": more,
            "nextOffset": offset + limit if more and offset + limit <= self.max_offset else None,
        }
        if found is not None:
            answer["count"] = min(found, self.max_count)
            answer["countIsExact"] = found <= self.max_count
        return answer


def _published_field(
    tool_name: str, model: type[models.Model], path: str, lookups: Sequence[str]
) -> tuple[models.Field[Any, Any], tuple[str, ...], bool]:
    """The model field at ``path`` (``author__name``), checked publishable; its allowed lookups; whether
    its value may be null (it, or a relation on the way, is nullable)."""
    if isinstance(lookups, str):
        raise DefinitionError(f"Tool {tool_name!r}: the lookups of {path!r} are a list, e.g. [{lookups!r}]")
    current: type[models.Model] = model
    parts = path.split("__")
    field: Any = None
    nullable = False
    for position, part in enumerate(parts):
        try:
            field = current._meta.get_field(part)
        except FieldDoesNotExist:
            raise DefinitionError(f"Tool {tool_name!r}: {current.__name__} has no field {part!r} ({path!r})") from None
        if field.many_to_many or field.one_to_many:
            raise DefinitionError(
                f"Tool {tool_name!r}: {path!r} goes through a to-many relation, which would repeat rows"
            )
        nullable = nullable or bool(getattr(field, "null", False))
        if field.is_relation and position < len(parts) - 1:
            current = field.related_model
        elif position < len(parts) - 1:
            raise DefinitionError(f"Tool {tool_name!r}: {part!r} of {path!r} is not a relation")
    if getattr(field, "concrete", False) is False:
        raise DefinitionError(f"Tool {tool_name!r}: {path!r} is not a column")
    target = field.target_field if field.is_relation else field
    for lookup in lookups:
        if lookup not in SAFE_LOOKUPS:
            raise DefinitionError(
                f"Tool {tool_name!r}: lookup {lookup!r} of {path!r} cannot be published "
                f"(one of {', '.join(sorted(SAFE_LOOKUPS))})"
            )
        if lookup not in target.get_lookups():
            raise DefinitionError(f"Tool {tool_name!r}: {path!r} has no lookup {lookup!r}")
    if lookups and _json_type(target) is None:
        raise DefinitionError(
            f"Tool {tool_name!r}: {path!r} is a {type(target).__name__}, which cannot be filtered on here"
        )
    return target, tuple(lookups), nullable


def _json_type(field: models.Field[Any, Any]) -> dict[str, Any] | None:
    """The JSON Schema of one value of ``field`` as a filter takes it, or None for a type not handled."""
    if isinstance(field, models.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, models.IntegerField | models.AutoField):
        return {"type": "integer", **_INT64}
    if isinstance(field, models.FloatField):
        return {"type": "number"}
    if isinstance(field, models.DecimalField):
        return {"type": ["number", "string"]}
    if isinstance(field, models.DateTimeField):
        return {"type": "string", "format": "date-time"}
    for kind, fmt in ((models.DateField, "date"), (models.TimeField, "time"), (models.UUIDField, "uuid")):
        if isinstance(field, kind):
            return {"type": "string", "format": fmt}
    if isinstance(field, models.CharField | models.TextField):
        return _text(field)
    return None


def _text(field: models.Field[Any, Any]) -> dict[str, Any]:
    """A text value, as long as the column holds (a longer one could match nothing), or MAX_TEXT_VALUE."""
    return {"type": "string", "maxLength": field.max_length or MAX_TEXT_VALUE}


def _value_schema(field: models.Field[Any, Any], lookup: str) -> dict[str, Any]:
    if lookup == "isnull":
        return {"type": "boolean"}
    if lookup in _TEXT_LOOKUPS:
        return _text(field)
    value = _json_type(field) or {}
    if lookup == "in":
        return {"type": "array", "items": value, "maxItems": MAX_IN_VALUES}
    if lookup == "range":
        return {"type": "array", "items": value, "minItems": 2, "maxItems": 2}
    return value


def _output_schema(field: models.Field[Any, Any], nullable: bool) -> dict[str, Any]:
    """A returned value: its filter type (a decimal is a string, as ``DjangoJSONEncoder`` writes it)."""
    schema = dict(_json_type(field) or {})
    if isinstance(field, models.DecimalField):
        schema = {"type": "string"}
    if nullable and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    return schema

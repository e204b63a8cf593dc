"""The one error for a tool, prompt or resource that cannot be served as declared."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.core.exceptions import ImproperlyConfigured

SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # an RFC 6749 scope-token (fullmatch)
PERMISSION = re.compile(r"[\w.-]+\.[\w-]+")  # "app_label.codename" (fullmatch)


class DefinitionError(ImproperlyConfigured):
    """A tool, prompt or resource definition that cannot be served (raised at registration)."""


def checked_names(what: str, label: str, values: Iterable[str], pattern: re.Pattern[str]) -> frozenset[str]:
    """``values`` (the ``scopes`` or ``permissions`` of ``what``, e.g. "Tool 'x'") as a set; each must
    fully match ``pattern``."""
    if isinstance(values, str):
        raise DefinitionError(f"{what}: {label} must be a list of strings, not one string")
    names = frozenset(values)
    bad = sorted(repr(v) for v in names if not isinstance(v, str) or not pattern.fullmatch(v))
    if bad:
        kind = "OAuth scope tokens" if pattern is SCOPE_TOKEN else "permissions of the form 'app_label.codename'"
        raise DefinitionError(f"{what}: {label} {', '.join(bad)} are not {kind}")
    return names


_RATE = re.compile(r"(\d+)/(\d*)([smhd])|(\d+)/(\d+)")  # django-ratelimit's rates
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def split_rate(rate: str) -> tuple[int, int]:
    """(count, seconds) of ``"<count>/<period>"`` read as django-ratelimit reads it (``"600/m"``, ``"10/30s"``,
    ``"1000/h"``, ``"5/d"``, ``"5/30"`` for 30 seconds); else ValueError."""
    found = _RATE.fullmatch(rate) if isinstance(rate, str) else None
    if found is not None:
        count, multiple, unit, plain_count, seconds = found.groups()
        split = (int(count), int(multiple or 1) * _UNIT_SECONDS[unit]) if unit else (int(plain_count), int(seconds))
        if min(split) >= 1:
            return split
    raise ValueError(f"Invalid rate {rate!r}: give '<count>/<period>', e.g. '600/m', '10/30s' or '1000/h'")


def check_rate(rate: str) -> str:
    """``rate`` if :func:`split_rate` reads it; else ValueError."""
    split_rate(rate)
    return rate

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

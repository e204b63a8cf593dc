"""The ``DJANGO_MCP`` settings dict: defaults, validation, and reload on ``setting_changed``.

The core owns the keys of :class:`McpSettings`. An extension adds keys of its
own to the same dict with :func:`settings_section` (the tasks extension's
``TASK_*`` keys live in ``django_mcp/tasks/conf.py``); a key nobody claims is an
error. Durations are seconds everywhere (Django's convention); the wire's
milliseconds are computed where they go out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, cached_property
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .protocol.handshake import HANDSHAKE_VERSIONS
from .protocol.jsonrpc import describe_validation_error
from .protocol.validation import PROTOCOL_VERSION

SETTINGS_NAME = "DJANGO_MCP"

S = TypeVar("S", bound=BaseModel)


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


class McpSettings(BaseModel):
    """Every core ``DJANGO_MCP`` key with its default. See docs/settings.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    SERVER_NAME: str = Field(default="django-mcp", min_length=1)
    SERVER_VERSION: str = Field(default="0.0.0", min_length=1)
    SERVER_TITLE: str | None = None
    INSTRUCTIONS: str | None = None
    SERVER_INFO_IN_META: bool = True
    ALLOWED_ORIGINS: tuple[str, ...] = ()
    MAX_REQUEST_BYTES: int = Field(default=4 * 1024 * 1024, gt=0)
    CACHE_TTL_SECONDS: float = Field(default=0, ge=0)
    CACHE_SCOPE: Literal["public", "private"] = "private"
    PAGE_SIZE: int = Field(default=50, ge=1, le=1000)
    AUTH: str | None = None
    WWW_AUTHENTICATE: str = Field(default="Bearer", min_length=1)
    MRTR_STATE_MAX_AGE_SECONDS: int = Field(default=900, gt=0)
    LISTEN_KEEPALIVE_SECONDS: float = Field(default=15.0, gt=0)
    LISTEN_QUEUE_SIZE: int = Field(default=256, ge=1)
    SHUTDOWN_GRACE_SECONDS: float = Field(default=10.0, ge=0)
    SHUTDOWN_SIGNALS: bool = True
    PROTOCOL_VERSIONS: tuple[str, ...] = (PROTOCOL_VERSION, *HANDSHAKE_VERSIONS)
    SESSION_CACHE: str = Field(default="default", min_length=1)
    SESSION_TTL_SECONDS: int = Field(default=3600, gt=0)
    SESSION_MAX_BYTES: int = Field(default=64 * 1024, ge=1024)
    SESSIONS_PER_PRINCIPAL: int | None = Field(default=1000, ge=1)
    SESSIONS_MAX: int | None = Field(default=10_000, ge=1)
    LISTEN_MAX_STREAMS_PER_PRINCIPAL: int | None = Field(default=100, ge=1)
    LISTEN_MAX_STREAMS: int | None = Field(default=10_000, ge=1)
    LISTEN_LAYER_CHECK_SECONDS: float = Field(default=5.0, gt=0)
    LISTEN_LAYER_TIMEOUT_SECONDS: float = Field(default=5.0, gt=0)
    LISTEN_WRITES_PER_SECOND: int | None = Field(default=500, ge=1)
    LISTEN_FANOUT: Literal["process", "stream"] = "process"
    RATE_LIMIT: str | None = None
    AUDIT: bool = False
    AUDIT_ARGUMENTS: Literal["none", "all"] = "none"
    AUDIT_RETENTION_SECONDS: int = Field(default=30 * 86400, gt=0)

    @field_validator("PROTOCOL_VERSIONS")
    @classmethod
    def _known_versions(cls, versions: tuple[str, ...]) -> tuple[str, ...]:
        known = (PROTOCOL_VERSION, *HANDSHAKE_VERSIONS)
        unknown = [v for v in versions if v not in known]
        if unknown:
            raise ValueError(f"unknown protocol revision(s) {unknown}; this server knows {', '.join(known)}")
        if not versions:
            raise ValueError("serve at least one protocol revision")
        return versions

    @field_validator("RATE_LIMIT")
    @classmethod
    def _rate(cls, rate: str | None) -> str | None:
        return rate if rate is None else check_rate(rate)

    @cached_property
    def handshake_versions(self) -> tuple[str, ...]:
        """The handshake-era revisions served, newest first."""
        return tuple(v for v in HANDSHAKE_VERSIONS if v in self.PROTOCOL_VERSIONS)

    @cached_property
    def modern_versions(self) -> tuple[str, ...]:
        """The 2026-07-28 revision, if served (the stateless era has one revision)."""
        return tuple(v for v in self.PROTOCOL_VERSIONS if v == PROTOCOL_VERSION)


_sections: list[type[BaseModel]] = []
_getters: list[Any] = []  # every cached getter, cleared together on setting_changed


def _raw() -> Any:
    return getattr(settings, SETTINGS_NAME, {})


def _raw_dict() -> dict[str, Any]:
    raw = _raw()
    if not isinstance(raw, dict):
        raise TypeError(f"settings.{SETTINGS_NAME} must be a dict, not {type(raw).__name__}")
    return raw


def _claimed() -> set[str]:
    return {key for model in _sections for key in model.model_fields}


def _validate(model: type[S], raw: dict[str, Any]) -> S:
    """Validate the keys ``model`` owns (the core model also gets every key nobody else claims)."""
    if model is McpSettings:
        claimed = _claimed()
        return model.model_validate({k: v for k, v in raw.items() if k not in claimed})
    return model.model_validate({k: v for k, v in raw.items() if k in model.model_fields})


def validate_settings() -> McpSettings:
    """Parse the core keys of ``settings.DJANGO_MCP``; raises ``ValidationError`` or ``TypeError``."""
    return _validate(McpSettings, _raw_dict())


def validation_errors() -> list[tuple[str, str]]:
    """Every problem of ``settings.DJANGO_MCP`` as (key, message) pairs, for the system checks."""
    raw = _raw_dict()
    problems: list[tuple[str, str]] = []
    models: list[type[BaseModel]] = [McpSettings, *_sections]
    for model in models:
        try:
            _validate(model, raw)
        except ValidationError as exc:
            problems += [(".".join(str(p) for p in err["loc"]), err["msg"]) for err in exc.errors()]
    return problems


def _getter(model: type[S]) -> Callable[[], S]:
    @cache
    def get() -> S:
        try:
            return _validate(model, _raw_dict())
        except TypeError as exc:
            raise ImproperlyConfigured(str(exc)) from None
        except ValidationError as exc:
            raise ImproperlyConfigured(f"Invalid settings.{SETTINGS_NAME}: {describe_validation_error(exc)}") from None

    _getters.append(get)
    return get


def settings_section(model: type[S]) -> Callable[[], S]:
    """Let an extension own the keys of ``model`` in ``DJANGO_MCP``; returns its cached getter.

    The model should be frozen and forbid nothing (it only ever sees its own keys).
    """
    if _claimed() & set(model.model_fields) or set(McpSettings.model_fields) & set(model.model_fields):
        raise ImproperlyConfigured(f"{model.__name__} claims a {SETTINGS_NAME} key that is already owned")
    _sections.append(model)
    for get in _getters:
        get.cache_clear()
    return _getter(model)


get_settings: Callable[[], McpSettings] = _getter(McpSettings)
"""The validated core settings (cached until a ``setting_changed`` for ``DJANGO_MCP``).

Raises ``ImproperlyConfigured`` for invalid settings; ``manage.py check``
reports the same problem as ``django_mcp.E001``/``E002``.
"""


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTINGS_NAME:
        for get in _getters:
            get.cache_clear()

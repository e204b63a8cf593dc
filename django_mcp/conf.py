"""The ``DJANGO_MCP`` settings dict: defaults, validation, and reload on ``setting_changed``."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .protocol.jsonrpc import describe_validation_error

SETTINGS_NAME = "DJANGO_MCP"


class McpSettings(BaseModel):
    """Every ``DJANGO_MCP`` key with its default. See the README's settings reference."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    SERVER_NAME: str = Field(default="django-mcp", min_length=1)
    SERVER_VERSION: str = Field(default="0.0.0", min_length=1)
    SERVER_TITLE: str | None = None
    INSTRUCTIONS: str | None = None
    SERVER_INFO_IN_META: bool = True
    ALLOWED_ORIGINS: tuple[str, ...] = ()
    MAX_REQUEST_BYTES: int = Field(default=4 * 1024 * 1024, gt=0)
    CACHE_TTL_MS: int = Field(default=0, ge=0)
    CACHE_SCOPE: Literal["public", "private"] = "private"
    PAGE_SIZE: int = Field(default=50, ge=1, le=1000)
    AUTH: str | None = None
    WWW_AUTHENTICATE: str = Field(default="Bearer", min_length=1)
    MRTR_STATE_MAX_AGE: int = Field(default=900, gt=0)
    LISTEN_KEEPALIVE_SECONDS: float = Field(default=15.0, gt=0)
    LISTEN_QUEUE_SIZE: int = Field(default=256, ge=1)
    TASK_LEASE_SECONDS: float = Field(default=15.0, gt=0)
    TASK_LEASE_RENEW_SECONDS: float = Field(default=5.0, gt=0)
    SHUTDOWN_GRACE_SECONDS: float = Field(default=10.0, ge=0)
    SHUTDOWN_SIGNALS: bool = True
    TASK_FINAL_WRITE_RETRY_SECONDS: float = Field(default=60.0, ge=0)


def _raw() -> Any:
    return getattr(settings, SETTINGS_NAME, {})


def validate_settings() -> McpSettings:
    """Parse ``settings.DJANGO_MCP``; raises ``ValidationError`` or ``TypeError``."""
    raw = _raw()
    if not isinstance(raw, dict):
        raise TypeError(f"settings.{SETTINGS_NAME} must be a dict, not {type(raw).__name__}")
    return McpSettings.model_validate(raw)


@cache
def get_settings() -> McpSettings:
    """The validated settings (cached until a ``setting_changed`` for ``DJANGO_MCP``).

    Raises ``ImproperlyConfigured`` for invalid settings; ``manage.py check``
    reports the same problem as ``django_mcp.E001``/``E002``.
    """
    try:
        return validate_settings()
    except TypeError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    except ValidationError as exc:
        raise ImproperlyConfigured(f"Invalid settings.{SETTINGS_NAME}: {describe_validation_error(exc)}") from None


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTINGS_NAME:
        get_settings.cache_clear()

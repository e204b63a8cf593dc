"""The one error for a tool, prompt or resource that cannot be served as declared."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured


class DefinitionError(ImproperlyConfigured):
    """A tool, prompt or resource definition that cannot be served (raised at registration)."""

"""Views that MCP clients call, as opposed to pages a person's browser session opens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import transaction

View = TypeVar("View", bound=Callable[..., Any])

__all__ = ["client_endpoint", "outside_atomic_requests"]


def client_endpoint(view: View) -> View:
    """Mark ``view`` as called by clients with their own credentials, not by a signed-in browser.

    - Outside ``ATOMIC_REQUESTS`` on every database: Django refuses that setting for async views
      (a 500 on every request), and the tasks' store keeps its own transactions.
    - ``login_not_required``: ``LoginRequiredMiddleware`` would send a client to the login page; the
      endpoint answers for itself (its auth's 401 and ``WWW-Authenticate``).
    """
    return login_not_required(outside_atomic_requests(view))


def outside_atomic_requests(view: View) -> View:
    """``view`` outside ``ATOMIC_REQUESTS`` on every database: Django refuses that setting for an async
    view (a 500 on every request)."""
    for alias in settings.DATABASES:
        view = transaction.non_atomic_requests(using=alias)(view)
    return view

"""The test app's ninja API and models, published as tools on a server of their own (``/mcp-publish``)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from django_mcp import McpRequest, McpServer, ToolRegistry, publish_drf, publish_ninja, publish_query
from django_mcp.tasks import McpTasks

from .api import api, books
from .drf import BookViewSet, Stats
from .models import Book

tools = ToolRegistry("publish")
published = publish_ninja(api, router=books, registry=tools)
publish_ninja(api, "staff_report", registry=tools)
publish_ninja(api, "slow_count", registry=tools, prefix="task_", task_support="optional")


def own_or_public(request: McpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
    """Books without an owner, and the caller's own."""
    return queryset.filter(Q(owner__isnull=True) | Q(owner=request.user.pk))


publish_query(
    Book,
    name="find_books",
    fields={
        "id": ["exact", "in"],
        "title": ["exact", "icontains", "startswith"],
        "year": ["exact", "gte", "lte", "range"],
        "price": ["lte"],
        "published_on": ["gte", "isnull"],
        "author__name": ["exact"],
    },
    ordering=["title", "year"],
    narrow=own_or_public,
    max_results=5,
    default_results=2,
    max_offset=20,
    max_count=3,
    registry=tools,
)
publish_query(Book.objects.filter(year__lt=2000), name="old_books", fields={"title": []}, registry=tools)

publish_drf(BookViewSet, basename="drf_books", registry=tools)
publish_drf(Stats, basename="drf_stats", registry=tools)

publish_server = McpServer(tools=tools, urls_namespace="publish", extension_plugins=[McpTasks()])

"""DRF views the way a project already has them; tests/publishapp/server.py publishes them."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import IsAdminUser, IsAuthenticatedOrReadOnly
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import Book


class BookSerializer(serializers.ModelSerializer[Book]):
    class Meta:
        model = Book
        fields = ["id", "title", "year", "price", "published_on"]
        read_only_fields = ["id"]

    def validate_year(self, year: int) -> int:
        if year < 1450:
            raise serializers.ValidationError("Printing had not been invented yet")
        return year


class Pages(LimitOffsetPagination):
    default_limit = 2
    max_limit = 5


class BookViewSet(viewsets.ModelViewSet[Book]):
    """Books: anyone reads, signed-in users write, owners remove."""

    queryset = Book.objects.order_by("pk")
    serializer_class = BookSerializer
    permission_classes = [IsAuthenticatedOrReadOnly]
    pagination_class = Pages

    def perform_create(self, serializer: Any) -> None:
        serializer.save(owner=self.request.user)

    def perform_destroy(self, instance: Book) -> None:
        if instance.owner_id != self.request.user.pk:
            raise PermissionDenied("Only the owner may remove a book")
        instance.delete()

    @action(detail=False)
    def oldest(self, request: Request) -> Response:
        """The oldest book."""
        return Response(BookSerializer(self.get_queryset().order_by("year").first()).data)


class Stats(APIView):
    """How many books there are (staff only)."""

    permission_classes = [IsAdminUser]

    def get(self, request: Request) -> Response:
        return Response({"books": Book.objects.count()})

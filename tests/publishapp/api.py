"""A small django-ninja API, the kind a project already has; tests/publishapp/server.py publishes it."""

from __future__ import annotations

import asyncio
from datetime import date
from decimal import Decimal
from typing import Any

import ninja
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from ninja import File, Form, Header, NinjaAPI, Query, Router, Schema, UploadedFile
from ninja.errors import HttpError
from ninja.security import django_auth

from .models import Book

api = NinjaAPI(urls_namespace="publish_api")


def status(code: int, body: Any) -> Any:
    """A response with its status: ``Status`` on ninja 1.6 and later, a tuple before."""
    return ninja.Status(code, body) if hasattr(ninja, "Status") else (code, body)


books = Router(tags=["books"])
admin_only = Router(auth=django_auth)


class BookOut(Schema):
    id: int
    title: str
    year: int
    price: Decimal
    published_on: date | None = None


class BookIn(Schema):
    title: str
    year: int
    price: Decimal = Decimal(0)


class BookFilter(Schema):
    title_contains: str | None = None
    year_from: int | None = None


@books.get("/books", response=list[BookOut])
def list_books(request, filters: Query[BookFilter], limit: int = 10):
    """List books, newest first."""
    found = Book.objects.order_by("-year", "pk")
    if filters.title_contains:
        found = found.filter(title__icontains=filters.title_contains)
    if filters.year_from is not None:
        found = found.filter(year__gte=filters.year_from)
    return list(found[:limit])


@books.get("/books/{book_id}", response=BookOut)
def get_book(request, book_id: int):
    """One book by id."""
    return get_object_or_404(Book, pk=book_id)


@books.post("/books", response={201: BookOut}, auth=django_auth)
def create_book(request, payload: BookIn):
    """Add a book (signed-in users only); its owner is the caller."""
    if payload.year < 1450:
        raise HttpError(400, "Printing had not been invented yet")
    return status(201, Book.objects.create(owner=request.user, **payload.dict()))


@books.delete("/books/{book_id}", response={204: None}, auth=django_auth)
def delete_book(request, book_id: int):
    """Remove a book the caller owns."""
    book = get_object_or_404(Book, pk=book_id)
    if book.owner_id != request.user.pk:
        raise HttpError(403, "Only the owner may remove a book")
    book.delete()
    return status(204, None)


@books.get("/whoami", auth=django_auth)
def whoami(request) -> dict:
    return {"username": request.user.get_username()}


@books.get("/slow-count", response=int)
async def slow_count(request, seconds: float = 0.0):
    """Count the books, slowly (an async operation)."""
    await asyncio.sleep(seconds)
    return await Book.objects.acount()


NO_WORDS: list[str] = []


@books.get("/plain")
def plain(request, words: Query[list[str]] = NO_WORDS):
    """Answers plain text, not JSON (the query parameter repeats: ?words=a&words=b)."""
    return HttpResponse(" ".join(words) or "nothing", content_type="text/plain")


@books.get("/broken")
def broken(request):
    raise RuntimeError("secret internals: password=hunter2")


@admin_only.get("/staff")
def staff_report(request):
    """Staff only: checked by the operation's own code."""
    if not request.user.is_staff:
        raise HttpError(403, "Staff only")
    return {"books": Book.objects.count()}


forms = Router()


@forms.post("/upload")
def upload(request, name: Form[str], file: File[UploadedFile]):
    """A form with a file: not something a tool can send."""
    return {"name": name}


@forms.get("/with-header")
def with_header(request, x_tenant: Header[str]):
    return {"tenant": x_tenant}


api.add_router("", books)
api.add_router("/admin", admin_only)
api.add_router("/forms", forms)

"""The demo's REST API (django-ninja), mounted at /api/; apps.py publishes three of its operations as tools."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import NinjaAPI, Query, Schema
from ninja.errors import HttpError
from ninja.security import django_auth

from .models import Book

api = NinjaAPI(title="Demo catalogue", urls_namespace="demo_api")


class BookOut(Schema):
    id: int
    title: str
    author: str
    year: int


class BookIn(Schema):
    title: str
    author: str
    year: int


class BookSearch(Schema):
    author: str | None = None
    since: int | None = None


@api.get("/books", response=list[BookOut])
def list_books(request: HttpRequest, search: Query[BookSearch], limit: int = 20) -> list[Book]:
    """Books of the catalogue, by title; filter by author or by the year they appeared since."""
    books = Book.objects.all()
    if search.author:
        books = books.filter(author__icontains=search.author)
    if search.since is not None:
        books = books.filter(year__gte=search.since)
    return list(books[: max(1, min(limit, 100))])


@api.get("/books/{book_id}", response=BookOut)
def get_book(request: HttpRequest, book_id: int) -> Book:
    """One book by its id."""
    return get_object_or_404(Book, pk=book_id)


@api.post("/books", response=BookOut, auth=django_auth)
def add_book(request: HttpRequest, book: BookIn) -> Book:
    """Add a book to the catalogue (signed-in users only)."""
    if Book.objects.filter(title__iexact=book.title, author__iexact=book.author).exists():
        raise HttpError(409, "That book is in the catalogue already")
    return Book.objects.create(added_by=request.user, **book.dict())

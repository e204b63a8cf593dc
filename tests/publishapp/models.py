from typing import Any

from django.conf import settings
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)
    email = models.EmailField(blank=True)  # never published: the hostile lookups aim at it
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    def __str__(self) -> str:
        return self.name


class Book(models.Model):
    title = models.CharField(max_length=200)
    year = models.IntegerField()
    price = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    published_on = models.DateField(null=True, blank=True)
    secret_note = models.TextField(blank=True)
    author = models.ForeignKey(Author, null=True, blank=True, on_delete=models.SET_NULL, related_name="books")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    tags: models.ManyToManyField[Any, Any] = models.ManyToManyField("Tag", blank=True)

    def __str__(self) -> str:
        return self.title


class Tag(models.Model):
    name = models.CharField(max_length=50)

    def __str__(self) -> str:
        return self.name

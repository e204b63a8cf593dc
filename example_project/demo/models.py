from django.conf import settings
from django.db import models


class Book(models.Model):
    """A book of the demo's catalogue: its ninja API and a model query are published as tools."""

    title = models.CharField(max_length=200)
    author = models.CharField(max_length=200)
    year = models.IntegerField()
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title

"""Publishing what a project already has as tools: model queries, django-ninja operations."""

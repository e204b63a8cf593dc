"""django-mcp's models (the tasks extension adds its own in ``django_mcp.tasks``)."""

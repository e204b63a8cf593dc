from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "example_project.demo"
    label = "demo"

    def ready(self) -> None:
        from django_mcp import publish_ninja, publish_query, registry

        from . import tools
        from .api import api
        from .models import Book

        # The decorator form is used in tools.py; this is the explicit form.
        registry.register(tools.word_stats, output_schema=tools.WORD_STATS_SCHEMA)

        # What the project already has, published: three operations of its ninja API (run by ninja, as the
        # caller: add_book needs a signed-in user), and a read-only query over the catalogue.
        publish_ninja(api, "list_books", "get_book", "add_book")
        publish_query(
            Book,
            name="find_books",
            fields={"title": ["icontains"], "author": ["exact", "icontains"], "year": ["gte", "lte"]},
            ordering=["title", "year"],
            max_results=50,
            permissions=(),  # a public catalogue: anyone may search it (the default asks for demo.view_book)
        )

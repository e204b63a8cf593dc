"""The release of django-mcp this is (also ``django_mcp.__version__``)."""

__version__ = "0.1.0"

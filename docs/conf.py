"""Sphinx configuration of django-mcp's documentation: ``sphinx-build -W docs docs/_build/html``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# autodoc imports django_mcp.tasks, whose models need settings: the example project's (runtime deps only).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
django.setup()

from django_mcp import __version__  # noqa: E402  (after django.setup())

project = "django-mcp"
author = "django-mcp contributors"
copyright = "django-mcp contributors, BSD-3-Clause"  # noqa: A001  (Sphinx's name for it)
release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinxcontrib.mermaid",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_intersphinx"]

# ```mermaid fences render on GitHub and, through sphinxcontrib-mermaid, here.
myst_fence_as_directive = ["mermaid"]
# Mermaid itself is vendored (_static/mermaid/README.txt): the pages draw their diagrams offline, no CDN.
html_static_path = ["_static"]
mermaid_use_local = "mermaid/mermaid.mjs"  # relative to _static
myst_heading_anchors = 3  # the pages link to each other's sections by their GitHub anchors
myst_enable_extensions = ["colon_fence"]

# Django's inventory is kept in the repository (see _intersphinx/README.txt): the docs build offline.
intersphinx_mapping = {"django": ("https://docs.djangoproject.com/en/5.2/", "_intersphinx/django-5.2.inv")}

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "furo"
html_title = f"django-mcp {release}"

"""Fixtures of the glue's browser tests: Django's live server thread with the admin's static files, Chromium."""

from __future__ import annotations

from pathlib import Path

import django.contrib.admin
import pytest
from django.test.utils import override_settings
from pytest_django.live_server_helper import LiveServer

from tests.chromium import WIDTH, opened_browser


@pytest.fixture
def admin_url(transactional_db):
    """Django's live server thread on the test database, serving the admin's CSS and images too."""
    static = Path(django.contrib.admin.__file__).parent / "static"
    with override_settings(STATIC_URL="/static/", STATIC_ROOT=str(static)):
        server = LiveServer("127.0.0.1:0")
        try:
            yield server.url
        finally:
            server.stop()


@pytest.fixture(params=[1280, WIDTH], ids=lambda width: f"{width}px")
def browser(request, tmp_path):
    with opened_browser(tmp_path / "profile", width=request.param) as chromium:
        yield chromium

"""Fixtures of the live tests."""

from __future__ import annotations

import pytest

from tests.live.clients import install


@pytest.fixture(scope="session")
def clients() -> dict[str, install.Installed]:
    """Every client, installed into the cache if missing (a failure, not a skip, without network or cache)."""
    try:
        return install.install_all()
    except install.InstallError as exc:
        pytest.fail(f"the MCP clients could not be installed: {exc}", pytrace=False)

"""The built documentation draws its Mermaid diagrams with no network: Mermaid is vendored, not a CDN's.

Builds the docs (the ``docs`` extra) and opens a page with diagrams in headless Chromium, served from
127.0.0.1 with every other host unreachable, as when read offline.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.chromium import CHROMIUM, Browser
from tests.live.servers import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (Debian: apt-get install chromium; .ci/run does)"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("sphinxcontrib.mermaid", reason="the docs extra builds the documentation")
    out = tmp_path_factory.mktemp("html")
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(ROOT / "docs"), str(out)],
        check=True,
        timeout=240,
    )
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_pages_load_mermaid_from_the_site_itself(built: str) -> None:
    import httpx

    page = httpx.get(built + "/tasks.html", timeout=10).text
    assert 'import mermaid from "./_static/mermaid/mermaid.mjs"' in page
    assert "cdn.jsdelivr.net" not in page


def test_a_diagram_is_drawn_with_every_other_host_unreachable(built: str, tmp_path: Path) -> None:
    browser = Browser(tmp_path / "profile", extra_args=["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
    try:
        browser.open_page()
        browser.load("navigate", url=built + "/tasks.html")
        deadline = time.monotonic() + 20
        drawn = 0
        while time.monotonic() < deadline and not drawn:
            drawn = browser.evaluate("document.querySelectorAll('.mermaid svg').length")
            time.sleep(0.2)
        assert drawn, browser.evaluate("(document.querySelector('.mermaid') || {}).outerHTML")
    finally:
        browser.close()

"""Headless Chromium driven over the DevTools protocol on a pipe, for tests that look as a person would.

``--remote-debugging-pipe``: no port and no websocket client. ``CHROMIUM`` is None where no Chromium is
installed (``.ci/run`` installs Debian's).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
WIDTH, HEIGHT = 1400, 900


class Browser:
    """Headless chromium, spoken to in DevTools protocol messages (JSON, NUL-terminated) on fds 3 and 4."""

    def __init__(
        self, profile: Path, width: int = WIDTH, height: int = HEIGHT, extra_args: list[str] | None = None
    ) -> None:
        self.width, self.height = width, height
        args = [
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
            *(extra_args or []),
            "about:blank",
        ]
        # The pipe is the child's fds 3 (commands in) and 4 (replies out): moved there from stdin and stdout.
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", 'exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null', CHROMIUM, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", page=False, timeout=5)
            except (AssertionError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the session this test started, helpers included
                self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "chromium did not answer in time"
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                assert chunk, f"chromium exited with {self.proc.poll()}"
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict[str, Any] | None = None, *, page: bool = True, timeout: float = 30):
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\0")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                assert "error" not in reply, reply["error"]
                return reply["result"]
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, event: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, message in enumerate(self.events):
                if message["method"] == event and message.get("sessionId") == self.session:
                    del self.events[: i + 1]
                    return message
            reply = self._read(deadline)
            if "method" in reply:
                self.events.append(reply)

    def open_page(self) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, page=False)[
            "sessionId"
        ]
        self.call("Page.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )

    def load(self, action: str, **params: Any) -> None:
        """Run ``Page.navigate`` or a script that navigates, and wait until the new page has loaded."""
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        if action == "navigate":
            self.call("Page.navigate", params)
        else:
            self.evaluate(action)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str, *, timeout: float = 30) -> Any:
        """The value of ``expression`` in the page; a promise is awaited."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        result = self.call("Runtime.evaluate", params, timeout=timeout)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def screenshot(self, path: Path) -> bytes:
        png = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        path.write_bytes(png)
        return png


def admin_sign_in(browser: Browser, base: str, then: str, username: str, password: str) -> None:
    """Log in through the Django admin's own login form, as a person would, and land on ``then``."""
    browser.load("navigate", url=f"{base}/admin/login/?next={then}")
    browser.load(
        f"document.querySelector('#id_username').value = {json.dumps(username)};"
        f"document.querySelector('#id_password').value = {json.dumps(password)};"
        "document.querySelector('#login-form').submit();"
    )


@contextmanager
def opened_browser(profile: Path, width: int = WIDTH, height: int = HEIGHT) -> Iterator[Browser]:
    """A :class:`Browser` with its page open, closed afterwards (what a test's fixture yields)."""
    browser = Browser(profile, width=width, height=height)
    try:
        browser.open_page()
        yield browser
    finally:
        browser.close()

"""The marked blocks of the README and of ``docs/``, run as a user would, and the checks of their answers."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Block:
    group: str
    kind: str
    argument: str | None
    lang: str
    code: str
    line: int
    page: str = "README.md"

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.group}:{self.kind})"


ELLIPSIS = "…"  # in a shown answer: any text here


ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def pages() -> list[Path]:
    """The README, then every page of ``docs/``."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def page_texts() -> list[tuple[str, str]]:
    """Each page's path (from the repository's root) and text."""
    return [(str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")) for page in pages()]


_MARKED = re.compile(r"^<!-- ([a-z-]+):(\S+)(?: (\S+))? -->\n```(\w*)\n(.*?)\n```$", re.M | re.S)


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def assert_answer(output: str, answer: Block) -> None:
    """The output of a command is the answer the README shows after it (JSON, or SSE events)."""
    __tracebackhide__ = True
    if answer.lang == "json":
        try:
            actual = json.loads(output)
        except ValueError:
            raise AssertionError(f"{answer}: not JSON: {output[:2000]!r}") from None
        assert_matches(actual, json.loads(answer.code), "answer")
        return
    actual_events, shown_events = sse_events(output), sse_events(answer.code)
    if shown_events and shown_events[-1] == ELLIPSIS:  # the stream goes on: what is shown is its start
        shown_events = shown_events[:-1]
        actual_events = actual_events[: len(shown_events)]
    assert_matches(actual_events, shown_events, "events")


# ---------------------------------------------------------------- python snippets


def assert_matches(actual: Any, shown: Any, where: str = "$") -> None:
    """``actual`` is what the README shows, but for ids, timestamps and the text elided with ``…``."""
    __tracebackhide__ = True
    if isinstance(shown, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        assert actual.keys() == shown.keys(), f"{where}: keys {sorted(actual)} != shown {sorted(shown)}"
        for key, value in shown.items():
            assert_matches(actual[key], value, f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(actual, list) and len(actual) == len(shown), f"{where}: {actual!r} != shown {shown!r}"
        for i, (a, s) in enumerate(zip(actual, shown, strict=True)):
            assert_matches(a, s, f"{where}[{i}]")
    elif isinstance(shown, str) and ELLIPSIS in shown:
        pattern = ".*".join(re.escape(part) for part in shown.split(ELLIPSIS))
        assert isinstance(actual, str) and re.fullmatch(pattern, actual, re.S), f"{where}: {actual!r} != {shown!r}"
    elif isinstance(shown, str) and (_UUID.fullmatch(shown) or _TIMESTAMP.fullmatch(shown)):
        kind = _UUID if _UUID.fullmatch(shown) else _TIMESTAMP
        assert isinstance(actual, str) and kind.fullmatch(actual), f"{where}: {actual!r} is not like {shown!r}"
    else:
        assert type(actual) is type(shown) and actual == shown, f"{where}: {actual!r} != shown {shown!r}"


def marked_block(group: str, kind: str) -> Block:
    found = [b for b in marked_blocks(group) if b.kind == kind]
    assert len(found) == 1, f"the docs need exactly one <!-- {group}:{kind} --> block, found {len(found)}"
    return found[0]


def marked_blocks(group: str) -> list[Block]:
    """The blocks marked ``<!-- group:... -->``, in page order (the README first)."""
    return [
        Block(m[1], m[2], m[3], m[4], m[5], text.count("\n", 0, m.start()) + 1, page)
        for page, text in page_texts()
        for m in _MARKED.finditer(text)
        if m[1] == group
    ]


def readme() -> str:
    return README.read_text(encoding="utf-8")


def run_shell(code: str, env: dict[str, str], cwd: Path) -> tuple[str, dict[str, str]]:
    """Run README shell lines with bash; their stdout, and the environment they leave (``set -a``)."""
    env_file = cwd / ".env0"
    script = f"set -a\n{code}\nenv -0 > {env_file}\n"
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, timeout=60, check=False)
    after = dict(item.split("=", 1) for item in env_file.read_text().split("\0") if "=" in item)
    return proc.stdout.decode(), after


def sse_events(text: str) -> list[dict[str, Any] | str]:
    """The events of an SSE text (``{"event": ..., "data": <json>}``); a lone ``…`` stays a string."""
    events: list[dict[str, Any] | str] = []
    for chunk in re.split(r"\n\s*\n", text.strip()):
        if chunk.strip() == ELLIPSIS:
            events.append(ELLIPSIS)
            continue
        fields: dict[str, Any] = {}
        for line in chunk.splitlines():
            name, _, value = line.partition(": ")
            fields[name] = json.loads(value) if name == "data" else value
        events.append(fields)
    return events

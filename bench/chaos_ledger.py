"""The chaos run's books: every task whose handle a client got, every answer's status, every fault's window;
and the verdict on each task once the service has recovered."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

TERMINAL = ("completed", "failed", "cancelled")
SLACK_SECONDS = 10.0
"""A fault's window runs this long past its recovery (pools reconnecting, leases renewed)."""


@dataclass
class Entry:
    """A task whose handle was returned: what its outcome must be, and every status a client saw."""

    task_id: str
    tool: str
    expected: str
    created_at: float
    owner: str
    """The process that runs its body: the web worker that took the call, or the fleet's worker kind."""
    principal: str
    """Whose task it is (only they may read it)."""
    seen: list[str] = field(default_factory=list)
    first_terminal: dict[str, Any] | None = None
    ended_at: float | None = None


@dataclass
class Fault:
    kind: str
    start: float
    end: float = 0.0
    detail: str = ""


@dataclass
class Ledger:
    entries: dict[str, Entry] = field(default_factory=dict)
    answers: list[tuple[float, int, bool]] = field(default_factory=list)
    """(when, HTTP status, Retry-After present) of every answer."""
    server_errors: list[tuple[float, int, str]] = field(default_factory=list)
    """(when, HTTP status, what was asked and answered) of every 5xx."""
    faults: list[Fault] = field(default_factory=list)
    plain_calls: Counter[str] = field(default_factory=Counter)
    listens: Counter[str] = field(default_factory=Counter)
    """Listen streams followed: to the task's end, or ended first (then polling took over)."""
    listens_without_end: list[str] = field(default_factory=list)
    """The tasks of streams kept open past the deadline without the task's end."""
    started: float = field(default_factory=time.monotonic)

    def answered(self, status: int, retry_after: bool) -> None:
        self.answers.append((time.monotonic(), status, retry_after))

    def in_fault(self, moment: float) -> bool:
        return any(f.start <= moment <= (f.end or moment) + SLACK_SECONDS for f in self.faults)

    def owner_killed(self, entry: Entry) -> bool:
        """Was the process running ``entry``'s body killed while it ran?"""
        end = entry.ended_at or time.monotonic()
        for fault in self.faults:
            if entry.created_at <= fault.start <= end and (
                (fault.kind == "kill-fleet" and fault.detail.startswith(entry.owner))
                or (fault.kind == "kill-web" and fault.detail == entry.owner)
            ):
                return True
        return False

    def judge(self, finals: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
        """Each task's verdict from its final state (None: not found)."""
        verdicts: Counter[str] = Counter()
        examples: dict[str, list[str]] = {}
        for task_id, entry in self.entries.items():
            verdict = _verdict(self, entry, finals.get(task_id))
            verdicts[verdict] += 1
            examples.setdefault(verdict, [])
            if len(examples[verdict]) < 5 and verdict != "completed right":
                final = finals.get(task_id) or {}
                examples[verdict].append(f"{task_id} {entry.tool}: {final.get('status')} {final.get('statusMessage')}")
        # A stream that missed the end of a task that ended lost a notification; one of a stuck task had none.
        for task_id in self.listens_without_end[:10]:
            final = finals.get(task_id) or {}
            examples.setdefault("listen open without the end", []).append(
                f"{task_id} {self.entries[task_id].tool}: now {final.get('status')} {final.get('statusMessage')}"
            )
        outside = [a for a in self.answers if a[1] >= 500 and not self.in_fault(a[0])]
        outside_said = Counter(
            f"{status} {said}" for when, status, said in self.server_errors if not self.in_fault(when)
        )
        inside_bad = [a for a in self.answers if a[1] >= 500 and self.in_fault(a[0]) and (a[1] != 503 or not a[2])]
        return {
            "tasks": len(self.entries),
            "verdicts": dict(verdicts),
            "examples": examples,
            "answers": len(self.answers),
            "5xx outside faults": len(outside),
            "5xx outside faults, what": dict(outside_said.most_common(10)),
            "5xx inside faults other than 503 with Retry-After": len(inside_bad),
            "503 inside faults": sum(1 for a in self.answers if a[1] == 503 and self.in_fault(a[0])),
            "plain calls": dict(self.plain_calls),
            "listen streams": dict(self.listens),
        }


def _verdict(ledger: Ledger, entry: Entry, final: dict[str, Any] | None) -> str:
    if final is None:
        return "lost"
    status = final.get("status")
    if entry.first_terminal is not None and entry.first_terminal.get("status") != status:
        return "rewritten"
    if status not in TERMINAL:
        return "stuck"
    if status == "completed":
        content = (final.get("result") or {}).get("content") or [{}]
        return "completed right" if content[0].get("text") == entry.expected else "rewritten"
    if status == "failed" and ledger.owner_killed(entry):
        return "failed: its owner was killed"
    return f"{status} while its owner lived"

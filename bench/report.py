"""Turn a run's raw results.json into the summary (medians over rounds), the goals table with ratios,
results.md and results.png (matplotlib, if installed). Run by bench/run.py; also by hand:

    bench/.venvs/harness/bin/python bench/report.py bench/results/results.json
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

CLOSED = ("tools/call", "create", "tasks/get")
DISTURBED_CORES = 0.25  # other work above this (cores, during a point) makes that round "disturbed"
DJ = ("django_mcp daphne sqlite", "django_mcp uvicorn sqlite", "django_mcp daphne pg", "django_mcp uvicorn pg")
TRACED = ("django_mcp uvicorn sqlite traced", "django_mcp uvicorn pg traced")
DEPLOYED = "django_mcp uvicorn pg deployed"


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over rounds of every figure, keyed 'target|scenario|concurrency|stored'."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        key = f"{rec['target']}|{rec['scenario']}|{rec.get('concurrency')}|{rec.get('stored')}"
        groups[key].append(rec["result"])
    summary: dict[str, Any] = {}
    for key, results in groups.items():
        measured = [r for r in results if not r.get("failed")]
        # Rounds during which other work on the machine took a share of the cores are left out of the
        # median when at least one round was clean (every round stays in the JSON).
        clean = [r for r in measured if (r.get("others_cores") or 0) <= DISTURBED_CORES]
        ok = clean or measured
        entry: dict[str, Any] = {
            "rounds": len(results),
            "failed_rounds": len(results) - len(measured),
            "disturbed_rounds": len(measured) - len(clean),
            "rounds_used": len(ok),
            "others_cores": [r.get("others_cores") for r in measured],
        }
        entry["errors"] = sum(r.get("errors") or 0 for r in ok)
        if ok and "final_state_received" in ok[0]:  # the fan-out phase: one round
            entry.update(
                {k: v for k, v in ok[0].items() if k not in ("quiet", "loaded", "latency_ms")},
                p50=ok[0]["latency_ms"]["p50"],
                p99=ok[0]["latency_ms"]["p99"],
                quiet_rps=ok[0]["quiet"]["rps"],
                quiet_p99=ok[0]["quiet"]["latency_ms"]["p99"],
            )
        elif ok and "rps" in ok[0] and "latency_ms" in ok[0]:
            entry.update(
                rps=_median([r["rps"] for r in ok]),
                p50=_median([r["latency_ms"]["p50"] for r in ok]),
                p99=_median([r["latency_ms"]["p99"] for r in ok]),
                requests=sum(r["requests"] for r in ok),
            )
        elif ok and "lag_ms" in ok[0]:
            entry.update(
                unsupported=next((r["unsupported"] for r in ok if r.get("unsupported")), None),
                tasks=sum(r.get("tasks") or 0 for r in ok),
                total_p50=_median([r["total_ms"]["p50"] for r in ok]),
                lag_p50=_median([r["lag_ms"]["p50"] for r in ok]),
                lag_p99=_median([r["lag_ms"]["p99"] for r in ok]),
                after_p50=_median([r.get("after_ms", {}).get("p50") for r in ok]),
                after_p99=_median([r.get("after_ms", {}).get("p99") for r in ok]),
                requests_per_task=_median([r.get("requests_per_task") for r in ok]),
            )
        elif ok and "cancel_seen_ms" in ok[0]:
            entry.update(
                samples=sum(r["samples"] for r in ok),
                p50=_median([r["cancel_seen_ms"]["p50"] for r in ok]),
                p99=_median([r["cancel_seen_ms"]["p99"] for r in ok]),
                max=max((r["cancel_seen_ms"]["max"] or 0) for r in ok),
            )
        elif ok:
            entry.update(ok[0])
        if not ok:
            entry["failed"] = results[0].get("failed")
        summary[key] = entry
    return summary


class Figures:
    def __init__(self, summary: dict[str, Any]) -> None:
        self.s = summary

    def get(self, target: str, scenario: str, concurrency: int | None, stored: int | None = None) -> dict[str, Any]:
        return self.s.get(f"{target}|{scenario}|{concurrency}|{stored}", {})

    def value(self, target: str, scenario: str, c: int | None, key: str, stored: int | None = None) -> float | None:
        entry = self.get(target, scenario, c, stored)
        return None if entry.get("errors") or entry.get("failed") else entry.get(key)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _mark(entry: dict[str, Any]) -> str:
    """`` ~`` when other work disturbed every round of a figure, `` °`` when disturbed rounds were left out."""
    disturbed = entry.get("disturbed_rounds") or 0
    measured = (entry.get("rounds") or 0) - (entry.get("failed_rounds") or 0)
    if not disturbed:
        return ""
    return " ~" if disturbed >= measured else " °"


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def goal_conc(config: dict[str, Any]) -> list[int]:
    """The concurrencies the goals are judged at (1 and 16 in a full run; every one measured if unset)."""
    return [int(c) for c in config.get("goal_concurrency") or config["concurrency"]]


def _status(judged: list[bool]) -> str:
    if not judged:
        return "n/a"
    return "met" if all(judged) else ("partly" if any(judged) else "missed")


def _short(target: str) -> str:
    return target.replace("django_mcp ", "")


def goals(
    fig: Figures,
    conc: list[int],
    small: int,
    big: int,
    sleep_ms: int = 200,
    parked_tasks: int = 1000,
) -> list[dict[str, Any]]:
    """Each goal: its parts (what was compared, the ratio per concurrency, met or not), and its status.

    A goal is "met" when every judged part is met at every concurrency in ``conc`` (the goals'
    concurrencies, 1 and 16 in a full run), "partly" when some are, "missed" when none is, "n/a"
    when nothing was measured. Parts marked ``reference`` (daphne, and other stores where the goal
    names one) are shown, not judged.
    """
    rows: list[dict[str, Any]] = []

    def ratio_part(
        label: str,
        scenario: str,
        ours: str,
        theirs: str,
        need: float,
        stored: int | None = None,
        stored_theirs: int | None = None,
        reference: bool = False,
        key: str = "rps",
        scenario_theirs: str | None = None,
    ) -> dict[str, Any]:
        ratios = [
            _ratio(
                fig.value(ours, scenario, c, key, stored),
                fig.value(theirs, scenario_theirs or scenario, c, key, stored_theirs),
            )
            for c in conc
        ]
        judged = [r >= need for r in ratios if r is not None]
        return {
            "label": label.split(" (")[0].split(": ")[0],
            "compared": label,
            "measured": ", ".join(f"c={c}: {_fmt(r, 2)}×" for c, r in zip(conc, ratios, strict=True)),
            "values": {str(c): r for c, r in zip(conc, ratios, strict=True)},
            "need": f"≥ {need}×",
            "status": _status(judged),
            "judged": judged,
            "reference": reference,
        }

    def goal(name: str, need: str, parts: list[dict[str, Any]]) -> None:
        judged = [ok for p in parts if not p["reference"] for ok in p["judged"]]
        rows.append(
            {
                "goal": name,
                "compared": "; ".join(p["compared"] for p in parts if not p["reference"]),
                "measured": "; ".join(f"{p['label']}: {p['measured']}" for p in parts if not p["reference"]),
                "need": need,
                "status": _status(judged),
                "parts": parts,
            }
        )

    # 1. creation with 1M stored vs 1k stored (PostgreSQL)
    goal(
        "creation flat to 1M",
        "≥ 0.8×",
        [
            ratio_part(
                f"{_short(t)}: create req/s {big:,} stored / {small:,} stored",
                "create",
                t,
                t,
                0.8,
                big,
                None,
                reference=t.startswith("django_mcp daphne"),
            )
            for t in ("django_mcp uvicorn pg", "django_mcp daphne pg")
        ],
    )
    # 2. creation vs fastmcp-tasks
    goal(
        "creation vs fastmcp-tasks",
        "≥ 1.5×",
        [
            ratio_part(f"{_short(ours)} / {theirs} (create req/s)", "create", ours, theirs, 1.5, reference=ref)
            for ours, theirs, ref in (
                ("django_mcp uvicorn sqlite", "fastmcp memory", False),
                ("django_mcp uvicorn pg", "fastmcp redis", False),
                ("django_mcp daphne sqlite", "fastmcp memory", True),
                ("django_mcp daphne pg", "fastmcp redis", True),
            )
        ],
    )
    # 3. tasks/get vs fastmcp-tasks (memory on SQLite, Redis on PostgreSQL) and vs the Django floor
    goal(
        "tasks/get vs fastmcp-tasks",
        "≥ 1.0× fastmcp memory (SQLite); ≥ 3× fastmcp redis (PostgreSQL); ≥ 0.75× floor (SQLite)",
        [
            ratio_part(
                f"{_short(ours)} / {theirs} (tasks/get req/s)", "tasks/get", ours, theirs, need, small, small, ref
            )
            for ours, theirs, need, ref in (
                ("django_mcp uvicorn sqlite", "fastmcp memory", 1.0, False),
                ("django_mcp uvicorn pg", "fastmcp redis", 3.0, False),
                ("django_mcp daphne sqlite", "fastmcp memory", 1.0, True),
                ("django_mcp daphne pg", "fastmcp redis", 3.0, True),
            )
        ]
        + [
            # The floor: a bare Django async view under Django's own ASGI application ("floor uvicorn"),
            # and under django_mcp.asgi's, which the django_mcp targets serve ("floor uvicorn pooled").
            ratio_part(f"{_short(ours)} / {floor} (tasks/get req/s)", "tasks/get", ours, floor, 0.75, small, None, ref)
            for ours, floor, ref in (
                ("django_mcp uvicorn sqlite", "floor uvicorn", False),
                ("django_mcp uvicorn pg", "floor uvicorn", True),
                ("django_mcp uvicorn pg", "floor uvicorn pooled", True),
                ("django_mcp daphne sqlite", "floor daphne", True),
            )
        ],
    )
    # 3b. tasks/get against a bare Django async view under the same pooled handler
    goal(
        "tasks/get vs the pooled floor",
        "≥ 0.8× floor uvicorn pooled (SQLite)",
        [
            ratio_part(
                f"{_short(ours)} / floor uvicorn pooled (tasks/get req/s)",
                "tasks/get",
                ours,
                "floor uvicorn pooled",
                0.8,
                small,
                None,
                ref,
            )
            for ours, ref in (("django_mcp uvicorn sqlite", False), ("django_mcp uvicorn pg", True))
        ],
    )
    # 4. plain tools/call vs django-mcpz (SQLite and PostgreSQL), the official SDK for reference
    goal(
        "tools/call vs django-mcpz",
        "≥ 1.1× django-mcpz (SQLite and PostgreSQL)",
        [
            ratio_part(f"{_short(ours)} / {theirs} (tools/call req/s)", "tools/call", ours, theirs, need, reference=ref)
            for ours, theirs, need, ref in (
                ("django_mcp uvicorn sqlite", "django-mcpz", 1.1, False),
                ("django_mcp uvicorn pg", "django-mcpz", 1.1, False),
                # Django's own ASGI application instead of django_mcp.asgi's: what the pooled threads add.
                ("django_mcp uvicorn sqlite django-asgi", "django-mcpz", 1.1, True),
                ("django_mcp uvicorn sqlite", "mcp sdk", 0.8, True),
            )
        ]
        + [
            # The ceiling of any Django view: the bare async view (no MCP work at all) against the
            # SDK's whole tools/call.
            ratio_part(
                "floor uvicorn (a bare Django async view) / mcp sdk (tools/call req/s)",
                "tasks/get",
                "floor uvicorn",
                "mcp sdk",
                0.8,
                reference=True,
                scenario_theirs="tools/call",
            )
        ],
    )
    # 4b. sign-in: the same endpoint behind BearerAuth (a personal token on every request) / without
    goal(
        "sign-in costs little",
        "≥ 0.9×",
        [
            ratio_part(
                f"{_short(t)} auth / {_short(t)}, {scenario} (req/s)",
                scenario,
                f"{t} auth",
                t,
                0.9,
                stored,
                stored_theirs=stored,
            )
            for t in ("django_mcp uvicorn sqlite", "django_mcp uvicorn pg")
            for scenario, stored in (("tools/call", None), ("tasks/get", small))
        ]
        + [
            ratio_part(
                "daphne sqlite auth / daphne sqlite, tasks/get (req/s)",
                "tasks/get",
                "django_mcp daphne sqlite auth",
                "django_mcp daphne sqlite",
                0.9,
                small,
                stored_theirs=small,
                reference=True,
            )
        ],
    )
    # 4c-e. a feature on / off, the same endpoint otherwise (uvicorn, SQLite and PostgreSQL)
    for name, suffix, need in (
        ("rate limits cost little", "limited", 0.9),  # RATE_LIMIT on, never reached
        ("tracing on costs little", "traced", 0.85),  # an SDK vs the API alone
        ("the audit log costs little", "audited", 0.9),  # a row per tools/call
    ):
        goal(
            name,
            f"≥ {need}×",
            [
                ratio_part(
                    f"uvicorn {store} {suffix} / uvicorn {store}, {scenario} (req/s)",
                    scenario,
                    f"django_mcp uvicorn {store} {suffix}",
                    f"django_mcp uvicorn {store}",
                    need,
                    small if scenario == "tasks/get" else None,
                    stored_theirs=small if scenario == "tasks/get" else None,
                )
                for store in ("sqlite", "pg")
                for scenario in ("tools/call", "tasks/get")
            ],
        )
    # 4f. the deployed shape (sign-in, limits, tracing exported, audit; PostgreSQL + Redis) / the plain one
    goal(
        "deployed vs plain",
        "≥ 0.75× the plain PostgreSQL target, every operation",
        [
            ratio_part(
                f"uvicorn pg deployed / uvicorn pg, {scenario} (req/s)",
                scenario,
                DEPLOYED,
                "django_mcp uvicorn pg",
                0.75,
                small if scenario == "tasks/get" else None,
                stored_theirs=small if scenario == "tasks/get" else None,
            )
            for scenario in CLOSED
        ],
    )
    # 4g. deployed against the peers deployed the same way (their own sign-in on)
    goal(
        "deployed vs peers",
        "tools/call ≥ 1.2× django-mcpz and fastmcp deployed; create ≥ 1.5×, tasks/get ≥ 3× fastmcp redis deployed",
        [
            ratio_part(
                f"uvicorn pg deployed / {theirs} ({scenario} req/s)",
                scenario,
                DEPLOYED,
                theirs,
                need,
                small if scenario == "tasks/get" else None,
                stored_theirs=small if scenario == "tasks/get" else None,
            )
            for scenario, theirs, need in (
                ("tools/call", "django-mcpz deployed", 1.2),
                ("tools/call", "fastmcp deployed", 1.2),
                ("create", "fastmcp redis deployed", 1.5),
                ("tasks/get", "fastmcp redis deployed", 3.0),
            )
        ],
    )
    # 5. a finished task seen on a listen stream (lowest concurrency measured: 1 in a full run)
    parts = []
    for target in (
        "django_mcp uvicorn sqlite",
        "django_mcp uvicorn pg",
        "django_mcp daphne sqlite",
        "django_mcp daphne pg",
    ):
        measured = sorted(int(k.split("|")[2]) for k in fig.s if k.startswith(f"{target}|e2e listen|"))
        if not measured:
            continue
        c = measured[0]
        entry = fig.get(target, "e2e listen", c)
        after = None if entry.get("errors") or entry.get("failed") else entry.get("after_p50")
        parts.append(
            {
                "label": _short(target),
                "compared": f"{_short(target)}: notifications/tasks received − the task's lastUpdatedAt, p50",
                "measured": f"c={c}: {_fmt(after, 1)} ms (p99 {_fmt(entry.get('after_p99'), 1)}; "
                f"lag from tools/call {_fmt(entry.get('lag_p50'), 1)} ms past the {sleep_ms} ms)",
                "values": {str(c): after},
                "need": "≤ 3 ms",
                "status": _status([after <= 3.0] if after is not None else []),
                "judged": [after <= 3.0] if after is not None else [],
                "reference": "daphne" in target,
            }
        )
    goal("listen lag", "≤ 3 ms p50 (c=1)", parts)
    # 6. parked tasks make no per-task queries
    parts = []
    for target in ("django_mcp uvicorn sqlite", "django_mcp uvicorn pg"):
        entry = fig.get(target, "parked", None)
        if not entry:
            continue
        per_task = None if entry.get("failed") or entry.get("errors") else entry.get("queries_per_min_per_task")
        pg = (
            f"; PostgreSQL xact_commit {_fmt(entry['pg_xact_commit_per_min'])}/min"
            if entry.get("pg_xact_commit_per_min") is not None
            else ""
        )
        parts.append(
            {
                "label": _short(target),
                "compared": f"{_short(target)}: (statements/min with {entry.get('parked') or parked_tasks:,} parked "
                "− idle) / parked tasks",
                "measured": f"{_fmt(per_task, 4)} per task per min ({_fmt(entry.get('parked_queries_per_min'))}/min "
                f"parked, {_fmt(entry.get('idle_queries_per_min'))}/min idle{pg})",
                "values": {"-": per_task},
                "need": "≤ 0.1",
                "status": _status([per_task <= 0.1] if per_task is not None else []),
                "judged": [per_task <= 0.1] if per_task is not None else [],
                "reference": False,
            }
        )
    goal(
        "parked tasks are free",
        "≈ 0 per task (≤ 0.1 statements/min per parked task; a per-task poll every 5 s would be 12)",
        parts,
    )

    # 7. many listeners on one busy task leave the worker's other requests alone
    parts = []
    for target in ("django_mcp uvicorn sqlite", "django_mcp uvicorn pg"):
        entry = fig.get(target, "fanout", None)
        if not entry:
            continue
        p99 = None if entry.get("failed") or entry.get("errors") else entry.get("p99")
        listeners, final = entry.get("listeners"), entry.get("final_state_received")
        judged = [p99 <= 50.0, final == listeners] if p99 is not None else []
        parts.append(
            {
                "label": _short(target),
                "compared": f"{_short(target)}: tools/call p99 (c={entry.get('concurrency', 4)}) while "
                f"{_fmt(listeners)} listeners follow one task updating {_fmt(entry.get('rate'), 0)} times a "
                "second; listeners that received its final state",
                "measured": f"p99 {_fmt(p99)} ms, {_fmt(entry.get('rps'))} req/s (no listener: p99 "
                f"{_fmt(entry.get('quiet_p99'))} ms, {_fmt(entry.get('quiet_rps'))} req/s); final state to "
                f"{_fmt(final)} of {_fmt(listeners)}",
                "values": {"-": p99},
                "need": "≤ 50 ms; every listener",
                "status": _status(judged),
                "judged": judged,
                "reference": False,
            }
        )
    goal("listen fan-out", "tools/call p99 ≤ 50 ms with 1,000 listeners; every listener gets the final state", parts)

    # Earlier goals the issue did not replace.
    def p50_part(target: str) -> dict[str, Any]:
        part = ratio_part(
            f"{_short(target)}: tasks/get p50 {big:,} stored / {small:,} stored",
            "tasks/get",
            target,
            target,
            0.0,
            big,
            small,
            reference=target.startswith("django_mcp daphne"),
            key="p50",
        )
        judged = [v <= 1.2 for v in part["values"].values() if v is not None]
        return {**part, "need": "≤ 1.2×", "judged": judged, "status": _status(judged)}

    goal(
        f"tasks/get p50 at {big:,} within 1.2× of {small:,}",
        "≤ 1.2×",
        [p50_part(t) for t in ("django_mcp uvicorn pg", "django_mcp daphne pg")],
    )
    for key, name, need, limit in (
        ("running_kb_per_task", "per running task", "≤ 8 KB of worker RSS (10,000 tasks)", 8.0),
        ("retained_kb_per_task", "retained tasks cost the worker nothing", "≈ 0 (≤ 0.1 KB/task)", 0.1),
    ):
        parts = []
        for target in (*DJ, *TRACED, "fastmcp memory", "fastmcp redis"):
            entry = fig.get(target, "memory", None)
            if entry.get(key) is None:
                continue
            count = entry.get("running_created" if key.startswith("running") else "retained_created")
            ok = [entry[key] <= limit]
            parts.append(
                {
                    "label": target,
                    "compared": f"{target}: RSS growth of the worker / tasks",
                    "measured": f"{_fmt(entry[key], 2)} KB ({count} tasks)",
                    "values": {"-": entry[key]},
                    "need": need,
                    "status": _status(ok),
                    "judged": ok,
                    "reference": target not in DJ and target not in TRACED,
                }
            )
        goal(name, need, parts)
    return rows


def markdown(data: dict[str, Any], summary: dict[str, Any], goal_rows: list[dict[str, Any]]) -> str:
    meta, config = data["meta"], data["config"]
    fig = Figures(summary)
    conc = [int(c) for c in config["concurrency"]]
    small, big = config["seed_small"], config["seed_big"]
    targets = list(dict.fromkeys(r["target"] for r in data["records"]))
    m = meta["machine"]
    lines = [
        f"# django-mcp benchmark ({meta['mode']} run)",
        "",
        f"- date: {meta['date']}; wall clock {meta['wall_clock_s']:.0f} s",
        f"- machine: {m['nproc']} cores, {m['cpu']}; {m['platform']}; "
        f"server pinned to core 0, load generator to core 1: {meta['pinned']}",
        f"- git commit: `{meta['git_commit']}`"
        + (
            f" **plus uncommitted changes in django_mcp/** (source sha256 `{meta['django_mcp_source_sha256'][:16]}`)"
            if meta["django_mcp_uncommitted_changes"]
            else ""
        ),
        f"- versions: {', '.join(f'{k}={v}' for k, v in meta.get('versions', {}).items())}",
        *(
            [
                f"- machine load (1-min load average after each point; this run alone keeps about 2 busy): "
                f"median {statistics.median(loads):.1f}, max {max(loads):.1f} on {m['nproc']} cores"
                + (
                    " — **other work shared the cores during this run; read the ratios with that in mind**"
                    if statistics.median(loads) > 2.0 + 0.75
                    else ""
                )
            ]
            if (loads := [r["loadavg"] for r in data["records"] if r.get("loadavg") is not None])
            else []
        ),
        *(
            [
                f"- other work on the machine before each block (cores busy with none of this run's processes "
                f"busy): median {statistics.median(others):.2f}, max {max(others):.2f}; the run waited "
                f"{meta.get('waited_for_quiet_s', 0):.0f} s in all for it to drop below 0.5"
            ]
            if (others := [r["others_busy_cores"] for r in data["records"] if r.get("others_busy_cores") is not None])
            else []
        ),
        f"- a round of a point is *disturbed* when processes other than this run's (and PostgreSQL's and "
        f"Redis') kept more than {DISTURBED_CORES} core busy during it: medians leave disturbed rounds out "
        "when at least one round was clean (marked °), and use every round when none was (marked ~)"
        + (
            f"; {sum(e.get('disturbed_rounds') or 0 for e in summary.values())} of "
            f"{sum((e.get('rounds') or 0) - (e.get('failed_rounds') or 0) for e in summary.values())} "
            "rounds were disturbed in this run"
        ),
        f"- medians of {config['rounds']} interleaved rounds; {config['measure_s']} s measured per point "
        f"after {config['warmup_s']} s warm-up (at most {config['max_requests']} requests); "
        f"pollIntervalMs {config['poll_interval_ms']}; `tasks/get` picks a random one of "
        f"{config['get_sample']} stored task ids per request",
        "",
        "## Goals (ratios measured in this run)",
        "",
        f"Judged at c={', c='.join(str(c) for c in goal_conc(config))} on django_mcp under uvicorn (the ASGI "
        "server of fastmcp, the SDK and django-mcpz); the parts of each goal, and the daphne figures "
        "(reference, not judged), are in the next table.",
        "",
        "| goal | measured | need | status |",
        "| --- | --- | --- | --- |",
    ]
    for row in goal_rows:
        lines.append(f"| {row['goal']} | {row['measured'] or '–'} | {row['need']} | **{row['status']}** |")
    lines.extend(
        [
            "",
            "### The goals' parts",
            "",
            "| goal | compared | measured | need | status |",
            "| --- | --- | --- | --- | --- |",
        ]
    )
    for row in goal_rows:
        for part in row.get("parts", []):
            status = "reference" if part["reference"] else f"**{part['status']}**"
            lines.append(f"| {row['goal']} | {part['compared']} | {part['measured']} | {part['need']} | {status} |")

    def closed_table(title: str, scenario: str, stored: int | None, names: list[str]) -> None:
        present = [t for t in names if any(fig.get(t, scenario, c, stored) for c in conc)]
        if not present:
            return
        lines.extend(
            [
                "",
                f"## {title}",
                "",
                "| target | " + " | ".join(f"c={c} req/s | p50 ms | p99 ms" for c in conc) + " |",
                "| --- |" + " ---: | ---: | ---: |" * len(conc),
            ]
        )
        for t in present:
            cells = []
            for c in conc:
                e = fig.get(t, scenario, c, stored)
                flag = (" ⚠" if e.get("errors") or e.get("failed") else "") + _mark(e)
                cells += [_fmt(e.get("rps")) + flag, _fmt(e.get("p50"), 2), _fmt(e.get("p99"), 2)]
            lines.append(f"| {t} | " + " | ".join(cells) + " |")

    closed_table("tools/call of a sync echo tool", "tools/call", None, targets)
    closed_table("task creation (tools/call answering a task handle)", "create", None, targets)
    closed_table(f"tasks/get on an existing task, {small:,} stored (floor: fixed bytes)", "tasks/get", small, targets)
    floor_rows = [t for t in targets if t.startswith("floor")]
    if floor_rows:
        closed_table(
            "the Django floor: a bare async view answering the same bytes as tasks/get", "tasks/get", None, floor_rows
        )
    closed_table(f"tasks/get with {big:,} tasks stored (PostgreSQL)", "tasks/get", big, targets)
    closed_table(f"task creation with {big:,} tasks stored (PostgreSQL)", "create", big, targets)

    e2e = sorted(
        {(k.split("|")[0], k.split("|")[1], k.split("|")[2]) for k in summary if "|e2e " in k},
        key=lambda x: (targets.index(x[0]) if x[0] in targets else 99, x[1], int(x[2])),
    )
    if e2e:
        lines.extend(
            [
                "",
                f"## End to end: a {config['sleep_ms']} ms task, from tools/call until the client knows it finished",
                "",
                "| target | how | c | tasks | e2e p50 ms | lag p50 ms | lag p99 ms "
                "| seen after finish p50 ms | p99 ms | requests/task |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
        )
        for t, scenario, c in e2e:
            e = summary[f"{t}|{scenario}|{c}|None"]
            if e.get("unsupported"):
                lines.append(f"| {t} | {scenario[4:]} | {c} | – | {e['unsupported']} | | | | | |")
                continue
            trusted = t.startswith("django_mcp")  # fastmcp-tasks reports the time of the read as lastUpdatedAt
            after = (_fmt(e.get("after_p50")), _fmt(e.get("after_p99"))) if trusted else ("n/a", "n/a")
            lines.append(
                f"| {t} | {scenario[4:]} | {c} | {e.get('tasks')} | {_fmt(e.get('total_p50'))} "
                f"| {_fmt(e.get('lag_p50'))} | {_fmt(e.get('lag_p99'))} | {after[0]} | {after[1]} "
                f"| {_fmt(e.get('requests_per_task'), 2)}" + (" ⚠" if e.get("errors") else "") + _mark(e) + " |"
            )
    xw = [
        (t, summary[f"{t}|cross-worker cancel|None|None"])
        for t in targets
        if f"{t}|cross-worker cancel|None|None" in summary
    ]
    if xw:
        lines.extend(
            [
                "",
                "## Cross-worker: create on worker A, tasks/cancel on worker B, "
                "`cancelled` seen on B's listen stream (PG + Redis)",
                "",
                "| target | samples | p50 ms | p99 ms | max ms |",
                "| --- | ---: | ---: | ---: | ---: |",
            ]
        )
        for t, e in xw:
            lines.append(
                f"| {t} (2 workers) | {e.get('samples')} | {_fmt(e.get('p50'), 2)} | {_fmt(e.get('p99'), 2)} "
                f"| {_fmt(e.get('max'), 2)} |"
            )
    mem = [(t, summary[f"{t}|memory|None|None"]) for t in targets if f"{t}|memory|None|None" in summary]
    if mem:
        lines.extend(
            [
                "",
                "## Memory: RSS growth of one worker",
                "",
                "| target | retained tasks (2nd batch) | RSS growth MB | KB/task | (1st batch KB/task) | creates/s "
                "| running tasks | RSS growth MB | KB/task | creates/s |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
        )
        for t, e in mem:
            if e.get("failed"):
                lines.append(f"| {t} | failed: {e['failed'][:200]} | | | | | | | | |")
                continue
            rss = e.get("rss_kb") or [None] * 4
            grow_r = (rss[2] - rss[1]) / 1024 if rss[1] and rss[2] else None
            grow_w = (rss[3] - rss[2]) / 1024 if rss[2] and rss[3] else None
            lines.append(
                f"| {t} | {e.get('retained_created')} | {_fmt(grow_r)} | {_fmt(e.get('retained_kb_per_task'), 2)} | "
                f"{_fmt(e.get('first_batch_kb_per_task'), 2)} | {_fmt(e.get('retained_create_rps'))} | "
                f"{e.get('running_created')} | {_fmt(grow_w)} | {_fmt(e.get('running_kb_per_task'), 2)} "
                f"| {_fmt(e.get('running_create_rps'))} |"
            )
    parked = [(t, summary[f"{t}|parked|None|None"]) for t in targets if f"{t}|parked|None|None" in summary]
    if parked:
        lines.extend(
            [
                "",
                f"## Parked tasks: SQL statements sent by the worker while {config.get('parked_tasks', 1000):,} "
                "tasks wait in input_required (no client traffic)",
                "",
                "| target | parked | idle statements/min | parked statements/min | per task per min "
                "| PostgreSQL xact_commit/min (whole db) | statements in the parked window |",
                "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
            ]
        )
        for t, e in parked:
            if e.get("failed"):
                lines.append(f"| {t} | failed: {e['failed'][:300]} | | | | | |")
                continue
            shown = "; ".join(f"{n}× `{q}`" for q, n in list((e.get("parked_statements") or {}).items())[:4])
            lines.append(
                f"| {t} | {e.get('parked')} | {_fmt(e.get('idle_queries_per_min'))} "
                f"| {_fmt(e.get('parked_queries_per_min'))} | {_fmt(e.get('queries_per_min_per_task'), 4)} "
                f"| {_fmt(e.get('pg_xact_commit_per_min'))} | {shown or '–'} (in {e.get('window_s')} s) |"
            )
    failures = [
        f"- {k.replace('|None', '').replace('|', ' ')}: {v.get('failed') or ''} {v.get('errors') or ''} errors"
        for k, v in summary.items()
        if v.get("failed") or v.get("errors")
    ]
    if data.get("skipped") or data.get("notes") or failures:
        lines.extend(["", "## Skipped, failed, notes", ""])
        lines += [f"- skipped {k}: {v}" for k, v in data.get("skipped", {}).items()]
        lines += [f"- {n}" for n in data.get("notes", [])]
        lines += failures
    lines.append("")
    return "\n".join(lines)


def chart(data: dict[str, Any], summary: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = Figures(summary)
    conc = [int(c) for c in data["config"]["concurrency"]]
    small = data["config"]["seed_small"]
    targets = list(dict.fromkeys(r["target"] for r in data["records"]))
    panels = [
        ("tools/call", None, "tools/call (sync echo)"),
        ("create", None, "task creation"),
        ("tasks/get", small, f"tasks/get ({small:,} stored; floor)"),
    ]
    figure, axes = plt.subplots(2, 3, figsize=(16, 9))
    palette = plt.get_cmap("tab10")
    colour = {t: palette(i % 10) for i, t in enumerate(targets)}
    for col, (scenario, stored, title) in enumerate(panels):
        for t in targets:
            rows = [(c, fig.get(t, scenario, c, None if t.startswith("floor") else stored)) for c in conc]
            rows = [(c, e) for c, e in rows if e.get("rps")]
            if not rows:
                continue
            style = "-" if t.startswith("django_mcp ") else "--"
            axes[0][col].plot(
                [c for c, _ in rows], [e["rps"] for _, e in rows], style, marker="o", label=t, color=colour[t]
            )
            axes[1][col].plot(
                [c for c, _ in rows], [e["p50"] for _, e in rows], style, marker="o", label=t, color=colour[t]
            )
        for row, label in ((0, "req/s (median of rounds)"), (1, "p50 latency, ms")):
            ax = axes[row][col]
            ax.set_xscale("log", base=2)
            ax.set_xticks(conc, [str(c) for c in conc])
            ax.set_yscale("log")
            ax.set_xlabel("concurrency")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
        axes[0][col].set_title(title)
    handles, labels = axes[0][2].get_legend_handles_labels()
    more = {lab: h for ax in axes.flat for h, lab in zip(*ax.get_legend_handles_labels(), strict=True)}
    figure.legend(list(more.values()) or handles, list(more.keys()) or labels, loc="lower center", ncol=5, fontsize=9)
    meta = data["meta"]
    figure.suptitle(
        f"django-mcp bench, {meta['date']}, {meta['machine']['nproc']} cores {meta['machine']['cpu']}, "
        f"commit {meta['git_commit'][:10]}"
    )
    figure.tight_layout(rect=(0, 0.07, 1, 0.96))
    figure.savefig(path, dpi=110)
    return True


def main() -> None:
    raw = Path(sys.argv[1])
    data = json.loads(raw.read_text())
    summary = summarize(data["records"])
    config = data["config"]
    goal_rows = goals(
        Figures(summary),
        goal_conc(config),
        config["seed_small"],
        config["seed_big"],
        config["sleep_ms"],
        config.get("parked_tasks", 1000),
    )
    data["summary"] = summary
    data["goals"] = goal_rows
    raw.write_text(json.dumps(data, indent=1, default=str))
    md = markdown(data, summary, goal_rows)
    (raw.parent / "results.md").write_text(md)
    drew = chart(data, summary, raw.parent / "results.png")
    print("\n| goal | measured | need | status |\n| --- | --- | --- | --- |")
    for row in goal_rows:
        print(f"| {row['goal']} | {row['measured'] or '–'} | {row['need']} | {row['status']} |")
    print(
        f"\nwrote {raw.parent / 'results.md'}"
        + (f", {raw.parent / 'results.png'}" if drew else " (no chart: matplotlib missing)")
    )


if __name__ == "__main__":
    main()

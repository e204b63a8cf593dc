"""The official MCP conformance suite judges the fixture project, through tests/conformance/runner.py.

One run per module: the runner installs Node.js 22 and the suite into its cache
the first time (needs npm; later runs need nothing from the network), starts
``tests.conformance`` under daphne on 127.0.0.1, runs the 2026-07-28
requirement set (plus the tasks extension) and stops the server.

Every group must be clean: one test per group, so a failure names its area.

The handshake era (2025-11-25 and earlier: ``initialize``, ``Mcp-Session-Id``,
GET/DELETE, server→client requests) is judged by its own runs at the end of
this module.
"""

from __future__ import annotations

import io

import pytest

from tests.conformance.runner import ConformanceError, ConformanceResult, Finding, report, run

pytestmark = [pytest.mark.live, pytest.mark.conformance, pytest.mark.timeout(1200)]

LEGACY_REVISIONS = {
    # revision: the least number of scenarios a complete run has (suite 0.2.0-alpha.12)
    "2025-11-25": 33,  # the frozen requirement set: 30 scored + server-session-lifecycle, json-schema-2020-12,
    # server-sse-polling (not scored)
    "2025-06-18": 27,  # no requirement set: every scenario applicable at 2025-06-18 (--suite all)
    "2025-03-26": 1,  # server-session-lifecycle only
}


@pytest.fixture(scope="module")
def conformance(tmp_path_factory: pytest.TempPathFactory) -> ConformanceResult | str:
    """The run's result, or why the suite could not run (each test then fails with that message)."""
    out = tmp_path_factory.mktemp("conformance-results")
    try:
        result = run(out_dir=out, progress=io.StringIO())
    except ConformanceError as exc:
        return f"the conformance suite could not run: {exc}"
    text = io.StringIO()
    report(result, text)
    (out / "report.txt").write_text(text.getvalue(), encoding="utf-8")
    return result


def ran(outcome: ConformanceResult | str) -> ConformanceResult:
    __tracebackhide__ = True
    if isinstance(outcome, str):
        pytest.fail(outcome, pytrace=False)
    return outcome


def explain(result: ConformanceResult, failures: list[Finding]) -> str:
    lines = [f"{len(failures)} failing check(s):"]
    lines += [f"  {f.scenario} :: {f.check_id}: {f.message}" for f in failures]
    lines.append(f"{result.summary_line} (results and logs: {result.out_dir})")
    return "\n".join(lines)


def assert_clean(result: ConformanceResult, failures: list[Finding]) -> None:
    __tracebackhide__ = True
    if failures:
        raise AssertionError(explain(result, failures))


def test_nothing_fails_anywhere(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert_clean(result, result.failures)


def test_suite_ran_every_planned_scenario(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert result.suite_exit_code is not None, explain(result, result.failures)
    assert len(result.scenarios) >= 50, sorted(result.scenarios)  # 37 scored + 13 not_scored at 0.2.0-alpha.12


def test_core_tools_transport_and_http_headers_pass(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert_clean(result, result.failures_in("core", "tools", "transport", "http-headers"))


def test_resources_pass(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert_clean(result, result.failures_in("resources"))


def test_prompts_pass(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert_clean(result, result.failures_in("prompts"))


def test_mrtr_pass(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert_clean(result, result.failures_in("mrtr"))


def test_tasks_extension_pass(conformance: ConformanceResult | str) -> None:
    result = ran(conformance)
    assert_clean(result, result.failures_in("tasks-extension"))


# ---------------------------------------------------------------- the handshake era


@pytest.fixture(scope="module", params=sorted(LEGACY_REVISIONS, reverse=True))
def legacy_conformance(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> ConformanceResult | str:
    """One run per handshake-era revision, with its own fixture server."""
    revision: str = request.param
    out = tmp_path_factory.mktemp(f"conformance-results-{revision}")
    try:
        result = run(out_dir=out, progress=io.StringIO(), revision=revision)
    except ConformanceError as exc:
        return f"the conformance suite could not run at {revision}: {exc}"
    text = io.StringIO()
    report(result, text)
    (out / "report.txt").write_text(text.getvalue(), encoding="utf-8")
    return result


def test_handshake_era_nothing_fails(legacy_conformance: ConformanceResult | str) -> None:
    result = ran(legacy_conformance)
    assert_clean(result, result.failures)


def test_handshake_era_ran_every_planned_scenario(legacy_conformance: ConformanceResult | str) -> None:
    result = ran(legacy_conformance)
    assert result.suite_exit_code is not None, explain(result, result.failures)
    assert len(result.scenarios) >= LEGACY_REVISIONS[result.revision], sorted(result.scenarios)

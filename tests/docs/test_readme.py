"""The README and the pages of ``docs/`` work as written: their snippets are checked, and the marked ones run.

A fenced block is marked by an HTML comment on the line before its fence (invisible on GitHub and
PyPI), ``<!-- group:kind [argument] -->``:

* ``quickstart:*``: the Quick start, built, served and called by ``tests/docs/test_quickstart.py``;
* ``tasks-wire:run`` / ``tasks-wire:answer``: the curl session of the tasks wire, run here with
  bash against the example project under daphne, each answer compared with the one shown;
* ``excerpt:PATH``: every function or class in the block is verbatim in ``PATH``, code the test
  suite runs (the example project's tools run in ``tests/live/test_daphne.py`` and here);
* ``runs-in:TEST``: a shell block of a ``docs/`` page whose command the test module ``TEST`` runs
  (every other shell block of those pages must be marked so).

Every ``python`` block compiles, imports only names ``django_mcp`` has, and calls them with
arguments they accept; every ``pip install`` names the distribution of ``pyproject.toml``; the
SQLite options of the Quick start, of Deployment and of check W001's hint are the same.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import os
import re
import shutil
import subprocess
import symtable
import sys
import time
import tomllib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.readme_blocks import (
    ROOT,
    assert_answer,
    marked_block,
    marked_blocks,
    page_texts,
    readme,
    run_shell,
)

PYPROJECT = ROOT / "pyproject.toml"
_FENCED = re.compile(r"^```([^`\n]*)\n(.*?)\n```$", re.M | re.S)  # info string: a language, or {directive} …


def python_blocks() -> list[tuple[str, int, str]]:
    """Every ``python`` block of the README and ``docs/``: its page, the line of its fence, its code."""
    return [
        (page, text.count("\n", 0, m.start()) + 1, m[2])
        for page, text in page_texts()
        for m in _FENCED.finditer(text)
        if m[1] == "python"
    ]


def section(title: str) -> str:
    """The text under the heading ``title`` (in the README or a page of ``docs/``) up to the next heading
    of the same or a higher level."""
    found = [(text, h) for _, text in page_texts() if (h := re.search(rf"^(#+) {re.escape(title)}\n", text, re.M))]
    assert len(found) == 1, f"the docs need exactly one section {title!r}, found {len(found)}"
    text, heading = found[0]
    level = len(heading[1])
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(text, heading.end())
    return text[heading.end() : end.start() if end else len(text)]


def distribution_name() -> str:
    return str(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["name"])


# ---------------------------------------------------------------- comparing answers


def test_every_python_snippet_compiles():
    blocks = python_blocks()
    assert len(blocks) >= 10
    for page, line, code in blocks:
        compile(code, f"{page}:{line}", "exec")


# Names a block may use without defining them: the settings the Quick start appends to startproject's.
GIVEN = {"quickstart:append": {"DATABASES", "INSTALLED_APPS"}}


def undefined_names(code: str) -> set[str]:
    """The global names ``code`` uses but neither assigns, imports nor gets from builtins."""
    top = symtable.symtable(code, "<snippet>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        used |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and (table is top or s.is_global())}
        tables += table.get_children()
    return used - defined - set(dir(builtins))


def test_every_python_snippet_defines_or_imports_what_it_uses():
    """Pasted alone, a snippet finds every name it uses (the Tasks ones used render_frame, CONFIRM ...)."""
    given = {
        (b.page, b.line + 1): GIVEN[f"{b.group}:{b.kind}"] for b in marked_blocks("quickstart") if b.kind == "append"
    }
    for page, line, code in python_blocks():
        missing = undefined_names(code) - given.get((page, line), set())
        assert not missing, f"{page}:{line} uses {sorted(missing)} without importing or defining them"


def test_undefined_names_finds_what_a_snippet_lacks():
    assert undefined_names("import os\n\ndef f(x):\n    return os.sep + y + len(x)\n") == {"y"}
    assert undefined_names("@tool\nasync def f(request):\n    await asyncio.sleep(CONFIRM)\n") == {
        "tool",
        "asyncio",
        "CONFIRM",
    }


def test_the_task_excerpts_run_when_pasted(monkeypatch):
    """Each excerpt of the example's task tools, run alone, registers its tools (into a registry of its own)."""
    import django_mcp
    from django_mcp import ToolRegistry

    for block in marked_blocks("excerpt"):
        fresh = ToolRegistry(name=f"readme-{block.line}")
        monkeypatch.setattr(django_mcp, "tool", fresh.register)
        exec(compile(block.code, str(block), "exec"), {"__name__": "readme_snippet"})
        tools = [n for n in ast.parse(block.code).body if isinstance(n, ast.AsyncFunctionDef | ast.FunctionDef)]
        registered = {t.name for t in fresh}
        assert registered and registered <= {t.name for t in tools}, (block, registered)


def _imported(tree: ast.AST, where: str) -> dict[str, Any]:
    """The names a snippet imports from django_mcp, checked to exist."""
    names: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "django_mcp":
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{where}: {node.module} has no {alias.name!r}"
                names[alias.asname or alias.name] = getattr(module, alias.name)
    return names


def _callee(node: ast.Call, names: dict[str, Any]) -> tuple[str, Any] | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in names:
        return func.id, names[func.id]
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in names:
        return f"{func.value.id}.{func.attr}", getattr(names[func.value.id], func.attr, None)
    return None


def test_python_snippets_use_the_api_that_exists():
    """Imports from django_mcp resolve, and calls of what they import pass arguments it accepts."""
    calls = 0
    for page, line, code in python_blocks():
        tree = ast.parse(code)
        names = _imported(tree, f"{page}:{line}")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or (callee := _callee(node, names)) is None:
                continue
            label, target = callee
            assert callable(target), f"{page}:{line}: {label} is not callable"
            try:
                signature = inspect.signature(target)
            except (TypeError, ValueError):
                continue
            params = signature.parameters.values()
            kinds = {p.kind for p in params}
            if inspect.Parameter.VAR_KEYWORD not in kinds:
                accepted = {p.name for p in params if p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)}
                for keyword in node.keywords:
                    assert keyword.arg is None or keyword.arg in accepted, (
                        f"{page}:{line + node.lineno}: {label}() takes no argument {keyword.arg!r}"
                    )
            if inspect.Parameter.VAR_POSITIONAL not in kinds:
                positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
                assert len(node.args) <= len(positional), (
                    f"{page}:{line + node.lineno}: {label}() takes at most {len(positional)} positional arguments"
                )
            calls += 1
    assert calls >= 10


def test_every_shell_block_of_the_docs_pages_is_run_by_a_test():
    """A command a page of ``docs/`` shows is marked ``<!-- runs-in:TEST -->``, and TEST runs that program
    on that target; the Quick start's and the tasks wire's blocks are run by their own tests (the README's
    commands too, by the Quick start, example and test-command tests)."""
    marked = {(b.page, b.line + 1) for group in ("runs-in", "tasks-wire", "quickstart") for b in marked_blocks(group)}
    for page, line, _code in shell_blocks():
        assert (page, line) in marked, f"{page}:{line}: mark it <!-- runs-in:TEST --> with the test that runs it"
    for block in marked_blocks("runs-in"):
        test = ROOT / block.kind
        assert test.is_file(), f"{block}: no test {block.kind}"
        source = test.read_text(encoding="utf-8")
        for command in re.split(r"&&|\n", block.code.split("  #")[0]):
            words = [w for w in command.split() if not w.startswith("-") and not w[0].isdigit()]
            program, target = words[0], words[-1]
            if program == "pip":
                continue  # the suite's venv has it installed
            assert program in source and target in source, f"{block}: {block.kind} does not run {program} {target}"


_LINK = re.compile(r"\]\(<?([^)\s>]+)>?\)")


def _heading_anchors(text: str) -> set[str]:
    """GitHub's (and MyST's ``myst_heading_anchors``) anchors of a page's headings."""
    text = _FENCED.sub("", text)
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#{1,6} (.+)$", text, re.M)
    }


def _inventory(path: Path) -> set[tuple[str, str]]:
    """The ``(domain:type, name)`` entries of a Sphinx ``objects.inv`` (version 2: four header lines, zlib)."""
    body = zlib.decompress(path.read_bytes().split(b"\n", 4)[4]).decode()
    entries = set()
    for line in body.splitlines():
        found = re.match(r"(.+?)\s+(\S+:\S+)\s+-?\d+\s+\S+\s+.*", line)
        if found:
            entries.add((found[2], found[1]))
    return entries


def test_every_link_of_the_pages_leads_somewhere():
    """A relative link names a file of the repository (and a heading of it, after ``#``); an ``inv:django``
    link names an entry of the vendored inventory of Django's docs (what intersphinx resolves offline)."""
    django = _inventory(ROOT / "docs" / "_intersphinx" / "django-5.2.inv")
    checked = 0
    for page, text in page_texts():
        for target in _LINK.findall(_FENCED.sub("", text)):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            checked += 1
            if target.startswith("inv:django:"):
                kind, _, name = target.removeprefix("inv:django:").partition("#")
                assert (kind, name) in django, f"{page}: {target} is not in Django's inventory"
                continue
            path, _, fragment = target.partition("#")
            linked = (ROOT / page).parent / path if path else ROOT / page
            assert linked.is_file(), f"{page}: the link {target} leads to no file"
            if fragment and linked.suffix == ".md":
                anchors = _heading_anchors(linked.read_text(encoding="utf-8"))
                assert fragment in anchors, f"{page}: {target} names no heading of {path or page}"
    assert checked >= 30


def shell_blocks() -> list[tuple[str, int, str]]:
    """Every ``sh`` block of the pages of ``docs/``: its page, the line of its fence, its code."""
    return [
        (page, text.count("\n", 0, m.start()) + 1, m[2])
        for page, text in page_texts()
        if page != "README.md"
        for m in _FENCED.finditer(text)
        if m[1] in ("sh", "bash", "console")
    ]


def test_excerpts_are_the_code_that_runs():
    """``<!-- excerpt:PATH -->`` (task tools, also run alone above) and ``<!-- source:PATH -->`` blocks: each
    function and class they show is verbatim in PATH."""
    blocks = marked_blocks("excerpt") + marked_blocks("source")
    assert marked_blocks("excerpt") and marked_blocks("source"), "no excerpt or source block in the docs"
    for block in blocks:
        source = (ROOT / block.kind).read_text(encoding="utf-8")
        definitions = [
            node
            for node in ast.parse(block.code).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ]
        assert definitions, f"{block}: no function or class to compare"
        lines = block.code.splitlines()
        for node in definitions:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            text = "\n".join(lines[first - 1 : node.end_lineno])
            assert text in source, f"{block}: {node.name} is not verbatim in {block.kind}"


# ---------------------------------------------------------------- names, commands, settings


def test_install_lines_name_our_distribution():
    name = distribution_name()
    assert name == "django-mcp-endpoint"
    installs = [
        found for _, text in page_texts() for found in re.findall(r"pip install\s+\"?(django[-_]mcp[\w-]*)", text)
    ]
    assert installs and set(installs) == {name}, installs
    dev = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    assert any(requirement.startswith(f"{name}[") for requirement in dev), dev
    assert "django-mcp" in readme() and "unrelated project" in readme()  # why the names differ


def test_classifiers_name_every_django_the_dependency_allows():
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    django = next(r for r in project["dependencies"] if re.match(r"django\W", r, re.I))
    allowed = SpecifierSet(django[len("django") :])
    candidates = [f"{major}.{minor}" for major in (5, 6, 7) for minor in range(3)]  # Django: x.0, x.1, x.2 LTS
    classified = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if c.startswith("Framework :: Django :: ")}
    assert classified == {v for v in candidates if allowed.contains(f"{v}.0")}
    pythons = {
        c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.match(r"Programming Language :: Python :: 3\.", c)
    }
    assert pythons == {"3.11", "3.12", "3.13"}


def _between(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n```sh\n(.*?)\n```\n<!-- /{marker} -->", readme(), re.S)
    assert found, marker
    return found[1]


def test_example_command_installs_the_runtime_only_and_shows_progress():
    command = _between("example-command")
    assert ".venv/bin/pip install -e . " in command, command
    assert "[dev]" not in command and " -q" not in command and "-v0" not in command, command
    assert command.endswith("manage.py runserver 127.0.0.1:8000")


def test_test_command_keeps_the_shape_ci_runs():
    command = _between("test-command")
    assert re.fullmatch(
        r'python3 -m venv \.venv && \.venv/bin/pip install (-q )?-e "\.\[dev\]" '
        r"&& \.venv/bin/python -m pytest -q -n auto",
        command,
    ), command


def _options_literal(text: str, where: str) -> dict[str, Any]:
    found = re.search(r"OPTIONS\"?\]? = (\{.*?\})", text, re.S)
    assert found, f"no SQLite OPTIONS in {where}"
    return dict(ast.literal_eval(found[1]))


def test_sqlite_options_agree_across_quick_start_deployment_and_check_w001(monkeypatch):
    from types import SimpleNamespace

    from django_mcp import checks

    monkeypatch.setattr(
        checks, "settings", SimpleNamespace(DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3"}})
    )
    (warning,) = [m for m in checks.check_sqlite() if m.id == "django_mcp.W001"]
    hint = _options_literal(warning.hint or "", "check W001's hint")
    deployment = _options_literal(section("One process: the embedded default"), "README Deployment")
    quick_start = _options_literal(marked_block("quickstart", "append").code, "the Quick start's settings")
    assert hint == deployment == quick_start
    assert hint["transaction_mode"] == "IMMEDIATE"


def test_protocol_table_names_the_meta_keys_in_full():
    table = section("Protocol behaviour")
    assert "`io.modelcontextprotocol/protocolVersion`" in table
    assert "`io.modelcontextprotocol/clientCapabilities`" in table
    assert not re.search(r"`(protocolVersion|clientCapabilities)`", table)


# ---------------------------------------------------------------- the example command's project

EXAMPLE_ENV = {
    "DJANGO_SETTINGS_MODULE": "example_project.settings",
    "DJANGO_MCP_DATABASE": "sqlite",
    "REDIS_URL": "",
    "DJANGO_DEBUG": "1",
}


def test_example_project_passes_check_deploy_and_says_why_for_what_it_silences(tmp_path):
    env = {**os.environ, **EXAMPLE_ENV, "DJANGO_MCP_SQLITE": str(tmp_path / "db.sqlite3")}
    env.pop("DJANGO_SECRET_KEY", None)
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "System check identified no issues" in proc.stdout
    settings = (ROOT / "example_project" / "settings.py").read_text(encoding="utf-8")
    silenced = re.findall(r'^\s+"(security\.W\d+)",(.*)$', settings, re.M)
    assert {check for check, _ in silenced} == {f"security.W{n:03}" for n in (4, 8, 9, 12, 16, 18)}
    for check, comment in silenced:
        assert re.match(r"\s+# \w", comment), f"{check} is silenced without a reason"


@pytest.mark.live
@pytest.mark.parametrize(
    "command",
    [
        ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "example_project.asgi:application"],
        ["manage.py", "runserver", "127.0.0.1:{port}", "--noreload"],
    ],
    ids=["daphne", "runserver"],
)
def test_example_project_logs_each_line_once(tmp_path, command):
    import signal

    import httpx

    from tests.live.servers import free_port

    env = {**os.environ, **EXAMPLE_ENV, "DJANGO_MCP_SQLITE": str(tmp_path / "db.sqlite3")}
    port = free_port()
    with (tmp_path / "log").open("w+") as log:
        proc = subprocess.Popen(
            [sys.executable, *(arg.replace("{port}", str(port)) for arg in command)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    bad = httpx.post(f"http://127.0.0.1:{port}/mcp", content=b"{nope", timeout=1)
                    break
                except httpx.TransportError:
                    assert proc.poll() is None and time.monotonic() < deadline, "the example server did not start"
                    time.sleep(0.1)
            assert 400 <= bad.status_code < 500  # logged as a django.request warning ("Bad Request: /mcp")
        finally:
            proc.send_signal(signal.SIGTERM)  # a django_mcp warning ("Shutting down gracefully")
            proc.wait(timeout=20)
        log.seek(0)
        output = log.read()
    assert output.count(f"{bad.reason_phrase}: /mcp") == 1, output
    assert output.count("Shutting down gracefully") == 1, output


# ---------------------------------------------------------------- the tasks wire, with curl


@pytest.fixture(scope="module")
def example_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    from tests.live.servers import server_process

    env = {
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "DJANGO_MCP_SQLITE": str(tmp_path_factory.mktemp("readme-example") / "db.sqlite3"),
        "DJANGO_MCP_DATABASE": "sqlite",
        "REDIS_URL": "",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env={**os.environ, **env}, check=True, timeout=120
    )
    with server_process(["manage.py", "runserver", "127.0.0.1:{port}", "--noreload"], env=env) as base:
        yield int(base.rsplit(":", 1)[1])


@pytest.mark.live
@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="the session uses curl and jq")
def test_tasks_wire_session_runs_as_written(example_port, tmp_path):
    """Each command of the session, in order, in one shell environment; reads are retried while the task moves on."""
    blocks = marked_blocks("tasks-wire")
    assert [b.kind for b in blocks[:2]] == ["run", "run"], "the session starts with its variables, then a command"
    methods = set()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PG", "REDIS"))}
    for i, block in enumerate(blocks):
        if block.kind != "run":
            continue
        answer = blocks[i + 1] if i + 1 < len(blocks) and blocks[i + 1].kind == "answer" else None
        code = block.code.replace("127.0.0.1:8000", f"127.0.0.1:{example_port}")
        method = re.search(r"Mcp-Method: ([\w/]+)", code)
        if method:
            methods.add(method[1])
        retry = method is not None and method[1] in ("tasks/get", "subscriptions/listen")
        deadline = time.monotonic() + 20
        while True:
            output, after = run_shell(code, env, tmp_path)
            try:
                if answer is not None:
                    assert_answer(output, answer)
                break
            except AssertionError:
                if not retry or time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        env = after
    assert methods == {"tools/call", "tasks/get", "tasks/update", "tasks/cancel", "subscriptions/listen"}

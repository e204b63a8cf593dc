"""Task bodies (tasks/context.py): what may be one, and how a sync body's value is awaited."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from django_mcp.tasks.context import begin_run, check_run


@pytest.mark.parametrize(
    ("run", "said"),
    [
        (42, "run must be a function taking the task (async def or def), not int"),
        ("report", "run must be a function taking the task (async def or def), not str"),
    ],
)
def test_what_is_not_a_function_is_refused_as_a_body(run, said):
    with pytest.raises(TypeError) as refused:
        check_run(run)
    assert str(refused.value) == said


def test_a_coroutine_is_refused_and_closed():
    async def body(task: Any) -> str:
        return "never"

    coroutine = body(None)
    with pytest.raises(TypeError, match="not a coroutine: pass run=fn, not run=fn"):
        check_run(coroutine)
    assert coroutine.cr_frame is None  # closed here: no "never awaited" warning later


async def test_a_sync_body_that_returns_an_awaitable_is_awaited():
    async def later() -> str:
        await asyncio.sleep(0)
        return "awaited"

    assert await begin_run(lambda task: later(), object()) == "awaited"  # type: ignore[arg-type]

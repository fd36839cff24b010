"""Every prompt of the loop fits LearningConfig.max_prompt_chars: the conversation, its tool
calls (at most half) and a previous summary share one budget, newest kept first. The tool
calls used to come on top of the budget (200 long calls added ~85,000 characters), and a
run's trace had no budget at all: a window a model's context could not hold failed its batch
on every retry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from philont.learning.prompts import (
    condense_prompt,
    extract_prompt,
    judge_prompt,
    reflect_prompt,
    summary_prompt,
)
from philont.learning.window import Run, ToolCall, Turn, Window

T0 = datetime(2026, 5, 1, tzinfo=UTC)
MAX_CHARS = 2_000


def window(sizes: list[int], calls: list[int]) -> Window:
    turns = tuple(
        Turn(
            i, "s", "user" if i % 2 else "assistant", f"t{i} " + "x" * n, T0 + timedelta(seconds=i)
        )
        for i, n in enumerate(sizes)
    )
    trace = tuple(
        ToolCall(i, "s", "tool" * (n % 40), {"p": "y" * n}, "r" * n, bool(i % 3), T0)
        for i, n in enumerate(calls)
    )
    return Window("s", turns, trace, "s")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6_000), min_size=1, max_size=80),
    st.lists(st.integers(0, 3_000), max_size=300),
    st.integers(8_000, 150_000),
    st.integers(0, 4_200),
)
def test_every_prompt_fits_the_budget_and_keeps_the_newest_turn(
    sizes: list[int], calls: list[int], total: int, previous: int
) -> None:
    w = window(sizes, calls)
    newest = f"t{len(sizes) - 1} "
    prompts = [
        reflect_prompt(w, max_chars=MAX_CHARS, total=total),
        extract_prompt(w, timezone="UTC", max_chars=MAX_CHARS, total=total),
        summary_prompt(w.turns, "p" * previous or None, max_chars=MAX_CHARS, total=total),
    ]
    for prompt in prompts:
        assert len(prompt) <= total
        assert newest in prompt
    run = Run("g" * 5_000, w.calls, "r" * 5_000)
    for prompt in (
        judge_prompt(run, max_chars=MAX_CHARS, total=total),
        condense_prompt(run.goal, run.trace, run.result, max_chars=MAX_CHARS, total=total),
    ):
        assert len(prompt) <= total
        if w.calls:
            assert f"\n{len(w.calls)}. " in prompt  # the last call is always kept


def test_what_is_left_out_is_said() -> None:
    w = window([3_000] * 50, [1_000] * 100)
    prompt = reflect_prompt(w, max_chars=MAX_CHARS, total=20_000)
    assert "earlier messages left out]" in prompt
    assert "earlier tool calls left out]" in prompt

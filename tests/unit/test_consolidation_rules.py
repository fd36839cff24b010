"""Batching rules of the idle consolidator (batch ends, retry delays) and its settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.consolidation import batch_end, retry_delay
from philont.errors import InvalidInputError
from philont.learning import ConsolidatorConfig, LearningConfig


@pytest.mark.parametrize(
    ("stamps", "limit", "end"),
    [
        ([], 3, None),
        ([1, 2], 3, 2),  # fewer than the limit: all of them
        ([1, 2, 3], 3, 3),  # exactly the limit
        ([1, 2, 3, 4], 3, 3),  # the limit falls between two milliseconds
        ([1, 2, 3, 3], 3, 2),  # it would split millisecond 3: stop before it
        ([1, 3, 3, 3, 3], 3, 1),
        ([5, 5, 5, 5], 3, 5),  # one millisecond over the limit: taken whole
    ],
)
def test_a_batch_ends_between_milliseconds(stamps: list[int], limit: int, end: int | None) -> None:
    assert batch_end(stamps, limit) == end


@given(st.lists(st.integers(min_value=0, max_value=20), max_size=40), st.integers(1, 10))
def test_no_millisecond_is_ever_split_and_the_limit_holds_when_it_can(
    raw: list[int], limit: int
) -> None:
    stamps = sorted(raw)
    end = batch_end(stamps[: limit + 1], limit)
    if not stamps:
        assert end is None
        return
    assert end is not None
    taken = [ts for ts in stamps if ts <= end]
    assert taken == stamps[: len(taken)] and taken  # a prefix, never empty
    if len(taken) > limit:  # only when a single millisecond alone is over the limit
        assert len(set(taken)) == 1


@pytest.mark.parametrize(
    ("attempts", "minutes"), [(0, 0), (1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (50, 60)]
)
def test_a_failed_batch_waits_twice_as_long_each_time_up_to_the_cap(
    attempts: int, minutes: int
) -> None:
    delay = retry_delay(attempts, base=timedelta(minutes=1), cap=timedelta(hours=1))
    assert delay == timedelta(minutes=minutes)


def test_a_batch_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        batch_end([1], 0)


@pytest.mark.parametrize(
    "build",
    [
        lambda: LearningConfig(timezone="Mars/Olympus"),
        lambda: LearningConfig(duplicate_threshold=0),
        lambda: LearningConfig(summary_min_messages=0),
        lambda: ConsolidatorConfig(batch_size=0),
        lambda: ConsolidatorConfig(lease=timedelta(0)),
    ],
)
def test_a_bad_setting_is_refused_when_the_config_is_made(build: Callable[[], object]) -> None:
    with pytest.raises(InvalidInputError):
        build()


# Every setting, with values of the wrong type and out of range: each is refused when the
# config is made, by an InvalidInputError that names the setting (a str compared with an int
# was a TypeError; verify_then_condense="no" turned the mode on; interval=0 made the loop spin;
# max_runs_judged=-1 silently left the last run unjudged; max_drafts=0 deleted every draft).
NOT_A_NUMBER = ["5", None, True, 2.5]
BAD_SETTINGS: list[tuple[type, str, list[object]]] = [
    (LearningConfig, "max_drafts", [*NOT_A_NUMBER, 0, -1]),
    (LearningConfig, "duplicate_threshold", ["0.5", None, True, 0, -0.1, 1.01, float("nan")]),
    (LearningConfig, "summary_min_messages", [*NOT_A_NUMBER, 0]),
    (LearningConfig, "verify_then_condense", ["no", 0, 1, None]),
    (LearningConfig, "max_window_messages", [*NOT_A_NUMBER, 0]),
    (LearningConfig, "max_message_chars", [*NOT_A_NUMBER, 0]),
    (LearningConfig, "max_prompt_chars", [*NOT_A_NUMBER, 0, -5]),
    (LearningConfig, "max_runs_judged", [*NOT_A_NUMBER, -1]),
    (ConsolidatorConfig, "idle_after", [300, "5m", None, timedelta(seconds=-1)]),
    (ConsolidatorConfig, "min_messages", [*NOT_A_NUMBER, 0]),
    (ConsolidatorConfig, "batch_size", [*NOT_A_NUMBER, 0]),
    (ConsolidatorConfig, "backlog", ["yes", 1, None]),
    (ConsolidatorConfig, "lease", [600, None, timedelta(0)]),
    (ConsolidatorConfig, "retry_base", [60, timedelta(0), timedelta(seconds=-5)]),
    (ConsolidatorConfig, "retry_max", [3600, timedelta(0)]),
    (ConsolidatorConfig, "interval", [60, 60.0, timedelta(0), timedelta(seconds=-1)]),
    (ConsolidatorConfig, "max_batches_per_tick", [*NOT_A_NUMBER, 0]),
    (ConsolidatorConfig, "answer_attempts", [*NOT_A_NUMBER, 0, -1]),
]


@pytest.mark.parametrize(
    ("config", "name", "value"),
    [(config, name, value) for config, name, values in BAD_SETTINGS for value in values],
)
def test_every_bad_setting_is_refused_by_name(config: type, name: str, value: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        config(**{name: value})
    assert caught.value.message.startswith(f"{name} must be ")


def test_every_setting_is_in_the_bad_settings_table() -> None:
    covered = {(config, name) for config, name, _ in BAD_SETTINGS}
    every = {
        (config, f.name)
        for config in (LearningConfig, ConsolidatorConfig)
        for f in dataclasses.fields(config)
        if f.name != "timezone"  # checked as a zone name (above)
    }
    assert covered == every


@given(
    st.integers(1, 10**6),
    st.integers(1, 10**6),
    st.integers(0, 100),
    st.floats(0.01, 1.0),
    st.integers(1, 10**6),
)
def test_good_settings_are_kept_as_given(
    batch: int, drafts: int, judged: int, threshold: float, seconds: int
) -> None:
    learning = LearningConfig(
        max_drafts=drafts, max_runs_judged=judged, duplicate_threshold=threshold
    )
    assert (learning.max_drafts, learning.max_runs_judged) == (drafts, judged)
    schedule = ConsolidatorConfig(batch_size=batch, interval=timedelta(seconds=seconds))
    assert schedule.batch_size == batch

"""Batching rules of the idle consolidator (batch ends, retry delays) and its settings."""

from __future__ import annotations

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

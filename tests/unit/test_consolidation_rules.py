"""Batching rules of the idle consolidator (batch ends, retry delays) and its settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from philont.domain.consolidation import (
    Step,
    batch_end,
    last_calls,
    retry_delay,
    whole_runs_end,
)
from philont.errors import InvalidInputError
from philont.learning import ConsolidatorConfig, LearningConfig
from philont.schemas.inputs import MAX_SETTING, MAX_SETTING_DURATION


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


def steps(text: str) -> list[Step]:
    """``"1U:a 2:a 3U:b"``: a step per word, ``<ms>[U]:<session>`` (U: a user turn)."""
    found = []
    for word in text.split():
        at, session = word.split(":")
        found.append(Step(int(at.rstrip("U")), session, at.endswith("U")))
    return found


@pytest.mark.parametrize(
    ("text", "until", "first", "end"),
    [
        ("1U:a 2:a 3U:a 4U:a", 3, 1, 3),  # the session's next step starts a run: 3 is whole
        ("1U:a 2:a 3U:a 4:a", 4, 1, 4),  # nothing after the cut: the run is whole so far
        ("1U:a 2:a 3U:a 4:a 5:a", 4, 1, 2),  # run 3 goes on at 5: the batch ends before it
        ("1U:a 2:a 3U:a 4:a 9:a 10U:a", 4, 1, 2),  # however much later its next step is
        ("1U:a 2:a 3U:b 4:b 5U:a 6:a 7:b", 6, 1, 2),  # b's run 3 goes on; a's run 5 with it
        ("1U:a 2:b 3U:a 4:a 5:b", 4, 1, 4),  # b's steps belong to no run of the batch
        ("1U:a 2:a 3U:b 4U:a 5:b 6:a", 5, 1, 2),  # before a's run 4 is inside b's run 3: before it
        ("1U:a 2:a 3:a 4U:a", 2, 1, 2),  # run 1 is longer than the batch: cut at the limit
        ("3U:a 4:a 5:a", 4, 3, 4),  # (likewise)
        ("3:a 4U:a 5:a 6:a", 5, 3, 3),  # the rest of a run cut before stays in: progress
        ("1U:a 2:a 3:a 3U:a", 2, 1, 2),  # a call in the millisecond of a user turn is its run's
    ],
)
def test_a_batch_cut_by_its_limit_ends_before_the_run_it_would_split(
    text: str, until: int, first: int, end: int
) -> None:
    assert whole_runs_end(steps(text), until, first) == end


def _splits(all_steps: list[Step], end: int) -> bool:
    """Whether some run goes on past ``end`` (a run: a user turn and the session's steps
    until its next user turn) — the definition, checked run by run."""
    for session in {s.session for s in all_steps}:
        mine = sorted(
            (s for s in all_steps if s.session == session), key=lambda s: (s.at, not s.user)
        )
        for i, step in enumerate(mine):
            if not step.user or step.at > end:
                continue
            rest = mine[i + 1 :]
            following = rest[: next((j for j, s in enumerate(rest) if s.user), len(rest))]
            if any(s.at > end for s in following):
                return True
    return False


step_lists = st.lists(
    st.builds(Step, st.integers(0, 30), st.sampled_from("abc"), st.booleans()), max_size=25
)


@given(step_lists, st.integers(0, 30))
def test_the_end_is_the_latest_that_splits_no_run_or_the_limit_when_none_is(
    all_steps: list[Step], until: int
) -> None:
    batch = [s for s in all_steps if s.at <= until]
    if not batch:
        return
    first = min(s.at for s in batch)
    # the batch, and each session's first step after the cut
    after = {}
    for s in sorted(all_steps, key=lambda s: (s.at, not s.user)):
        if s.at > until:
            after.setdefault(s.session, s)
    end = whole_runs_end(batch + list(after.values()), until, first)
    clean = [e for e in range(first, until + 1) if not _splits(all_steps, e)]
    assert end == (max(clean) if clean else until)


@settings(max_examples=400)
@given(
    st.lists(
        st.builds(Step, st.integers(0, 30), st.sampled_from("abc"), st.booleans()), max_size=20
    ),
    st.lists(st.tuples(st.integers(0, 30), st.sampled_from("abc")), max_size=40),
    st.integers(0, 30),
)
def test_the_last_call_of_each_gap_ends_a_batch_where_every_call_does(
    messages: list[Step], calls: list[tuple[int, str]], until: int
) -> None:
    """A cut batch's end is found from its messages and the last tool call of each session
    between two of its messages (``last_calls``): the same end as from every call (which were
    each read, 50,000 at every claim of an agent in a loop)."""
    inside = [m for m in messages if m.at <= until]
    if not inside:
        return
    first = min(m.at for m in inside)
    span = [(at, sid) for at, sid in calls if at <= until]
    after: dict[str, Step] = {}
    later = [*messages, *(Step(at, sid) for at, sid in calls)]
    for step in sorted(later, key=lambda s: (s.at, not s.user)):
        if step.at > until:
            after.setdefault(step.session, step)
    every = [*inside, *(Step(at, sid) for at, sid in span), *after.values()]
    kept = last_calls(inside, span)
    assert len(kept) <= len(inside) + 3  # one per gap: a session has one more than messages
    assert whole_runs_end([*inside, *kept, *after.values()], until, first) == whole_runs_end(
        every, until, first
    )


@pytest.mark.parametrize(
    ("attempts", "minutes"), [(0, 0), (1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (50, 60)]
)
def test_a_failed_batch_waits_twice_as_long_each_time_up_to_the_cap(
    attempts: int, minutes: int
) -> None:
    delay = retry_delay(attempts, base=timedelta(minutes=1), cap=timedelta(hours=1))
    assert delay == timedelta(minutes=minutes)


@settings(max_examples=300)
@example(31, timedelta(days=1), timedelta(days=1))
@given(
    st.integers(0, 10**6),
    st.timedeltas(min_value=timedelta(microseconds=1), max_value=MAX_SETTING_DURATION),
    st.timedeltas(min_value=timedelta(microseconds=1), max_value=MAX_SETTING_DURATION),
)
def test_a_retry_delay_is_the_doubled_base_up_to_the_cap_for_any_setting(
    attempts: int, base: timedelta, cap: timedelta
) -> None:
    # base * 2**30 past timedelta's range (a base of a day, the 31st failure) was an
    # OverflowError out of run_once instead of a backoff
    delay = retry_delay(attempts, base=base, cap=cap)
    exact = base // timedelta(microseconds=1) * 2 ** min(max(attempts - 1, 0), 30)
    expected = 0 if attempts < 1 else min(cap // timedelta(microseconds=1), exact)
    assert delay == timedelta(microseconds=expected)


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
# no 64-bit LIMIT held n + 1 of the largest 64-bit count; a year and more overflowed the clock
TOO_MANY = [MAX_SETTING + 1, 2**63 - 1]
TOO_LONG = [MAX_SETTING_DURATION + timedelta(microseconds=1), timedelta.max]
BAD_SETTINGS: list[tuple[type, str, list[object]]] = [
    (LearningConfig, "max_drafts", [*NOT_A_NUMBER, 0, -1, *TOO_MANY]),
    (LearningConfig, "duplicate_threshold", ["0.5", None, True, 0, -0.1, 1.01, float("nan")]),
    (LearningConfig, "summary_min_messages", [*NOT_A_NUMBER, 0, *TOO_MANY]),
    (LearningConfig, "verify_then_condense", ["no", 0, 1, None]),
    (LearningConfig, "max_window_messages", [*NOT_A_NUMBER, 0, *TOO_MANY]),
    (LearningConfig, "max_message_chars", [*NOT_A_NUMBER, 0, *TOO_MANY]),
    (LearningConfig, "max_prompt_chars", [*NOT_A_NUMBER, 0, -5, *TOO_MANY]),
    (LearningConfig, "max_runs_judged", [*NOT_A_NUMBER, -1, *TOO_MANY]),
    (ConsolidatorConfig, "idle_after", [300, "5m", None, timedelta(seconds=-1), *TOO_LONG]),
    (ConsolidatorConfig, "min_messages", [*NOT_A_NUMBER, 0, *TOO_MANY]),
    (ConsolidatorConfig, "batch_size", [*NOT_A_NUMBER, 0, *TOO_MANY]),
    (ConsolidatorConfig, "backlog", ["yes", 1, None]),
    # a lease renewed every third of a millisecond was a busy loop of write transactions
    (ConsolidatorConfig, "lease", [600, None, timedelta(0), timedelta(milliseconds=1), *TOO_LONG]),
    (ConsolidatorConfig, "max_hold", [3600, None, timedelta(seconds=0.999), *TOO_LONG]),
    (ConsolidatorConfig, "retry_base", [60, timedelta(0), timedelta(seconds=-5), *TOO_LONG]),
    (ConsolidatorConfig, "retry_max", [3600, timedelta(0), *TOO_LONG]),
    (ConsolidatorConfig, "interval", [60, 60.0, timedelta(0), timedelta(seconds=-1), *TOO_LONG]),
    (ConsolidatorConfig, "max_batches_per_tick", [*NOT_A_NUMBER, 0, *TOO_MANY]),
    (ConsolidatorConfig, "answer_attempts", [*NOT_A_NUMBER, 0, -1, *TOO_MANY]),
]


@pytest.mark.parametrize(
    ("config", "name", "value"),
    [(config, name, value) for config, name, values in BAD_SETTINGS for value in values],
)
def test_every_bad_setting_is_refused_by_name(config: type, name: str, value: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        config(**{name: value})
    # named as every argument's refusal is: "<name>: must be ...", details["argument"]
    assert caught.value.message.startswith(f"{name}: must be ")
    assert caught.value.details["argument"] == name


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


@given(
    raw=st.one_of(
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.text(max_size=12),
        st.sampled_from(["", " 7 ", "4", "5", str(MAX_SETTING), str(MAX_SETTING + 1), "1e3"]),
    )
)
@settings(max_examples=200)
def test_any_draft_cap_in_the_environment_makes_a_config(raw: str) -> None:
    # $PHILONT_MAX_DRAFT_SKILLS is taken when it is a whole number of at least 5, else 40
    # (Philont). One past the largest setting was taken too, and then refused as max_drafts:
    # every LearningConfig() raised invalid_input (philont consolidate could not start),
    # naming a setting the user never gave. A larger cap prunes no more than the largest.
    env = {"PHILONT_MAX_DRAFT_SKILLS": raw} if "\x00" not in raw else {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        cap = LearningConfig().max_drafts
    try:
        given_cap = int(raw.strip())
    except ValueError:
        given_cap = None
    if given_cap is None or given_cap < 5:
        assert cap == 40
    else:
        assert cap == min(given_cap, MAX_SETTING)

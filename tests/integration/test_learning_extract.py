"""Extraction of facts and notes (through the tools' own validation) and session summaries."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select

from philont import tools
from philont.db.models import Fact, Note
from philont.domain.kinds import FactKind
from philont.domain.timeparse import iso
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.learning import Learner, LearningConfig
from philont.learning.summaries import Summary, write_summaries
from philont.learning.window import runs_of
from philont.llm import ScriptedModel
from philont.memory import Memory
from philont.schemas.inputs import MAX_ID_CHARS
from philont.schemas.learning import ExtractionReport
from tests.conftest import FakeClock
from tests.integration.learning_helpers import Conversation, unit_factory

NOW = datetime(2026, 6, 1, tzinfo=UTC)

BOTH_BACKENDS = True


@pytest.fixture
def mem(engine: Engine, clock: FakeClock) -> Any:
    with unit_factory(engine, clock)() as unit:
        yield unit


def chat(mem: Memory, clock: FakeClock, turns: int = 2) -> Conversation:
    talk = Conversation(mem, clock, "s1")
    for i in range(turns):
        talk.user(f"I moved to Berlin last week (turn {i})")
        talk.assistant("Noted.")
    return talk


def extract(mem: Memory, *actions: dict[str, Any], **config: Any) -> Any:
    model = ScriptedModel([json.dumps(list(actions))])
    report = Learner(mem, model, config=LearningConfig(**config)).extract(session_id="s1")
    return report, model


def counts(mem: Memory) -> tuple[int, int]:
    return (
        mem.session.scalar(select(func.count()).select_from(Fact)) or 0,
        mem.session.scalar(select(func.count()).select_from(Note)) or 0,
    )


def test_a_session_gives_two_facts_and_a_note(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock)
    report, model = extract(
        mem,
        {"action": "store_fact", "namespace": "user.home", "key": "city", "value": "Berlin"},
        {"action": "store_fact", "namespace": "user.preferences", "key": "diet",
         "value": "vegetarian", "confidence": 0.8},
        {"action": "store_note", "content": "Moving was stressful for them", "importance": 0.4},
    )  # fmt: skip
    assert (report.facts, report.notes) == (2, 1)
    city = mem.facts.get("user.home", "city")
    assert city is not None and city.value == "Berlin"
    note = mem.notes.get(next(w.id for w in report.writes if w.action == "store_note") or "")
    assert note is not None and note.session_id == "s1" and note.importance == 0.4
    assert model.prompts[0].startswith("TASK: extract")


REFUSED_FACTS = [
    {"namespace": "self", "key": "name", "value": "x"},
    {"namespace": "self.notes", "key": "name", "value": "x"},
    {"namespace": "User Prefs", "key": "k", "value": "x"},
    {"namespace": "user", "key": "has space", "value": "x"},
    {"namespace": "user", "key": "t", "value": "Bearer abcdefgh12345678"},
    {"namespace": "user", "key": "k", "value": "Authorization: Basic abc"},
    {"namespace": "user", "key": "k", "value": "x", "why": "extra"},
    {"namespace": "user", "key": "k", "value": "x", "confidence": 2},
    {"namespace": "user", "key": "k"},
    {"namespace": "user", "key": "k", "value": None},
    {"namespace": "user", "key": "k", "value": "x", "occurred_at": "tomorrow",
     "fact_kind": "event"},
    {"namespace": "user", "key": "k", "value": "x", "valid_from": "2026-06-10T00:00:00Z",
     "valid_until": "2026-06-01T00:00:00Z"},
    {"namespace": "user", "key": "k", "value": "x", "timezone": "Mars/Olympus"},
]  # fmt: skip


@pytest.mark.parametrize("action", REFUSED_FACTS)
def test_a_fact_the_store_fact_tool_refuses_is_refused_with_the_tools_code(
    mem: Memory, clock: FakeClock, action: dict[str, Any]
) -> None:
    chat(mem, clock)
    before = counts(mem)
    report, _ = extract(mem, {"action": "store_fact", **action})
    [write] = report.writes
    assert counts(mem) == before
    tool = tools.call("store_fact", action, db=mem, session_id="s1")
    assert not tool.ok
    assert (write.outcome, write.code) == ("rejected", tool.error_code)
    assert write.detail
    assert counts(mem) == before


def test_notes_are_checked_and_malformed_actions_reported(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock)
    before = counts(mem)
    report, _ = extract(
        mem,
        {"action": "store_note", "content": ""},
        {"action": "store_note", "content": "x", "importance": "high"},
        {"action": "drop_table", "content": "x"},
        {"action": "store_note"},
    )
    assert [(w.outcome, w.code) for w in report.writes] == [
        ("rejected", "invalid_arguments"),
        ("rejected", "invalid_arguments"),
        ("rejected", "malformed"),
        ("rejected", "invalid_arguments"),
    ]
    assert counts(mem) == before


def test_an_event_without_a_time_happened_at_the_window_time_not_at_extraction(
    mem: Memory, clock: FakeClock
) -> None:
    talk = chat(mem, clock)
    talk.user("I signed the lease today!")
    said_at = clock.now
    clock.advance(days=3)  # the loop runs long after the conversation
    report, model = extract(
        mem,
        {"action": "store_fact", "namespace": "project.flat", "key": "lease_signed",
         "value": True, "fact_kind": "event"},
        {"action": "store_fact", "namespace": "project.flat", "key": "move_in",
         "value": "keys handover", "fact_kind": "event", "occurred_at": "2026-06-20T10:00:00",
         "timezone": "Europe/Berlin"},
    )  # fmt: skip
    assert report.facts == 2
    signed = mem.facts.get("project.flat", "lease_signed")
    assert signed is not None and signed.fact_kind == FactKind.EVENT
    assert signed.occurred_at == said_at
    assert signed.created_at == clock.now
    move = mem.facts.get("project.flat", "move_in")
    assert move is not None and move.occurred_at is not None
    assert iso(move.occurred_at) == "2026-06-20T08:00:00.000Z"
    assert f"The conversation ended at {iso(said_at)}" in model.prompts[0]


def test_an_event_without_a_time_happened_when_the_message_it_cites_was_said(
    mem: Memory, clock: FakeClock
) -> None:
    # The answer says which message told it (said_at); the event was stamped with the window's
    # end instead, days after the message that reported it had happened. Without a citation
    # of one of the window's messages (none, or a time no message has), the window's time.
    talk = chat(mem, clock)
    talk.user("I signed the lease today!")
    said_at = clock.now
    talk.assistant("Congratulations!")
    talk.user("And I ran a marathon.", minutes=3 * 24 * 60)
    ended = clock.now
    event = {"action": "store_fact", "namespace": "project.flat", "fact_kind": "event"}
    answer = [
        {**event, "key": "lease_signed", "value": True, "said_at": iso(said_at)},
        {**event, "key": "marathon", "value": "run", "said_at": iso(ended)},
        {**event, "key": "uncited", "value": 1, "said_at": "2020-01-01T00:00:00Z"},
        {**event, "key": "unsaid", "value": 2},
    ]
    report, _ = extract(mem, *answer)
    assert [w.outcome for w in report.writes] == ["stored"] * 4, report.writes
    stamps = {key: mem.facts.get("project.flat", key) for key in ("lease_signed", "marathon")}
    assert {k: f.occurred_at if f else None for k, f in stamps.items()} == {
        "lease_signed": said_at, "marathon": ended,
    }  # fmt: skip
    for key in ("uncited", "unsaid"):
        fact = mem.facts.get("project.flat", key)
        assert fact is not None and fact.occurred_at == ended
    again, _ = extract(mem, *answer)  # the same answer again records nothing new
    assert [w.outcome for w in again.writes] == ["unchanged"] * 4, again.writes


def test_offset_less_times_are_read_in_the_configured_zone(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock)
    report, _ = extract(
        mem,
        {"action": "store_fact", "namespace": "user", "key": "dentist", "value": "check-up",
         "fact_kind": "event", "occurred_at": "2026-07-01T09:00:00"},
        timezone="Asia/Shanghai",
    )  # fmt: skip
    assert report.facts == 1
    fact = mem.facts.get("user", "dentist")
    assert fact is not None and fact.occurred_at is not None
    assert iso(fact.occurred_at) == "2026-07-01T01:00:00.000Z"


def test_extracting_the_same_answer_again_writes_nothing_new(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock)
    actions = (
        {"action": "store_fact", "namespace": "user.home", "key": "city", "value": "Berlin"},
        {"action": "store_note", "content": "Prefers short answers"},
    )
    extract(mem, *actions)
    before = counts(mem)
    again, _ = extract(mem, *actions)
    assert [w.outcome for w in again.writes] == ["unchanged", "unchanged"]
    assert counts(mem) == before


# --- summaries ---------------------------------------------------------------------------------


def test_a_long_session_gets_a_rolling_summary_note(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock, turns=3)
    model = ScriptedModel(["First summary.", "```\nSecond summary.\n```"])
    learner = Learner(mem, model, config=LearningConfig(summary_min_messages=6))
    [report] = learner.summarize("s1")
    assert (report.written, report.note_id) == (True, "session-summary-s1")
    note = mem.notes.get("session-summary-s1")
    assert note is not None
    assert (note.content, note.importance, note.session_id) == ("First summary.", 1.0, "s1")
    talk = Conversation(mem, clock, "s1")
    talk.user("One more thing.")
    learner.summarize("s1")  # the whole session again: summarized afresh, never counted twice
    assert "First summary." not in model.prompts[1] and "One more thing." in model.prompts[1]
    assert "I moved to Berlin last week (turn 0)" in model.prompts[1]
    note = mem.notes.get("session-summary-s1")
    assert note is not None and note.content == "Second summary."


def test_a_window_after_the_session_start_extends_its_summary(
    mem: Memory, clock: FakeClock
) -> None:
    chat(mem, clock, turns=3)
    summaries = ["First summary.", "Extended summary."]
    model = ScriptedModel.by_task(
        {"extract": "[]", "reflect": "[]", "summarize": lambda prompt: summaries.pop(0)}
    )
    learner = Learner(mem, model, config=LearningConfig(summary_min_messages=6))
    learner.summarize("s1")
    since = clock.now + timedelta(seconds=1)
    Conversation(mem, clock, "s1").user("Later, about Paris.")
    learner.learn(learner.window(since=since, until=clock.now))  # only the new turn
    summary_prompt = next(p for p in model.prompts[1:] if p.startswith("TASK: summarize"))
    assert "First summary." in summary_prompt and "Later, about Paris." in summary_prompt
    assert "turn 0" not in summary_prompt


@pytest.mark.parametrize("whole", [False, True], ids=["a later window", "the whole session"])
def test_a_forgotten_summary_is_neither_shown_to_the_model_nor_written_again(
    mem: Memory, clock: FakeClock, whole: bool
) -> None:
    # A forgotten summary stayed forgotten, but each later window of its session sent its
    # text to the model as the summary to extend (the forgotten memory leaving the database
    # at every batch), and the answer overwrote the note no one can read: a model call spent.
    chat(mem, clock, turns=3)
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "summarize": "Private."})
    learner = Learner(mem, model, config=LearningConfig(summary_min_messages=6))
    learner.summarize("s1")
    assert mem.notes.forget("session-summary-s1")
    since = clock.now + timedelta(seconds=1)
    Conversation(mem, clock, "s1").user("Later, about Paris.")
    asked = len(model.prompts)
    if whole:
        assert learner.summarize("s1") == []
    else:
        assert learner.learn(learner.window(since=since, until=clock.now)).summaries == []
    assert not any(p.startswith("TASK: summarize") for p in model.prompts[asked:])
    assert not any("Private." in p for p in model.prompts[asked:])
    note = mem.session.get(Note, "session-summary-s1")
    assert note is not None and note.forgotten_at is not None and note.content == "Private."


def test_a_short_session_gets_no_summary_and_costs_no_call(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock, turns=1)
    model = ScriptedModel([])
    assert Learner(mem, model, config=LearningConfig(summary_min_messages=6)).summarize("s1") == []
    assert model.prompts == []


def test_an_empty_summary_answer_writes_no_note(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock, turns=3)
    model = ScriptedModel(["```\n\n```"])
    [report] = Learner(mem, model, config=LearningConfig(summary_min_messages=2)).summarize("s1")
    assert not report.written
    assert mem.notes.get("session-summary-s1") is None


def test_each_summary_is_reported_written_or_with_why_not(mem: Memory) -> None:
    # the longest session id too: a record id has room for the summary note's prefix (its note
    # id was too long, and every batch of such a session reported the summary invalid_input)
    longest = "s" * MAX_ID_CHARS
    summaries = [Summary("s1", "About Berlin.", 3), Summary("s2", None, 2)]
    summaries.append(Summary(longest, "x", 1))
    reports = write_summaries(mem, summaries)
    assert [(r.session_id, r.note_id, r.written, r.tokens_used) for r in reports] == [
        ("s1", "session-summary-s1", True, 3),
        ("s2", None, False, 2),
        (longest, f"session-summary-{longest}", True, 1),
    ]
    assert [r.detail for r in reports] == ["", "the model gave no usable summary", ""]
    note = mem.notes.get("session-summary-s1")
    assert note is not None and note.content == "About Berlin."
    long_note = mem.notes.get(f"session-summary-{longest}")
    assert long_note is not None and long_note.session_id == longest


def test_a_window_is_its_session_or_its_time_range(mem: Memory, clock: FakeClock) -> None:
    chat(mem, clock)
    other = Conversation(mem, clock, "s2")
    other.user("Unrelated")
    learner = Learner(mem, ScriptedModel([]))
    assert len(learner.window(session_id="s1").turns) == 4
    start = clock.now - timedelta(minutes=1)  # inclusive: the turn a minute ago is in
    window = learner.window(since=start, until=clock.now)
    assert [t.content for t in window.turns] == ["Noted.", "Unrelated"]


def test_a_note_of_a_window_over_sessions_keeps_the_session_it_was_said_in(
    mem: Memory, clock: FakeClock
) -> None:
    # A time-range window (the consolidator's batch) is no one session's: its notes were all
    # stored with no session, though the message each cites (or every message it may come
    # from) is one session's.
    start = clock.now
    chat(mem, clock, turns=1)
    told_in_s1 = clock.now - timedelta(minutes=1)  # the user's turn
    other = Conversation(mem, clock, "s2")
    other.user("My sister Ada lives in Oslo")
    told_in_s2 = clock.now
    notes = {
        "s2": {"content": "Ada is their sister", "said_at": iso(told_in_s2)},
        "s1": {"content": "They moved to Berlin", "said_at": iso(told_in_s1)},
        "uncited": {"content": "They have family abroad"},
        "unknown time": {"content": "They like maps", "said_at": "2020-01-01T00:00:00Z"},
    }
    alone = [{"content": "Ada is older"}, {"content": "Oslo is far", "said_at": "2020-01-01"}]
    answers = [[{"action": "store_note", **n} for n in ns] for ns in (notes.values(), alone)]
    learner = Learner(mem, ScriptedModel([json.dumps(a) for a in answers]))

    def sessions(report: ExtractionReport) -> list[str | None]:
        assert {w.outcome for w in report.writes} == {"stored"}, report.writes
        stored = [mem.notes.get(w.id or "") for w in report.writes]
        return [n.session_id if n else "?" for n in stored]

    assert sessions(learner.extract(since=start, until=clock.now)) == ["s2", "s1", None, None]
    # a time range holding one session's messages: every note is that session's
    assert sessions(learner.extract(since=told_in_s2, until=clock.now)) == ["s2", "s2"]


@pytest.mark.parametrize(
    ("since", "until", "error", "named"),
    [
        (datetime(2026, 1, 1), NOW, InvalidInputError, "since"),  # naive
        (NOW, "2026-01-02", InvalidInputError, "until"),  # text, not a datetime
        (NOW, NOW - timedelta(days=1), InvalidTimeRangeError, "learning window"),
    ],
)
def test_a_time_range_window_is_checked_like_every_window(
    mem: Memory, since: Any, until: Any, error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named):
        Learner(mem, ScriptedModel([])).window(since=since, until=until)


@pytest.mark.parametrize("limit", [1, 3, 7])
def test_a_window_over_its_limit_keeps_its_newest_turns_and_calls(
    mem: Memory, clock: FakeClock, limit: int
) -> None:
    # It kept the oldest: reflecting on a long session never saw its latest turns, and the
    # extraction prompt said the conversation ended at the last turn it happened to load.
    talk = Conversation(mem, clock, "s1")
    for i in range(10):
        talk.user(f"turn {i}")
        talk.act("get_fact", namespace="user", key=f"k{i}")
    start = clock.now - timedelta(days=1)
    model = ScriptedModel.by_task({"extract": "[]"})
    learner = Learner(mem, model, config=LearningConfig(max_window_messages=limit))
    for window in (learner.window(session_id="s1"), learner.window(since=start, until=clock.now)):
        assert [t.content for t in window.turns] == [f"turn {i}" for i in range(10 - limit, 10)]
        assert [c.params["key"] for c in window.calls] == [f"k{i}" for i in range(10 - limit, 10)]
    learner.extract(session_id="s1")
    assert "turn 9" in model.prompts[0]
    assert f"ended at {iso(clock.now)}" in model.prompts[0]


def gym(occurred_at: str | None = None, **more: Any) -> dict[str, Any]:
    item = {"action": "store_fact", "namespace": "user.log", "key": "workout", "value": "gym"}
    return {**item, "fact_kind": "event", "occurred_at": occurred_at, **more}


def trip(**more: Any) -> dict[str, Any]:
    item = {"action": "store_fact", "namespace": "user", "key": "status", "value": "away"}
    return {**item, **more}


MON, WED = "2026-11-30T10:00:00Z", "2026-12-02T10:00:00Z"


@pytest.mark.parametrize(
    ("answers", "outcomes"),
    [
        # the same value at another time is another event; the same event told again is not
        ([gym(MON), gym(WED), gym(MON), gym(WED)], ["stored", "stored", "unchanged", "unchanged"]),
        # a state whose validity window changes is a new version (it kept the old end)
        (
            [trip(valid_until=MON), trip(valid_until=WED), trip(valid_until=WED)],
            ["stored", "stored", "unchanged"],
        ),
        ([trip(valid_from=MON), trip(), trip()], ["stored", "stored", "unchanged"]),
        ([trip(), gym(MON, key="status", value="away")], ["stored", "stored"]),  # kind changed
        ([trip(), trip(confidence=0.5)], ["stored", "unchanged"]),  # confidence is no content
        ([trip(value=1), trip(value=True), trip(value=True)], ["stored", "stored", "unchanged"]),
        ([gym(MON, value=0), gym(MON, value=False)], ["stored", "stored"]),  # False is not 0
    ],
)
def test_a_fact_is_unchanged_only_when_the_write_would_record_nothing_new(
    mem: Memory, clock: FakeClock, answers: list[dict[str, Any]], outcomes: list[str]
) -> None:
    chat(mem, clock)
    got = []
    for item in answers:
        clock.advance(minutes=1)
        [write] = extract(mem, item)[0].writes
        got.append(write.outcome)
    assert got == outcomes
    stored = outcomes.count("stored")
    assert counts(mem)[0] == stored


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.builds(
            lambda kind, value, when: gym(when, value=value) if kind else trip(valid_until=when),
            st.booleans(),
            st.sampled_from(["a", "b"]),
            st.sampled_from([MON, WED, None]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_extracting_an_answer_again_records_nothing_new(
    engine: Engine, clock: FakeClock, answer: list[dict[str, Any]]
) -> None:
    # (each state under a key of its own: two versions of one state in one answer are two
    # statements, and telling both again restates them in that order)
    answer = [
        item if item.get("fact_kind") else {**item, "key": f"status{i}"}
        for i, item in enumerate(answer)
    ]
    with unit_factory(engine, clock)() as unit:
        chat(unit, clock)
        try:
            extract(unit, *answer)
            first = counts(unit)
            again = extract(unit, *answer)[0]
            assert counts(unit) == first
            assert {w.outcome for w in again.writes} == {"unchanged"}
        finally:
            unit.rollback()


# --- fuzz: whatever the answer, only what the report calls stored is written --------------------

fact_fields = st.fixed_dictionaries(
    {"action": st.sampled_from(["store_fact", "store_note", "forget", 7])},
    optional={
        "namespace": st.sampled_from(["user", "self", "Bad NS", "project.x", ""]),
        "key": st.sampled_from(["city", "a b", "k", ""]),
        "value": st.one_of(st.none(), st.text(max_size=10), st.integers(), st.booleans()),
        "content": st.one_of(st.text(max_size=12), st.integers()),
        "importance": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.text()),
        "fact_kind": st.sampled_from(["state", "event", "other"]),
        "occurred_at": st.sampled_from(["2026-06-01T10:00:00Z", "soon", 1_780_000_000_000]),
        "confidence": st.floats(allow_nan=False, allow_infinity=False),
    },
)


class _Rollback(Exception):
    pass


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(fact_fields, max_size=6))
def test_any_extraction_answer_writes_exactly_what_it_reports(
    engine: Engine, clock: FakeClock, actions: list[dict[str, Any]]
) -> None:
    try:
        with unit_factory(engine, clock)() as mem:
            chat(mem, clock)
            before = counts(mem)
            report, _ = extract(mem, *actions)
            stored_facts = sum(
                1 for w in report.writes if w.action == "store_fact" and w.outcome == "stored"
            )
            stored_notes = sum(
                1 for w in report.writes if w.action == "store_note" and w.outcome == "stored"
            )
            assert counts(mem) == (before[0] + stored_facts, before[1] + stored_notes)
            assert len(report.writes) == len(actions)
            assert all(w.code for w in report.writes if w.outcome == "rejected")
            raise _Rollback
    except _Rollback:
        pass


THREE_FACTS = json.dumps(
    [
        {"action": "store_fact", "namespace": "user", "key": f"k{i}", "value": f"v{i}"}
        for i in range(3)
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, len(THREE_FACTS) - 1))
def test_an_answer_cut_off_anywhere_says_so_in_the_report(
    mem: Memory, clock: FakeClock, cut: int
) -> None:
    # A cut-off answer kept its complete items and reported nothing: the lost rest was silent
    # (the consolidator then moved its cursor past the batch for good).
    chat(mem, clock)
    answer = THREE_FACTS[:cut]
    learner = Learner(mem, ScriptedModel.by_task({"extract": answer or " ", "reflect": answer}))
    if not answer:
        return
    extraction = learner.extract(session_id="s1")
    used = [w for w in extraction.writes if w.outcome in ("stored", "unchanged")]
    assert len(used) <= 3 and extraction.problem is not None
    reflection = learner.reflect(session_id="s1")
    assert reflection.problem is not None


def test_an_answer_with_a_key_twice_over_lists_writes_nothing_and_says_why(
    mem: Memory, clock: FakeClock
) -> None:
    # {"facts": [a], "facts": [b]} was read as one of the lists, silently
    chat(mem, clock)
    before = counts(mem)
    fact = {"action": "store_fact", "namespace": "user", "key": "k", "value": "v"}
    answer = f'{{"facts": [{json.dumps(fact)}], "facts": []}}'
    learner = Learner(mem, ScriptedModel.by_task({"extract": answer, "reflect": answer}))
    extraction = learner.extract(session_id="s1")
    assert extraction.writes == [] and counts(mem) == before
    assert extraction.problem is not None and "'facts' appears twice" in extraction.problem
    reflection = learner.reflect(session_id="s1")
    assert reflection.problem is not None and "'facts' appears twice" in reflection.problem


@pytest.mark.parametrize(
    ("namespace", "key"),
    [("system", "last_consolidated_ts"), ("system", "other"), ("system.sub", "k")],
)
def test_extraction_never_writes_the_loops_own_namespace(
    mem: Memory, clock: FakeClock, namespace: str, key: str
) -> None:
    # A conversation that talked the model into "storing" system.last_consolidated_ts moved
    # the consolidator's cursor: forward, every message until then was never learned from.
    chat(mem, clock)
    mem.facts.store("system", "last_consolidated_ts", 1_000)
    item = {"action": "store_fact", "namespace": namespace, "key": key, "value": 9 * 10**12}
    report, _ = extract(
        mem, item, {"action": "store_fact", "namespace": "user", "key": "a", "value": 1}
    )
    assert [(w.outcome, w.code) for w in report.writes] == [
        ("rejected", "reserved_namespace"),
        ("stored", None),
    ]
    cursor = mem.facts.get("system", "last_consolidated_ts")
    assert cursor is not None and cursor.value == 1_000
    assert mem.facts.list("system", prefix=True) == [cursor]


@pytest.mark.parametrize("limit", [2, 5, 9])
def test_a_window_over_its_limit_judges_no_run_on_part_of_its_calls(
    mem: Memory, clock: FakeClock, limit: int
) -> None:
    """Messages and tool calls were limited apart: with four calls per request the newest
    ``limit`` calls began inside a run whose request was still among the messages, and that
    run was judged on the last of its calls only. Both now start after the later cut."""
    talk = Conversation(mem, clock, "s1")
    runs: dict[str, list[str]] = {}
    for i in range(4):
        talk.user(f"task {i}")
        runs[f"task {i}"] = [f"k{i}.{j}" for j in range(4)]
        for key in runs[f"task {i}"]:
            talk.act("get_fact", namespace="user", key=key)
        talk.assistant(f"done {i}")
    learner = Learner(
        mem, ScriptedModel.by_task({}), config=LearningConfig(max_window_messages=limit)
    )
    start = clock.now - timedelta(days=1)
    for window in (learner.window(session_id="s1"), learner.window(since=start, until=clock.now)):
        found = runs_of(window)
        for run in found:
            assert [c.params["key"] for c in run.trace] == runs[run.goal]
        # the newest run is in whole when its four calls fit the limit, else no run is
        assert [run.goal for run in found][-1:] == (["task 3"] if limit >= 4 else [])


_SESSIONS = iter(range(10**9))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.one_of(
        st.datetimes(datetime(1966, 10, 31), datetime(1973, 3, 3), timezones=st.just(UTC)),
        st.datetimes(datetime(1, 1, 3), datetime(9999, 12, 29), timezones=st.just(UTC)),
    )
)
def test_an_event_without_its_time_happened_at_the_windows_time_whenever_that_was(
    mem: Memory, clock: FakeClock, said: datetime
) -> None:
    # The window's time was given to the tool as epoch milliseconds, which it refuses from
    # 1966-10-31 to 1973-03-03 (they look like seconds): such an event was "invalid_arguments".
    said = said.replace(microsecond=said.microsecond // 1000 * 1000)
    sid = f"past-{next(_SESSIONS)}"
    mem.timeline.start_session(sid)
    mem.timeline.append("I ran a marathon", session_id=sid, at=said)
    event = {"action": "store_fact", "namespace": "user.sport", "key": sid, "value": "marathon"}
    model = ScriptedModel([json.dumps([{**event, "fact_kind": "event"}])])
    report = Learner(mem, model).extract(session_id=sid)
    assert [w.outcome for w in report.writes] == ["stored"], report.writes
    stored = mem.facts.get("user.sport", sid)
    assert stored is not None and stored.occurred_at == said


def _variant(text: str, how: list[int]) -> str:
    """``text`` as a model may write it again: case, spacing, Unicode form changed."""
    for step in how:
        if step == 0:
            text = text.upper()
        elif step == 1:
            text = "  " + text.replace(" ", " \n\t ") + " "
        elif step == 2:  # fullwidth forms (NFKC folds them back)
            text = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)
        else:
            text = text.swapcase()
    return text


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.text(alphabet="abcdefghij .,", min_size=1, max_size=30).filter(str.strip),
    st.lists(st.lists(st.integers(0, 3), max_size=3), min_size=1, max_size=4),
)
def test_the_same_note_in_another_case_spacing_or_unicode_form_is_stored_once(
    mem: Memory, clock: FakeClock, text: str, variants: list[list[int]]
) -> None:
    # Each was stored as a new note (five copies from one answer), while forgetting one of
    # them kept every form from being written again: "the same note" is note_key's.
    sid = f"notes-{next(_SESSIONS)}"
    mem.timeline.start_session(sid)
    mem.timeline.append("I am vegetarian", session_id=sid)
    before = counts(mem)[1]
    text = f"{sid}: {text}"  # a note no earlier example stored
    first = [{"action": "store_note", "content": _variant(text, how)} for how in variants]
    Learner(mem, ScriptedModel([json.dumps(first)])).extract(session_id=sid)
    again = [{"action": "store_note", "content": _variant(text, how[::-1])} for how in variants]
    report = Learner(mem, ScriptedModel([json.dumps(again)])).extract(session_id=sid)
    assert [w.outcome for w in report.writes] == ["unchanged"] * len(variants)
    assert counts(mem)[1] == before + 1

"""ReflectorService: skills are credited or blamed by the actions that followed their retrieval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from philont import tools
from philont.db.models import Action, RawMessage
from philont.domain.attribution import AttributionWindow
from philont.domain.kinds import Role
from philont.domain.maturity import Grade, Outcome
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.schemas.reflector import SkipReason
from philont.services.reflector import DEFAULT_WINDOW, ReflectorService
from philont.services.skills import SkillService
from philont.store import Store
from tests.conftest import FakeClock
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)


class Log:
    """Writes actions and user turns straight through the ORM, at controlled times."""

    def __init__(self, session: Session, clock: FakeClock) -> None:
        self.session = session
        self.clock = clock

    def action(
        self,
        tool: str,
        *,
        success: bool = True,
        params: dict[str, Any] | None = None,
        session_id: str = "global",
        minutes: float = 1,
    ) -> int:
        self.clock.advance(minutes=minutes)
        row = Action(
            session_id=session_id,
            trigger=None,
            tool_name=tool,
            params=params or {},
            result="ok" if success else "boom",
            success=success,
            timestamp=self.clock.now,
            linked_skill=None,
        )
        self.session.add(row)
        self.session.flush()
        return row.id

    def retrieve(self, name: str, **kwargs: Any) -> int:
        return self.action("use_skill", params={"name": name}, **kwargs)

    def user_turn(self, content: str = "next question", *, minutes: float = 1) -> None:
        self.clock.advance(minutes=minutes)
        self.session.add(
            RawMessage(
                session_id="global", role=Role.USER, content=content, timestamp=self.clock.now
            )
        )
        self.session.flush()


@pytest.fixture
def skills(session: Session, clock: FakeClock) -> SkillService:
    service = SkillService(joined(session, clock))
    service.create("berlin-rent", "Compare Berlin rents", "rent", "fetch, compare")
    return service


@pytest.fixture
def reflector(session: Session, clock: FakeClock) -> ReflectorService:
    return ReflectorService(joined(session, clock))


@pytest.fixture
def log(session: Session, clock: FakeClock) -> Log:
    return Log(session, clock)


def linked(session: Session, action_id: int) -> str | None:
    return session.scalar(select(Action.linked_skill).where(Action.id == action_id))


def skill(skills: SkillService) -> Any:
    record = skills.get("berlin-rent", record_access=False)
    assert record is not None
    return record


def test_a_retrieval_followed_by_two_successful_actions_credits_one_success(
    session: Session, skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    retrieval = log.retrieve("berlin-rent")
    first = log.action("web_fetch")
    second = log.action("write_file")
    log.user_turn()

    report = reflector.run()

    assert len(report.credited) == 1
    credit = report.credited[0]
    assert (credit.skill, credit.outcome) == ("berlin-rent", Outcome.SUCCESS)
    assert credit.retrieval_action_id == retrieval
    assert credit.attributed_action_ids == [first, second]
    assert "all succeeded" in credit.reason
    assert (report.successes, report.failures, report.skipped) == (1, 0, [])
    assert (skill(skills).success_count, skill(skills).failure_count) == (1, 0)
    assert [linked(session, i) for i in (retrieval, first, second)] == ["berlin-rent"] * 3


def test_the_outcome_is_dated_by_the_last_attributed_action(
    session: Session, skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    log.retrieve("berlin-rent")
    log.action("web_fetch")
    last = log.action("write_file")
    log.user_turn(minutes=10)
    reflector.run()
    last_at = session.scalar(select(Action.timestamp).where(Action.id == last))
    assert skill(skills).last_success_at == last_at


def test_a_failing_action_in_the_window_records_one_failure(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    log.retrieve("berlin-rent")
    log.action("web_fetch")
    failed = log.action("write_file", success=False)
    log.action("write_file", success=False)
    log.user_turn()

    report = reflector.run()

    assert [(c.outcome, c.skill) for c in report.credited] == [(Outcome.FAILURE, "berlin-rent")]
    assert f"first: action {failed}" in report.credited[0].reason
    assert (report.successes, report.failures) == (0, 1)
    assert (skill(skills).success_count, skill(skills).failure_count) == (0, 1)


def test_nothing_ran_after_the_retrieval_so_nothing_is_credited(
    session: Session, skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    retrieval = log.retrieve("berlin-rent")
    log.user_turn()

    report = reflector.run()

    assert report.credited == []
    assert [(s.reason, s.retrieval_action_id) for s in report.skipped] == [
        (SkipReason.NO_ACTIONS, retrieval)
    ]
    assert (skill(skills).success_count, skill(skills).failure_count) == (0, 0)
    assert linked(session, retrieval) == "berlin-rent"  # decided: not looked at again


def test_the_next_user_turn_closes_the_window(
    session: Session, skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    log.retrieve("berlin-rent")
    inside = log.action("web_fetch")
    log.user_turn("thanks, now something else")
    outside = log.action("shell", success=False)

    report = reflector.run()

    assert [(c.outcome, c.attributed_action_ids) for c in report.credited] == [
        (Outcome.SUCCESS, [inside])
    ]
    assert linked(session, outside) is None


def test_the_next_retrieval_closes_the_window(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    skills.create("other-skill", "d", "k", "t")
    log.retrieve("berlin-rent")
    first = log.action("web_fetch")
    log.retrieve("other-skill")
    failed = log.action("shell", success=False)
    log.user_turn()

    report = reflector.run()

    assert [(c.skill, c.outcome, c.attributed_action_ids) for c in report.credited] == [
        ("berlin-rent", Outcome.SUCCESS, [first]),
        ("other-skill", Outcome.FAILURE, [failed]),
    ]


def test_a_second_run_credits_nothing_new(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    log.retrieve("berlin-rent")
    log.action("web_fetch")
    log.user_turn()
    assert reflector.run().successes == 1

    again = reflector.run()

    assert (again.credited, again.skipped, again.successes) == ([], [], 0)
    assert skill(skills).success_count == 1


def test_an_open_window_is_pending_and_credited_once_it_closes(
    skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    retrieval = log.retrieve("berlin-rent")
    log.action("web_fetch")

    early = reflector.run()
    assert early.credited == []
    assert [(s.reason, s.retrieval_action_id) for s in early.skipped] == [
        (SkipReason.PENDING, retrieval)
    ]
    assert early.pending == 1

    failed = log.action("write_file", success=False)  # had we credited early, this was missed
    clock.advance(minutes=31)
    late = reflector.run()

    assert [(c.outcome, c.attributed_action_ids[-1]) for c in late.credited] == [
        (Outcome.FAILURE, failed)
    ]
    assert skill(skills).failure_count == 1


def test_a_window_ended_by_the_next_retrieval_is_decided_at_once_and_the_next_one_waits(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    skills.create("other-skill", "d", "k", "t")
    log.retrieve("berlin-rent")
    first = log.action("web_fetch")
    second = log.retrieve("other-skill")
    log.action("shell")
    log.action("use_skill", success=False, params={"name": "deprecated-one"})  # a refused fetch

    report = reflector.run()  # within 30 minutes, no user turn yet

    assert [(c.skill, c.attributed_action_ids) for c in report.credited] == [
        ("berlin-rent", [first])
    ]
    assert [(s.reason, s.retrieval_action_id) for s in report.skipped] == [
        (SkipReason.PENDING, second)
    ]


def test_a_window_cut_by_its_time_limit_is_not_pending(
    skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    log.retrieve("berlin-rent")
    ok = log.action("web_fetch")
    late = log.action("shell", success=False, minutes=45)  # after the 30-minute limit
    clock.advance(seconds=1)

    report = reflector.run()

    assert [(c.outcome, c.attributed_action_ids) for c in report.credited] == [
        (Outcome.SUCCESS, [ok])
    ]
    assert late not in report.credited[0].attributed_action_ids


def test_two_credited_successes_confirm_a_draft(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    for _ in range(2):
        log.retrieve("berlin-rent")
        log.action("web_fetch")
        log.user_turn()
    report = reflector.run()
    assert [c.grade_after for c in report.credited] == [Grade.DRAFT, Grade.CONFIRMED]
    assert report.credited[1].grade_before == Grade.DRAFT
    assert skill(skills).grade == Grade.CONFIRMED


def test_retrievals_alone_never_confirm_a_skill(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    for _ in range(3):
        log.retrieve("berlin-rent")
        log.user_turn()
    reflector.run()
    assert (skill(skills).grade, skill(skills).success_count) == (Grade.DRAFT, 0)


def test_a_retrieval_of_a_deleted_skill_is_reported_and_credits_nothing(
    session: Session, skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    skills.create("gone-soon", "d", "k", "t")
    retrieval = log.retrieve("gone-soon")
    action = log.action("web_fetch")
    log.user_turn()
    skills.delete("gone-soon")

    report = reflector.run()

    assert report.credited == []
    assert [(s.reason, s.skill) for s in report.skipped] == [
        (SkipReason.UNKNOWN_SKILL, "gone-soon")
    ]
    assert linked(session, action) is None
    assert reflector.run().skipped == []  # reported once, not on every run
    assert linked(session, retrieval) == "gone-soon"


@pytest.mark.parametrize("remade", [False, True])
def test_a_skill_deleted_and_remade_under_its_name_is_not_credited_for_the_old_ones_run(
    session: Session,
    skills: SkillService,
    reflector: ReflectorService,
    log: Log,
    clock: FakeClock,
    remade: bool,
) -> None:
    """The outcome of a run belongs to the skill it fetched. When that skill was deleted (a
    pruned draft, say) and another made under its name before the reflector ran, the new one
    did not guide the run: crediting it moved a stranger's grade."""
    skills.create("rebuilt", "d", "k", "old template")
    retrieval = log.retrieve("rebuilt")
    log.action("web_fetch")
    log.user_turn()
    if remade:
        skills.delete("rebuilt")
        clock.advance(minutes=1)
        skills.create("rebuilt", "d", "k", "new template")

    report = reflector.run()

    after = skills.get("rebuilt", record_access=False)
    assert after is not None
    if remade:
        assert report.credited == []
        [skipped] = report.skipped
        assert (skipped.reason, skipped.skill) == (SkipReason.REMADE, "rebuilt")
        assert skipped.retrieval_action_id == retrieval
        assert "after this retrieval" in skipped.detail
        assert (after.success_count, after.failure_count) == (0, 0)
    else:  # the same skill, made before the run that fetched it: credited
        assert [c.skill for c in report.credited] == ["rebuilt"]
        assert after.success_count == 1
    assert linked(session, retrieval) == "rebuilt"  # decided either way: not looked at again
    assert reflector.run().skipped == []


def test_a_refused_use_skill_call_is_not_a_retrieval(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    log.action("use_skill", success=False, params={"name": "berlin-rent"})
    log.action("web_fetch")
    log.user_turn()
    report = reflector.run()
    assert (report.credited, report.skipped) == ([], [])


def test_the_scope_limits_which_retrievals_are_credited(
    skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    log.retrieve("berlin-rent", session_id="s1")
    log.action("web_fetch", session_id="s1")
    log.retrieve("berlin-rent", session_id="s2")
    log.action("web_fetch", session_id="s2", success=False)
    clock.advance(hours=1)

    only_s1 = reflector.run(session_id="s1")
    assert [c.outcome for c in only_s1.credited] == [Outcome.SUCCESS]

    clock.advance(days=1)
    cut_off = clock.now
    clock.advance(minutes=1)
    log.retrieve("berlin-rent", session_id="s1")
    log.action("web_fetch", session_id="s1")
    clock.advance(hours=1)

    until_cut = reflector.run(until=cut_off)
    assert [c.outcome for c in until_cut.credited] == [Outcome.FAILURE]
    since_cut = reflector.run(since=cut_off)
    assert [c.outcome for c in since_cut.credited] == [Outcome.SUCCESS]


def test_a_window_reaching_past_until_is_judged_whole(
    skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    retrieval = log.retrieve("berlin-rent")
    until = clock.now
    failed = log.action("write_file", success=False, minutes=5)
    clock.advance(hours=1)
    report = reflector.run(until=until)
    assert [
        (c.retrieval_action_id, c.outcome, c.attributed_action_ids) for c in report.credited
    ] == [(retrieval, Outcome.FAILURE, [failed])]


def test_a_custom_window_is_honoured(
    skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    log.retrieve("berlin-rent")
    ok = log.action("web_fetch")
    log.action("shell", success=False)
    clock.advance(hours=1)
    report = reflector.run(window=AttributionWindow(max_actions=1))
    assert [(c.outcome, c.attributed_action_ids) for c in report.credited] == [
        (Outcome.SUCCESS, [ok])
    ]


def test_a_full_window_is_not_pending(
    skills: SkillService, reflector: ReflectorService, log: Log
) -> None:
    log.retrieve("berlin-rent")
    log.action("web_fetch")
    report = reflector.run(window=AttributionWindow(max_actions=1))
    assert report.successes == 1


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"session_id": "  "}, InvalidInputError),
        ({"session_id": 7}, InvalidInputError),
        ({"since": datetime(2026, 6, 1)}, InvalidInputError),
        ({"until": "yesterday"}, InvalidInputError),
        ({"window": 30}, InvalidInputError),
    ],
)
def test_a_bad_scope_is_refused(
    reflector: ReflectorService, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        reflector.run(**kwargs)


def test_a_reversed_time_range_is_refused_and_nothing_is_written(
    session: Session, skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    retrieval = log.retrieve("berlin-rent")
    log.action("web_fetch")
    log.user_turn()
    with pytest.raises(InvalidTimeRangeError):
        reflector.run(since=clock.now, until=clock.now - timedelta(days=1))
    assert linked(session, retrieval) is None
    assert skill(skills).success_count == 0


def test_a_look_up_that_finds_nothing_after_a_retrieval_does_not_blame_the_skill(
    target: Path | URL, clock: FakeClock
) -> None:
    # A recipe step "see whether user.x is stored" answered "not found" is a step done; it
    # used to count as the skill failing (three such runs deprecate a draft).
    with Store.open(target, clock=clock) as store:
        with store.begin() as mem:
            mem.skills.create("check-then-store", "Check, then store", "x", "1. get 2. store")
        calls = [
            ("use_skill", {"name": "check-then-store"}),
            ("get_fact", {"namespace": "user", "key": "x"}),
            ("store_fact", {"namespace": "user", "key": "x", "value": 1}),
        ]
        results = []
        for name, args in calls:
            clock.advance(minutes=1)
            results.append(tools.call(name, args, db=store).error_code)
        assert results == [None, "fact_not_found", None]
        clock.advance(hours=1)
        with store.begin() as mem:
            report = mem.reflector.run()
        assert (report.successes, report.failures) == (1, 0)


REFUSED_CALLS: list[tuple[str, Any, str]] = [
    ("store_fact", {"namespace": "user", "key": "a b", "value": 1}, "invalid_arguments"),
    ("schedule_reminder", {"name": "x", "message": "m", "interval_ms": 1.5}, "invalid_arguments"),
    ("list_facts", "{not json", "invalid_json"),
    ("store_fact", {"namespace": "self", "key": "k", "value": 1}, "reserved_namespace"),
    (
        "store_fact",
        {
            "namespace": "user",
            "key": "trip",
            "value": 1,
            "valid_from": "2026-05-02T00:00:00Z",
            "valid_until": "2026-05-01T00:00:00Z",
        },
        "invalid_time_range",
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "code"), REFUSED_CALLS, ids=[c for *_x, c in REFUSED_CALLS]
)
@pytest.mark.parametrize("then_ok", [False, True], ids=["alone", "then-corrected"])
def test_a_call_refused_for_its_arguments_after_a_retrieval_is_neutral(
    target: Path | URL, clock: FakeClock, tool: str, args: Any, code: str, then_ok: bool
) -> None:
    # Decision (docs/learning.md, "Skill efficacy"): a call refused for what it was given never
    # acted; it is the caller's malformed call, not the recipe's step failing. It used to count
    # as the skill failing (three such runs deprecate a draft).
    with Store.open(target, clock=clock) as store:
        with store.begin() as mem:
            mem.skills.create("store-a-fact", "Store a fact", "x", "1. store_fact")
        calls: list[tuple[str, Any]] = [("use_skill", {"name": "store-a-fact"}), (tool, args)]
        if then_ok:
            calls.append(("store_fact", {"namespace": "user", "key": "x", "value": 1}))
        results = []
        for name, arguments in calls:
            clock.advance(minutes=1)
            results.append(tools.call(name, arguments, db=store).error_code)
        assert results == [None, code, None][: len(calls)]
        clock.advance(hours=1)
        with store.begin() as mem:
            report = mem.reflector.run()
            record = mem.skills.get("store-a-fact", record_access=False)
        assert (report.successes, report.failures) == ((1, 0) if then_ok else (0, 0))
        assert record is not None and record.failure_count == 0


def test_an_outcome_is_charged_to_the_recipe_revision_the_run_fetched(
    skills: SkillService, reflector: ReflectorService, log: Log, clock: FakeClock
) -> None:
    # A run fetched revision 1 and failed; the recipe was revised before the reflector ran.
    # The failure is revision 1's (it used to land on revision 2, blaming the fix).
    skills.set_recipe("berlin-rent", steps=["fetch"], verification="v", tool_policy=["web"])
    log.retrieve("berlin-rent")
    log.action("web_fetch", success=False)
    clock.advance(hours=1)
    skills.revise_recipe("berlin-rent", steps=["fetch", "compare"])
    log.retrieve("berlin-rent")  # a run of revision 2, which succeeds
    log.action("web_fetch")
    clock.advance(hours=1)

    report = reflector.run()

    assert (report.successes, report.failures) == (1, 1)
    revisions = [
        (r.revision, r.success_count, r.failure_count, r.current)
        for r in skills.revisions("berlin-rent")
    ]
    assert revisions == [(1, 0, 1, False), (2, 1, 0, True)]


@pytest.mark.parametrize(
    "scope",
    [
        {"until": datetime.max.replace(tzinfo=UTC)},
        {"until": datetime(9999, 12, 31, 23, 0, tzinfo=UTC)},
        {"window": AttributionWindow(max_duration=timedelta.max)},
        {"window": AttributionWindow(max_duration=timedelta(days=3_000_000))},
        {
            "until": datetime(2100, 1, 1, tzinfo=UTC),
            "window": AttributionWindow(max_duration=timedelta.max),
        },
    ],
    ids=["until the last instant", "until late 9999", "longest window", "3M days", "both"],
)
def test_a_scope_or_window_reaching_past_the_last_time_credits_as_any(
    skills: SkillService, reflector: ReflectorService, log: Log, scope: dict[str, Any]
) -> None:
    # ``until + window.max_duration`` (the log read as context) and ``retrieval time +
    # max_duration`` (a window's deadline) overflowed past year 9999: an untyped OverflowError
    # from run() and due(), for an until or a window each accepted. They end at the last time.
    log.retrieve("berlin-rent")
    log.action("web_fetch")
    log.user_turn()
    window = scope.get("window", DEFAULT_WINDOW)
    assert reflector.due(window=window) == 1
    report = reflector.run(**scope)
    assert (report.successes, report.failures) == (1, 0)
    assert reflector.due(window=window) == 0

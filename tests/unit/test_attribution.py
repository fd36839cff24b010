"""Outcome attribution: which actions after a skill retrieval decide its success or failure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.attribution import (
    ActionEvent,
    AttributionWindow,
    Credit,
    UserTurn,
    attribute,
    failure_code,
    failure_text,
    is_refused_arguments,
    retrieved_skill,
)
from philont.domain.maturity import Outcome
from philont.domain.names import MAX_ID_CHARS
from philont.errors import InvalidInputError
from philont.schemas.inputs import SkillNameLookup, check

T0 = datetime(2026, 6, 13, 12, 0, tzinfo=UTC)
SESSION = "s1"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fetch(
    id: int,
    seconds: float,
    name: object = "pdf-to-word",
    *,
    success: bool = True,
    session: str = SESSION,
) -> ActionEvent:
    return ActionEvent(
        id=id,
        session_id=session,
        tool_name="use_skill",
        success=success,
        timestamp=at(seconds),
        params={"name": name},
    )


def act(
    id: int, seconds: float, *, success: bool = True, tool: str = "bash", session: str = SESSION
) -> ActionEvent:
    return ActionEvent(
        id=id,
        session_id=session,
        tool_name=tool,
        success=success,
        timestamp=at(seconds),
        params={"cmd": "pandoc in.md -o out.docx"},
    )


def turn(seconds: float, session: str = SESSION) -> UserTurn:
    return UserTurn(session_id=session, timestamp=at(seconds))


def only(credits: Sequence[Credit]) -> Credit:
    assert len(credits) == 1, credits
    return credits[0]


def test_a_retrieval_followed_by_successful_actions_is_a_success() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 20)], []))
    assert (credit.retrieval_action_id, credit.skill_name) == (1, "pdf-to-word")
    assert credit.outcome is Outcome.SUCCESS
    assert credit.attributed_action_ids == (2, 3)


def test_the_reason_explains_the_verdict() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 20)], []))
    assert credit.reason.startswith("2 actions after retrieval, all succeeded")


def test_any_failed_action_in_the_window_makes_it_a_failure() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 20, success=False), act(4, 30)], []))
    assert credit.outcome is Outcome.FAILURE
    assert credit.attributed_action_ids == (2, 3, 4)
    assert "1 failed (first: action 3)" in credit.reason


def test_a_retrieval_with_nothing_after_it_credits_nothing() -> None:
    credit = only(attribute([fetch(1, 0)], []))
    assert credit.outcome is None
    assert credit.attributed_action_ids == ()
    assert credit.reason.startswith("no action ran after retrieval")


def test_fetching_a_skill_twice_in_a_row_credits_nothing() -> None:
    credits = attribute([fetch(1, 0), fetch(2, 5)], [])
    assert [(c.retrieval_action_id, c.outcome) for c in credits] == [(1, None), (2, None)]


def test_the_next_retrieval_ends_the_window() -> None:
    credits = attribute(
        [fetch(1, 0), act(2, 10), fetch(3, 20, "other-skill"), act(4, 30, success=False)], []
    )
    assert [(c.skill_name, c.outcome, c.attributed_action_ids) for c in credits] == [
        ("pdf-to-word", Outcome.SUCCESS, (2,)),
        ("other-skill", Outcome.FAILURE, (4,)),
    ]
    assert credits[0].reason.endswith("window ended by the next retrieval")


def test_the_next_user_turn_ends_the_window() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 30, success=False)], [turn(20)]))
    assert credit.outcome is Outcome.SUCCESS
    assert credit.attributed_action_ids == (2,)
    assert credit.reason.endswith("window ended by the next user turn")


def test_an_action_at_the_same_instant_as_the_next_user_turn_is_outside_the_window() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 20, success=False)], [turn(20)]))
    assert credit.attributed_action_ids == (2,)


def test_a_user_turn_at_the_retrieval_instant_does_not_close_the_window() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10)], [turn(0)]))
    assert credit.attributed_action_ids == (2,)


def test_user_turns_before_the_retrieval_are_ignored() -> None:
    credit = only(attribute([fetch(1, 100), act(2, 110)], [turn(0), turn(50)]))
    assert credit.attributed_action_ids == (2,)


def test_actions_of_another_session_are_ignored() -> None:
    actions = [fetch(1, 0), act(2, 10, success=False, session="s2"), act(3, 20)]
    credit = only(attribute(actions, []))
    assert credit.outcome is Outcome.SUCCESS
    assert credit.attributed_action_ids == (3,)


def test_a_user_turn_in_another_session_does_not_end_the_window() -> None:
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 30)], [turn(20, session="s2")]))
    assert credit.attributed_action_ids == (2, 3)


def test_a_retrieval_in_another_session_does_not_end_the_window() -> None:
    actions = [fetch(1, 0), fetch(2, 5, "other", session="s2"), act(3, 10)]
    credits = attribute(actions, [])
    assert [(c.retrieval_action_id, c.attributed_action_ids) for c in credits] == [
        (1, (3,)),
        (2, ()),
    ]


@pytest.mark.parametrize(("max_actions", "expected"), [(1, (2,)), (2, (2, 3)), (3, (2, 3, 4))])
def test_the_window_keeps_at_most_max_actions_actions(
    max_actions: int, expected: tuple[int, ...]
) -> None:
    actions = [fetch(1, 0), act(2, 1), act(3, 2), act(4, 3, success=False)]
    credit = only(attribute(actions, [], AttributionWindow(max_actions=max_actions)))
    assert credit.attributed_action_ids == expected


def test_a_failure_beyond_max_actions_is_not_blamed_on_the_skill() -> None:
    actions = [fetch(1, 0), act(2, 1), act(3, 2, success=False)]
    credit = only(attribute(actions, [], AttributionWindow(max_actions=1)))
    assert credit.outcome is Outcome.SUCCESS


@pytest.mark.parametrize(
    ("action_at_seconds", "inside"),
    [(60, True), (30 * 60 - 1, True), (30 * 60, True), (30 * 60 + 0.001, False), (3600, False)],
)
def test_only_actions_within_max_duration_of_the_retrieval_count(
    action_at_seconds: float, inside: bool
) -> None:
    credit = only(attribute([fetch(1, 0), act(2, action_at_seconds)], []))
    assert credit.attributed_action_ids == ((2,) if inside else ())


def test_a_custom_max_duration_is_honoured() -> None:
    window = AttributionWindow(max_duration=timedelta(seconds=15))
    credit = only(attribute([fetch(1, 0), act(2, 10), act(3, 20, success=False)], [], window))
    assert (credit.outcome, credit.attributed_action_ids) == (Outcome.SUCCESS, (2,))


def test_a_failed_use_skill_is_not_a_retrieval() -> None:
    assert attribute([fetch(1, 0, success=False), act(2, 10)], []) == []


def test_a_failed_use_skill_neither_ends_the_window_nor_counts_against_the_skill() -> None:
    actions = [fetch(1, 0), act(2, 10), fetch(3, 15, "deprecated-one", success=False), act(4, 20)]
    credit = only(attribute(actions, []))
    assert (credit.outcome, credit.attributed_action_ids) == (Outcome.SUCCESS, (2, 4))


@pytest.mark.parametrize(
    "name", [None, 42, "", "   ", "s" * (MAX_ID_CHARS + 1), "a\x00b", "a\ud800b"]
)
def test_a_retrieval_without_a_usable_skill_name_is_skipped(name: object) -> None:
    # A name no skill can bear (longer than a name, a NUL, a lone surrogate) was credited:
    # the reflector's look-up of it then raised at every run. It still ends the window before.
    assert attribute([fetch(1, 0, name), act(2, 10)], []) == []
    credit = only(attribute([fetch(1, 0), act(2, 5), fetch(3, 10, name), act(4, 15)], []))
    assert credit.attributed_action_ids == (2,)


_ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates and NUL too


@given(
    st.text(_ANY_CHAR, max_size=8)
    | st.text(_ANY_CHAR, min_size=MAX_ID_CHARS - 1, max_size=MAX_ID_CHARS + 2)
)
def test_a_retrieval_names_a_skill_exactly_when_the_look_up_takes_the_name(name: str) -> None:
    try:
        check(SkillNameLookup, name, "name")
        looked_up = bool(name.strip()) and "\x00" not in name
    except InvalidInputError:
        looked_up = False
    assert (retrieved_skill({"name": name}) == name) is looked_up


def test_a_retrieval_without_params_is_skipped() -> None:
    retrieval = ActionEvent(1, SESSION, "use_skill", True, at(0), None)
    assert attribute([retrieval, act(2, 10)], []) == []


def test_the_retrieval_tool_name_is_configurable() -> None:
    retrieval = ActionEvent(1, SESSION, "load_recipe", True, at(0), {"name": "x"})
    window = AttributionWindow(retrieval_tool="load_recipe")
    credits = attribute([retrieval, act(2, 10)], [], window)
    assert only(credits).attributed_action_ids == (2,)


def test_unsorted_input_is_ordered_by_timestamp_then_id() -> None:
    actions = [act(4, 10), act(3, 10, success=False), fetch(1, 0), act(2, 0)]
    credit = only(attribute(actions, [], AttributionWindow(max_actions=2)))
    # act 2 shares the retrieval's timestamp but has a larger id, so it comes after it
    assert credit.attributed_action_ids == (2, 3)
    assert credit.outcome is Outcome.FAILURE


def test_an_action_at_the_retrieval_instant_with_a_smaller_id_is_before_it() -> None:
    credit = only(attribute([act(1, 0, success=False), fetch(2, 0), act(3, 5)], []))
    assert credit.attributed_action_ids == (3,)


def test_credits_come_in_retrieval_order_across_sessions() -> None:
    actions = [fetch(5, 30, "b", session="s2"), fetch(1, 0, "a"), fetch(9, 60, "c", session="s3")]
    assert [c.skill_name for c in attribute(actions, [])] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_actions": 0},
        {"max_actions": -3},
        {"max_duration": timedelta(0)},
        {"max_duration": timedelta(minutes=-1)},
        {"retrieval_tool": " "},
    ],
)
def test_an_empty_or_negative_window_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        AttributionWindow(**kwargs)  # type: ignore[arg-type]


def test_naive_timestamps_are_refused() -> None:
    naive = ActionEvent(1, SESSION, "use_skill", True, datetime(2026, 1, 1), {"name": "x"})
    with pytest.raises(InvalidInputError):
        attribute([naive], [])


def test_no_actions_means_no_credits() -> None:
    assert attribute([], [turn(0)]) == []


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        ("fact_not_found", Outcome.SUCCESS),  # "X is not stored" is an answer, a step done
        ("skill_not_found", Outcome.SUCCESS),
        ("not_found", Outcome.SUCCESS),
        ("internal_error", Outcome.FAILURE),
        ("unknown_tool", Outcome.FAILURE),
        (None, Outcome.FAILURE),  # a failure with no code (another writer's row)
    ],
)
def test_a_look_up_that_found_nothing_does_not_blame_the_recipe(
    code: str | None, outcome: Outcome
) -> None:
    failed = ActionEvent(
        id=2, session_id=SESSION, tool_name="get_fact", success=False, timestamp=at(5),
        error_code=code,
    )  # fmt: skip
    assert only(attribute([fetch(1, 0), failed, act(3, 10)], [])).outcome is outcome


@given(code=st.from_regex(r"[a-z0-9_]{1,40}", fullmatch=True), message=st.text())
def test_a_failure_code_reads_back_from_its_logged_text(code: str, message: str) -> None:
    assert failure_code(failure_text(code, message)) == code


def test_a_text_that_is_not_a_failure_has_no_code() -> None:
    assert [failure_code(t) for t in (None, "", "Stored user.city", "error: x")] == [None] * 4


# --- a call refused for its arguments is neutral ---------------------------------------------
# Decision (spec §10, §17.3 Q-K1/Q-K2; docs/learning.md "Skill efficacy"): a skill is graded by
# evidence about its recipe. A call the dispatcher refused for its arguments (invalid_json,
# invalid_arguments) or a service refused for a value (every InvalidInputError code) never acted:
# it is the caller's malformed call, not the recipe's step failing. It is neutral: neither
# success nor failure, it does not end the window and takes none of its places.

REFUSAL_CODES = sorted(
    {"invalid_json", "invalid_arguments"}
    | {kind.code for kind in (InvalidInputError, *InvalidInputError.__subclasses__())}
)
OTHER_CODES = ["internal_error", "unknown_tool", "skill_not_usable", "storage_error", None]


def test_every_input_refusal_code_is_neutral_and_no_other_failure_is() -> None:
    assert {"invalid_arguments", "invalid_input", "reserved_namespace"} <= set(REFUSAL_CODES)
    assert all(is_refused_arguments(code) for code in REFUSAL_CODES)
    assert not any(is_refused_arguments(code) for code in OTHER_CODES)
    assert not is_refused_arguments("fact_not_found")  # an answer: a success, not neutral


def test_a_malformed_call_then_its_corrected_call_credits_a_success() -> None:
    refused = ActionEvent(
        id=2, session_id=SESSION, tool_name="store_fact", success=False, timestamp=at(5),
        error_code="invalid_arguments",
    )  # fmt: skip
    credit = only(attribute([fetch(1, 0), refused, act(3, 10)], []))
    assert credit.outcome is Outcome.SUCCESS and credit.attributed_action_ids == (3,)


def test_only_malformed_calls_after_a_retrieval_credit_nothing() -> None:
    refused = ActionEvent(
        id=2, session_id=SESSION, tool_name="store_fact", success=False, timestamp=at(5),
        error_code="invalid_arguments",
    )  # fmt: skip
    assert only(attribute([fetch(1, 0), refused], [])).outcome is None


_KINDS = st.sampled_from(["ok", "failed", "answer", "refused", "fetch", "bad-fetch", "other"])
_CODES = {"failed": st.sampled_from(OTHER_CODES), "answer": st.just("fact_not_found")}


@st.composite
def _logs(draw: st.DrawFn) -> list[ActionEvent]:
    """A session's log: retrievals, refused fetches, successes, failures, answers and calls
    refused for their arguments, in another session too, at increasing times."""
    events: list[ActionEvent] = []
    seconds = 0.0
    for i, kind in enumerate(draw(st.lists(_KINDS, max_size=30)), start=1):
        seconds += draw(st.sampled_from([0.0, 1.0, 60.0, 600.0]))
        if kind in ("fetch", "bad-fetch"):
            name = draw(st.sampled_from(["pdf-to-word", "unzip"]))
            events.append(fetch(i, seconds, name, success=kind == "fetch"))
            continue
        code = None
        if kind == "refused":
            code = draw(st.sampled_from(REFUSAL_CODES))
        elif kind in _CODES:
            code = draw(_CODES[kind])
        events.append(
            ActionEvent(
                id=i, session_id="s2" if kind == "other" else SESSION, tool_name="bash",
                success=kind == "ok", timestamp=at(seconds), error_code=code,
            )
        )  # fmt: skip
    return events


@given(log=_logs(), max_actions=st.integers(1, 4), turns=st.lists(st.floats(0, 4000), max_size=3))
def test_calls_refused_for_their_arguments_change_no_credit(
    log: list[ActionEvent], max_actions: int, turns: list[float]
) -> None:
    """Whatever the log, its verdicts are those of the same log without the refused calls:
    the same outcome, on the same actions, for the same reason."""
    window = AttributionWindow(max_actions=max_actions)
    user_turns = [UserTurn(SESSION, at(t)) for t in turns]
    without = [a for a in log if not is_refused_arguments(a.error_code)]
    assert attribute(log, user_turns, window) == attribute(without, user_turns, window)


@pytest.mark.parametrize("code", ["invalid_arguments", "reserved_namespace"])
@pytest.mark.parametrize("turn_seconds", [1.0, 0.5])
def test_a_refused_call_after_the_next_turn_does_not_change_the_reason(
    code: str, turn_seconds: float
) -> None:
    # Found by the property above: a refused call at or after the next user turn ended the
    # window ("ended by the next user turn") where the log without it ran out ("the end of the
    # log"); neutral calls now neither count nor end anything.
    refused = ActionEvent(
        id=2, session_id=SESSION, tool_name="bash", success=False, timestamp=at(1.0),
        error_code=code,
    )  # fmt: skip
    log = [fetch(1, 0.0, "pdf-to-word"), refused]
    turns = [UserTurn(SESSION, at(turn_seconds))]
    window = AttributionWindow(max_actions=1)
    assert attribute(log, turns, window) == attribute(log[:1], turns, window)
    assert attribute(log, turns, window)[0].reason.endswith("the end of the log")

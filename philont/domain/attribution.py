"""Honest skill efficacy: credit or blame a retrieved skill by what the agent did right after it.

Fetching a skill is not evidence that it works. This module looks at the time-ordered action log
and, for every successful retrieval of a skill, decides from the actions that followed whether the
skill should be credited with a success, blamed with a failure, or left alone.

Definitions (``window`` is an :class:`AttributionWindow`):

* Order: actions are ordered by ``(timestamp, id)``; the input need not be sorted.
* Retrieval: an action with ``tool_name == window.retrieval_tool`` and ``success is True``. The
  skill is ``params["name"]``; a retrieval whose name is missing, not a string, blank, or no
  skill's name there can be (:func:`retrieved_skill`) yields no credit. A failed
  retrieval-tool call (e.g. ``use_skill`` refusing a deprecated skill) is not a retrieval.
* The window of a retrieval R holds the actions A of R's session with
  ``(A.timestamp, A.id) > (R.timestamp, R.id)``, walked in order, and stops before the first of:

  1. the next successful retrieval-tool call in the session (named or not): from then on the
     agent follows another recipe, which gets its own credit;
  2. the next user turn of the session, i.e. the first user turn with timestamp strictly after
     ``R.timestamp`` (a turn at the very same instant is taken to be the one that prompted R).
     An action whose timestamp is ``>=`` that turn's timestamp is outside the window: on a tie
     the user turn comes first;
  3. an action with ``A.timestamp - R.timestamp > window.max_duration`` (an action exactly
     ``max_duration`` after R is still inside);
  4. ``window.max_actions`` attributed actions (the window keeps the first ``max_actions``).

  Neutral actions inside the window are skipped: they neither end the window nor count as an
  attributed action (:func:`is_neutral`). They are failed retrieval-tool calls (a refused fetch
  says nothing about the recipe being followed) and calls refused for their arguments
  (:func:`is_refused_arguments`: ``invalid_json``, ``invalid_arguments`` and every
  :class:`~philont.errors.InvalidInputError` code): such a call never acted, so it is the
  caller's malformed call, not the recipe's step failing; the call the agent makes instead is
  the evidence.
  Actions of other sessions and user turns of other sessions are ignored.
* Outcome: ``FAILURE`` if any attributed action failed, ``SUCCESS`` if at least one ran and all
  succeeded, ``None`` if none ran (nothing is credited or blamed). A failure that answers the
  call rather than failing it (a read that found nothing: ``fact_not_found`` and the other
  ``*_not_found`` codes) counts as a success: "X is not stored" is a step done, not a recipe
  failing.

All timestamps must be timezone-aware datetimes.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from philont.domain.json_values import bad_text
from philont.domain.maturity import Outcome
from philont.domain.names import MAX_ID_CHARS
from philont.domain.timepolicy import clamp
from philont.errors import InvalidInputError

__all__ = [
    "ActionEvent",
    "AttributionWindow",
    "Credit",
    "UserTurn",
    "attribute",
    "failure_code",
    "failure_text",
    "is_an_answer",
    "is_neutral",
    "is_refused_arguments",
    "retrieved_skill",
]

_FAILURE = re.compile(r"error \(([a-z0-9_]+)\): ")


def failure_text(code: str, message: str) -> str:
    """What a failed tool call tells the model and leaves in the action log."""
    return f"error ({code}): {message}"


def failure_code(result: str | None) -> str | None:
    """The code of a failed call's logged result (:func:`failure_text`), or None."""
    match = _FAILURE.match(result or "")
    return match.group(1) if match else None


def is_an_answer(code: str | None) -> bool:
    """Whether a failure code answers the call rather than failing it: a look-up that found
    nothing."""
    return code is not None and (code == "not_found" or code.endswith("_not_found"))


ARGUMENT_REFUSALS: frozenset[str] = frozenset({"invalid_json", "invalid_arguments"})
"""The dispatcher's codes for a call refused before it ran: not JSON, or arguments its argument
model refuses (``philont.tools.dispatch``)."""


def _input_error_codes() -> set[str]:
    """The codes of :class:`InvalidInputError` and its subclasses (read when asked: every
    refusal of a value, present and future, is one)."""
    codes: set[str] = set()
    pending: list[type[InvalidInputError]] = [InvalidInputError]
    while pending:
        kind = pending.pop()
        codes.add(kind.code)
        pending.extend(kind.__subclasses__())
    return codes


def is_refused_arguments(code: str | None) -> bool:
    """Whether a failure code says the call was refused for what it was given (malformed or
    invalid arguments: the tool did nothing), rather than the action failing."""
    return code is not None and (code in ARGUMENT_REFUSALS or code in _input_error_codes())


@dataclass(frozen=True)
class ActionEvent:
    """One executed tool call from the action log."""

    id: int
    session_id: str
    tool_name: str
    success: bool
    timestamp: datetime
    params: Mapping[str, object] | None = None
    error_code: str | None = None
    """Why a failed call failed (:func:`failure_code` of its logged result)."""


@dataclass(frozen=True)
class UserTurn:
    """The moment a user message arrived in a session."""

    session_id: str
    timestamp: datetime


@dataclass(frozen=True)
class AttributionWindow:
    """Limits of the window of actions credited to one retrieval (see the module docstring)."""

    max_actions: int = 20
    max_duration: timedelta = field(default=timedelta(minutes=30))
    retrieval_tool: str = "use_skill"

    def __post_init__(self) -> None:
        if isinstance(self.max_actions, bool) or self.max_actions < 1:
            raise InvalidInputError.of("max_actions", f"must be >= 1, got {self.max_actions!r}")
        if self.max_duration <= timedelta(0):
            raise InvalidInputError.of(
                "max_duration", f"must be a positive duration, got {self.max_duration}"
            )
        if not self.retrieval_tool.strip():
            raise InvalidInputError.of("retrieval_tool", "must not be blank")


@dataclass(frozen=True)
class Credit:
    """The verdict for one retrieval: which skill, what outcome, on the strength of which actions.

    ``outcome`` is None when no action ran in the window; the service then records nothing.
    """

    retrieval_action_id: int
    skill_name: str
    outcome: Outcome | None
    attributed_action_ids: tuple[int, ...]
    reason: str


def _order_key(action: ActionEvent) -> tuple[datetime, int]:
    return (action.timestamp, action.id)


def _require_aware(value: datetime, what: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{what} must have a timezone-aware timestamp, got {value!r}")


def _is_retrieval_call(action: ActionEvent, window: AttributionWindow) -> bool:
    return action.tool_name == window.retrieval_tool and action.success


def is_neutral(action: ActionEvent, window: AttributionWindow) -> bool:
    """Whether an action in a retrieval's window is skipped, neither credit nor blame: a
    refused fetch (a failed retrieval-tool call), or a call refused for its arguments."""
    if action.success:
        return False
    return action.tool_name == window.retrieval_tool or is_refused_arguments(action.error_code)


def retrieved_skill(params: object) -> str | None:
    """The skill a retrieval's parameters name: ``params["name"]`` when a skill can bear it (a
    non-blank string of at most :data:`~philont.domain.names.MAX_ID_CHARS` characters, valid
    Unicode, without a NUL character, which no PostgreSQL text holds), else None (no
    retrieval: the call still ends the window of the retrieval before it). Such a name was
    credited, and the reflector's look-up of it (or its marking the row with it) raised at
    every run, for good; a judged run's verdict kept it."""
    name = params.get("name") if isinstance(params, Mapping) else None
    if (
        isinstance(name, str)
        and name.strip()
        and len(name) <= MAX_ID_CHARS
        and "\x00" not in name
        and bad_text(name) is None
    ):
        return name
    return None


def _skill_name(action: ActionEvent) -> str | None:
    return retrieved_skill(action.params)


def _plural(count: int) -> str:
    return f"{count} action" if count == 1 else f"{count} actions"


def _credit_one(
    retrieval: ActionEvent,
    skill_name: str,
    following: Sequence[ActionEvent],
    next_turn_at: datetime | None,
    window: AttributionWindow,
) -> Credit:
    deadline = clamp(retrieval.timestamp, window.max_duration)  # past year 9999: its end
    attributed: list[ActionEvent] = []
    ended_by = "the end of the log"
    for action in following:
        if is_neutral(action, window):
            continue  # a refused fetch or a malformed call: it neither counts nor ends anything
        if _is_retrieval_call(action, window):
            ended_by = "the next retrieval"
            break
        if next_turn_at is not None and action.timestamp >= next_turn_at:
            ended_by = "the next user turn"
            break
        if action.timestamp > deadline:
            ended_by = f"the {window.max_duration} time limit"
            break
        if len(attributed) == window.max_actions:
            ended_by = f"the {window.max_actions}-action limit"
            break
        attributed.append(action)

    ids = tuple(action.id for action in attributed)
    failed = [a for a in attributed if not a.success and not is_an_answer(a.error_code)]
    outcome: Outcome | None
    if not attributed:
        outcome = None
        summary = "no action ran after retrieval"
    elif failed:
        outcome = Outcome.FAILURE
        summary = (
            f"{_plural(len(attributed))} after retrieval, {len(failed)} failed "
            f"(first: action {failed[0].id})"
        )
    else:
        outcome = Outcome.SUCCESS
        summary = f"{_plural(len(attributed))} after retrieval, all succeeded"
    return Credit(
        retrieval_action_id=retrieval.id,
        skill_name=skill_name,
        outcome=outcome,
        attributed_action_ids=ids,
        reason=f"{summary}; window ended by {ended_by}",
    )


def attribute(
    actions: Sequence[ActionEvent],
    user_turns: Sequence[UserTurn],
    window: AttributionWindow = AttributionWindow(),
) -> list[Credit]:
    """Return one :class:`Credit` per named successful retrieval, ordered by ``(timestamp, id)``.

    The window rules are in the module docstring. Credits with ``outcome=None`` are included so
    callers can log why nothing was recorded. Naive timestamps raise
    :class:`~philont.errors.InvalidInputError`.
    """
    for action in actions:
        _require_aware(action.timestamp, f"action {action.id}")
    for turn in user_turns:
        _require_aware(turn.timestamp, f"user turn of session {turn.session_id!r}")

    by_session: dict[str, list[ActionEvent]] = defaultdict(list)
    for action in sorted(actions, key=_order_key):
        by_session[action.session_id].append(action)
    turns_by_session: dict[str, list[datetime]] = defaultdict(list)
    for turn in user_turns:
        turns_by_session[turn.session_id].append(turn.timestamp)
    for stamps in turns_by_session.values():
        stamps.sort()

    credits: list[tuple[tuple[datetime, int], Credit]] = []
    for session_id, session_actions in by_session.items():
        turn_stamps = turns_by_session.get(session_id, [])
        for index, retrieval in enumerate(session_actions):
            if not _is_retrieval_call(retrieval, window):
                continue
            skill_name = _skill_name(retrieval)
            if skill_name is None:
                continue
            # The first turn strictly after the retrieval; one at the same instant prompted it.
            turn_index = bisect.bisect_right(turn_stamps, retrieval.timestamp)
            next_turn_at = turn_stamps[turn_index] if turn_index < len(turn_stamps) else None
            credit = _credit_one(
                retrieval, skill_name, session_actions[index + 1 :], next_turn_at, window
            )
            credits.append((_order_key(retrieval), credit))

    credits.sort(key=lambda pair: pair[0])
    return [credit for _, credit in credits]

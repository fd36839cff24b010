"""Argument models of the eleven model tools: strict, closed (extra="forbid"), described.

Field types are the shared input types (``philont.schemas.inputs``): a tool and the service it
calls accept exactly the same values and refuse the rest with the same message.

The docstring of each model is the tool description the model reads; every field has a
description. JSON Schemas for OpenAI and Anthropic are generated from these models.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from philont.domain.kinds import FactKind
from philont.domain.recurrence import MAX_INTERVAL_MS, MIN_INTERVAL_MS
from philont.domain.timepolicy import (
    MAX_EPOCH_MS,
    MIN_EPOCH_MS,
    SECONDS_SIZED_MS,
    seconds_sized,
    shown_integer,
)
from philont.schemas.inputs import (
    Confidence,
    FactKey,
    FactKindName,
    FactValue,
    HeldFactKey,
    HeldNamespace,
    HeldNamespaceSelector,
    Limit,
    ModelNamespace,
    Offset,
    Query,
    SkillNameLookup,
)
from philont.schemas.planning import (
    CronText,
    ExternalRef,
    Project,
    RRuleText,
    ScheduleId,
    ScheduleMessage,
    ScheduleName,
    Title,
    ZoneName,
)


def _time_value(value: object) -> str | int:
    """ISO-8601 text (read by the handler, in ``timezone``), or whole epoch milliseconds in
    the supported times and not the size of epoch seconds (the ranges the schema advertises)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be ISO-8601 text or epoch milliseconds, got {type(value).__name__}")
    if not MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
        raise ValueError(
            f"{shown_integer(value)} epoch milliseconds is outside the supported times "
            f"({MIN_EPOCH_MS}..{MAX_EPOCH_MS})"
        )
    problem = seconds_sized(value)
    if problem is not None:
        raise ValueError(problem)
    return value


TimeValue = Annotated[
    str | int,
    PlainValidator(_time_value),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {"type": "integer", "minimum": SECONDS_SIZED_MS, "maximum": MAX_EPOCH_MS},
                {"type": "integer", "minimum": MIN_EPOCH_MS, "maximum": -SECONDS_SIZED_MS},
                {"type": "integer", "minimum": 0, "maximum": 0},  # the same instant in seconds
            ],
            "description": (
                "ISO-8601 time with an offset (2026-04-22T09:00:00+02:00, or Z for UTC), or "
                "epoch milliseconds (13 digits today; epoch seconds are refused). Text without "
                "an offset is read in `timezone`."
            ),
        }
    ),
]


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    @field_validator("*", mode="before")
    @classmethod
    def _json_integer(cls, value: Any, info: ValidationInfo) -> Any:
        """JSON Schema's ``integer`` is any number with a zero fractional part: ``1000.0``
        is 1000 for every argument the schema calls an integer (and not also a number), and
        ``1000.5`` is refused by name. Which arguments those are is read from the schema the
        tool advertises, so the two cannot part."""
        if not isinstance(value, float) or info.field_name not in _integer_fields(cls):
            return value
        if value.is_integer():  # False for NaN and the infinities too
            return int(value)
        raise ValueError(f"must be a whole number, got {value!r}")


@functools.cache
def _integer_fields(model: type[ToolArgs]) -> frozenset[str]:
    """The arguments whose advertised schema admits integers but not other numbers."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    return frozenset(
        name
        for name, prop in schema.get("properties", {}).items()
        if "integer" in (types := _types(prop, defs)) and "number" not in types
    )


def _types(node: Any, defs: dict[str, Any]) -> set[str]:
    """Every JSON type a schema node admits (``$ref`` and ``anyOf`` followed)."""
    if not isinstance(node, dict):
        return set()
    if "$ref" in node:
        return _types(defs.get(node["$ref"].rsplit("/", 1)[-1]), defs)
    found = {node["type"]} if isinstance(node.get("type"), str) else set()
    for branch in node.get("anyOf", ()):
        found |= _types(branch, defs)
    return found


class StoreFactArgs(ToolArgs):
    """Remember a fact about the user, a project, a decision or the context, under
    namespace + key. Storing a key again supersedes the old value (kept as history). Store
    proactively: preferences and especially dislikes, constraints, identity details, project
    facts, decisions; one-off happenings as fact_kind=event with occurred_at; temporary states
    with valid_until. Convert relative times ("tomorrow") to absolute ISO-8601 first. To add to
    an accumulating value, get_fact first and store the merged value."""

    namespace: ModelNamespace
    key: FactKey
    value: FactValue
    confidence: Confidence = 1.0
    fact_kind: FactKindName = FactKind.STATE
    occurred_at: TimeValue | None = Field(default=None, description="When an event happened.")
    valid_from: TimeValue | None = Field(default=None, description="When a state starts to hold.")
    valid_until: TimeValue | None = Field(default=None, description="When a state stops holding.")
    timezone: ZoneName = "UTC"


class GetFactArgs(ToolArgs):
    """Read one remembered fact (the current value, with its time tag)."""

    namespace: HeldNamespace
    key: HeldFactKey


class ListFactsArgs(ToolArgs):
    """List the current facts of a namespace; 'user.*' also lists sub-namespaces
    (user.preferences, user.home...). A long listing is shown in parts: it ends saying the
    offset to list on from."""

    namespace: HeldNamespaceSelector
    offset: Offset = Field(
        default=0, description="Facts to skip (by namespace and key): where to list on from."
    )
    limit: Limit | None = Field(default=None, description="Most facts to list (default: all).")


class SearchNotesArgs(ToolArgs):
    """Search remembered notes by meaning-bearing words (any language), best matches first."""

    query: Query
    limit: Limit = 5


class SearchSkillsArgs(ToolArgs):
    """Find skills (reusable procedures, and 'avoid' lessons) relevant to a task."""

    query: Query
    limit: Limit = 5
    include_negative: StrictBool = Field(
        default=True, description="Also return 'avoid' lessons (anti-patterns)."
    )


class UseSkillArgs(ToolArgs):
    """Fetch a skill's action template to follow it. Fetching is not success: whether it
    worked is judged later from what your following actions achieved."""

    name: SkillNameLookup


class RecallSessionsArgs(ToolArgs):
    """Search past conversations when the user refers to something said before ("remember
    when…", "as I said earlier"). Prefer get_fact/search_notes when a fact or note suffices.
    since/until restrict to a time window (both inclusive); around prefers messages within 3
    days of a time without excluding the others (use it for "around Easter", "in early May");
    a date the query itself names ("on 3 May 2023", "last week") is preferred the same way.
    Hits are grouped by session, with the session's summary when one was written."""

    query: Query
    since: TimeValue | None = Field(default=None, description="Only messages at or after this.")
    until: TimeValue | None = Field(
        default=None,
        description="Only messages at or before this (a bare date: through the end of that day).",
    )
    around: TimeValue | None = Field(
        default=None, description="Prefer messages within 3 days of this time (soft)."
    )
    limit: Limit = 5
    timezone: ZoneName = "UTC"


class CreateCalendarEventArgs(ToolArgs):
    """Put an event on the calendar, optionally recurring (iCalendar RRULE). For an all-day
    event (a birthday, a deadline, a holiday) give starts_at as a date alone (2026-12-04), and
    ends_at, if it lasts several days, as its last day (2026-12-06)."""

    title: Title
    starts_at: TimeValue = Field(
        description="Start time, or a date alone (2026-12-04) for an all-day event."
    )
    ends_at: TimeValue | None = Field(
        default=None,
        description="End time (optional); for an all-day event its last day, a date.",
    )
    timezone: ZoneName = Field(
        description="IANA zone the event lives in; recurrences follow its local clock."
    )
    rrule: RRuleText | None = None
    external_ref: ExternalRef | None = None

    @model_validator(mode="after")
    def _bounded(self) -> CreateCalendarEventArgs:
        """The expensive checks of the event (its rule expanded, its end, the calendar's
        range) run here, while the arguments are validated: before any transaction begins, so
        never under the write lock. ``CalendarService.create`` finds the result cached."""
        from philont.domain.series import check_event
        from philont.domain.timeparse import event_times

        if isinstance(self.starts_at, str) and not self.starts_at.strip():
            return self  # "not given": the tool says starts_at is required
        starts, ends = event_times(self.starts_at, self.ends_at, tz=self.timezone)
        check_event(starts, ends, self.timezone, self.rrule)
        return self


class ListUpcomingArgs(ToolArgs):
    """List calendar events and scheduled reminders coming up in the next days."""

    window_days: StrictInt = Field(default=7, ge=1, le=90, description="How many days ahead.")


class ScheduleReminderArgs(ToolArgs):
    """Schedule a reminder or an autonomous task: once (at), every interval (interval_ms;
    with at, at is its first run, else now + interval), or on a cron schedule (cron, with
    timezone; cron alone). A task with the same name replaces the old one. Milliseconds:
    5 min = 300000, 1 h = 3600000, 1 day = 86400000. An interval counts elapsed time: for
    the same local time every day (across clock changes) use cron."""

    name: ScheduleName = Field(description="Task name (a same-named task is replaced).")
    message: ScheduleMessage
    at: TimeValue | None = Field(
        default=None,
        description="When to fire (a date with a time of day): once, or with interval_ms the "
        "first run.",
    )
    interval_ms: StrictInt | None = Field(
        default=None,
        ge=MIN_INTERVAL_MS,
        le=MAX_INTERVAL_MS,
        description="Recurring: milliseconds between runs (whole number).",
    )
    cron: CronText | None = None
    timezone: ZoneName = Field(
        default="UTC",
        description="IANA zone: `at` without an offset is read in it, cron is evaluated in "
        "it, and the task's times are listed in it.",
    )
    action_type: Literal["prompt", "autonomous_turn"] = Field(
        default="prompt",
        description="prompt: push the message; autonomous_turn: run an agent turn doing it.",
    )
    project: Project = None


class CancelScheduleArgs(ToolArgs):
    """Cancel a scheduled task by its exact name or its id (history is kept)."""

    name: ScheduleName | None = Field(
        default=None,
        description="The exact name of the task to cancel (every enabled task of "
        "that name is cancelled).",
    )
    id: ScheduleId | None = None

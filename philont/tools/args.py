"""Argument models of the eleven model tools: strict, closed (extra="forbid"), described.

The docstring of each model is the tool description the model reads; every field has a
description. JSON Schemas for OpenAI and Anthropic are generated from these models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictBool, StrictInt, StrictStr

TimeValue = Annotated[
    StrictStr | StrictInt,
    Field(
        description=(
            "ISO-8601 time with an offset (2026-04-22T09:00:00+02:00, or Z for UTC), or epoch "
            "milliseconds. Text without an offset is read in `timezone`."
        )
    ),
]
ZoneName = Annotated[
    StrictStr,
    Field(
        description="IANA time zone used to read times given without an offset.",
        min_length=1,
        max_length=64,
    ),
]
Query = Annotated[
    StrictStr,
    Field(description="What to look for, in any language.", min_length=1, max_length=2000),
]


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class StoreFactArgs(ToolArgs):
    """Remember a fact about the user, a project, a decision or the context, under
    namespace + key. Storing a key again supersedes the old value (kept as history). Store
    proactively: preferences and especially dislikes, constraints, identity details, project
    facts, decisions; one-off happenings as fact_kind=event with occurred_at; temporary states
    with valid_until. Convert relative times ("tomorrow") to absolute ISO-8601 first. To add to
    an accumulating value, get_fact first and store the merged value."""

    namespace: StrictStr = Field(
        description="Dot-separated lowercase namespace: user, user.preferences, project.<name>, "
        "decisions, context. 'self' is reserved.",
        min_length=1,
        max_length=100,
    )
    key: StrictStr = Field(
        description="Short slug naming the fact (home_city, diet, deadline); no spaces or colons.",
        min_length=1,
        max_length=64,
    )
    value: JsonValue = Field(description="The value: text, number, boolean, list or object.")
    confidence: float = Field(
        default=1.0, ge=0.0, le=1.0, strict=True, description="How sure you are, 0 to 1."
    )
    fact_kind: Literal["state", "event"] = Field(
        default="state", description="state: true until changed; event: happened at occurred_at."
    )
    occurred_at: TimeValue | None = Field(default=None, description="When an event happened.")
    valid_from: TimeValue | None = Field(default=None, description="When a state starts to hold.")
    valid_until: TimeValue | None = Field(default=None, description="When a state stops holding.")
    timezone: ZoneName = "UTC"


class GetFactArgs(ToolArgs):
    """Read one remembered fact (the current value, with its time tag)."""

    namespace: StrictStr = Field(description="The fact's namespace.", min_length=1, max_length=100)
    key: StrictStr = Field(description="The fact's key.", min_length=1, max_length=64)


class ListFactsArgs(ToolArgs):
    """List the current facts of a namespace; 'user.*' also lists sub-namespaces
    (user.preferences, user.home...)."""

    namespace: StrictStr = Field(
        description="Exact namespace, or prefix form 'user.*'.", min_length=1, max_length=102
    )


class SearchNotesArgs(ToolArgs):
    """Search remembered notes by meaning-bearing words (any language), best matches first."""

    query: Query
    limit: StrictInt = Field(default=5, ge=1, le=50, description="Most notes to return.")


class SearchSkillsArgs(ToolArgs):
    """Find skills (reusable procedures, and 'avoid' lessons) relevant to a task."""

    query: Query
    limit: StrictInt = Field(default=5, ge=1, le=20, description="Most skills to return.")
    include_negative: StrictBool = Field(
        default=True, description="Also return 'avoid' lessons (anti-patterns)."
    )


class UseSkillArgs(ToolArgs):
    """Fetch a skill's action template to follow it. Fetching is not success: whether it
    worked is judged later from what your following actions achieved."""

    name: StrictStr = Field(
        description="Exact skill name from search_skills.", min_length=1, max_length=80
    )


class RecallSessionsArgs(ToolArgs):
    """Search past conversations when the user refers to something said before ("remember
    when…", "as I said earlier"). Prefer get_fact/search_notes when a fact or note suffices."""

    query: Query
    since: TimeValue | None = Field(default=None, description="Only messages at or after this.")
    until: TimeValue | None = Field(default=None, description="Only messages at or before this.")
    limit: StrictInt = Field(default=5, ge=1, le=20, description="Most messages to return.")
    timezone: ZoneName = "UTC"


class CreateCalendarEventArgs(ToolArgs):
    """Put an event on the calendar, optionally recurring (iCalendar RRULE)."""

    title: StrictStr = Field(description="What the event is.", min_length=1, max_length=300)
    starts_at: TimeValue = Field(description="Start time.")
    ends_at: TimeValue | None = Field(default=None, description="End time (optional).")
    timezone: StrictStr = Field(
        description="IANA zone the event lives in; recurrences follow its local clock.",
        min_length=1,
        max_length=64,
    )
    rrule: StrictStr | None = Field(
        default=None,
        max_length=500,
        description="RFC 5545 rule, e.g. FREQ=WEEKLY;BYDAY=MO,WE or FREQ=MONTHLY;BYMONTHDAY=1.",
    )
    external_ref: StrictStr | None = Field(
        default=None, max_length=200, description="Id in an external calendar (deduplicates)."
    )


class ListUpcomingArgs(ToolArgs):
    """List calendar events and scheduled reminders coming up in the next days."""

    window_days: StrictInt = Field(default=7, ge=1, le=90, description="How many days ahead.")


class ScheduleReminderArgs(ToolArgs):
    """Schedule a reminder or an autonomous task: once (at), every interval (interval_ms), or
    on a cron schedule (cron, with timezone). Give exactly one of at / interval_ms / cron. A
    task with the same name replaces the old one. Milliseconds: 5 min = 300000, 1 h = 3600000,
    1 day = 86400000."""

    name: StrictStr = Field(
        description="Task name (a same-named task is replaced).", min_length=1, max_length=100
    )
    message: StrictStr = Field(
        description="Text to send, or the instruction to carry out.", min_length=1, max_length=4000
    )
    at: TimeValue | None = Field(default=None, description="One-time: when to fire.")
    interval_ms: StrictInt | None = Field(
        default=None, ge=1000, description="Recurring: milliseconds between runs (whole number)."
    )
    cron: StrictStr | None = Field(
        default=None,
        max_length=100,
        description="Recurring: 5-field cron expression, e.g. '0 9 * * 1-5' (weekdays 09:00).",
    )
    timezone: ZoneName = "UTC"
    action_type: Literal["prompt", "autonomous_turn"] = Field(
        default="prompt",
        description="prompt: push the message; autonomous_turn: run an agent turn doing it.",
    )
    project: StrictStr | None = Field(
        default=None,
        description="kebab-case project name (2-60 characters) to associate.",
    )


class CancelScheduleArgs(ToolArgs):
    """Cancel a scheduled task by its exact name or its id (history is kept)."""

    name: StrictStr | None = Field(default=None, description="Exact task name.", max_length=100)
    id: StrictStr | None = Field(default=None, description="Exact task id.", max_length=64)

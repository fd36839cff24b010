"""The eleven model tools: each handler turns validated arguments into one service call and the
text the model reads."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from philont.db.types import dumps_compact
from philont.domain.graphemes import clip
from philont.domain.kinds import AccessTarget, FactKind, SkillKind
from philont.domain.maturity import caveat
from philont.domain.series import all_day_dates
from philont.domain.timeparse import (
    event_times,
    given_wall,
    iso,
    parse_time,
    shown_at,
    wall_note,
    zone,
)
from philont.domain.timepolicy import clamp
from philont.errors import (
    FactNotFoundError,
    InvalidInputError,
    InvalidTimeRangeError,
    PhilontError,
)
from philont.memory import Memory
from philont.schemas.calendar import CalendarListing
from philont.schemas.schedules import ScheduleListing
from philont.schemas.search import MessageHit
from philont.schemas.timeline import SessionRecord
from philont.services.search.scoring import Kind
from philont.services.timeline import GLOBAL_SESSION
from philont.tools import args as a
from philont.tools.registry import MAX_RESULT_CHARS, ToolContext, ToolOutput, capped, tool

# A whole value that is an HTTP auth header line, or a scheme followed by one credential-like
# token. The original refused any text starting with "token " or "basic " (spec Q-S9: "Basic
# plan costs $10" was refused); we require the rest to look like a single credential.
AUTH_HEADER = re.compile(
    r"^\s*(authorization|proxy-authorization|x-api-key|x-auth-token|api-key|authentication)\s*:",
    re.IGNORECASE,
)
AUTH_SCHEME = re.compile(
    r"^\s*(bearer|token|basic|digest|api[\s_-]?key)\s+[A-Za-z0-9._~+/=:-]{8,}\s*$", re.IGNORECASE
)


_Item = tuple[datetime, int, str, Any]
"""(when, 0 for an event / 1 for a task, the line, the occurrence or run)."""

UPCOMING_SHOWN = 50
"""Lines ``list_upcoming`` shows (events and tasks together); the rest is counted."""
UPCOMING_PER_SERIES = 5
"""Occurrences of one recurring event ``list_upcoming`` shows: a frequent series (every
minute, say) would otherwise fill every line and hide the other events."""
TITLE_SHOWN = 200
"""Characters of a title, rule or task name shown in one listing line."""


def _inline(text: str, limit: int = TITLE_SHOWN) -> str:
    """Stored text (a title, a task name) inside one line of tool output: its line breaks and
    runs of whitespace become one space, so "Dentist\n- [task] …" cannot add a line the model
    reads as another entry; cut to ``limit`` characters with "…"."""
    return clip(" ".join(text.split()), limit)


RECURRING_WORDS = re.compile(r"每|每隔|\b(every|each|daily|weekly)\b", re.IGNORECASE)


def _json(value: Any) -> str:
    return dumps_compact(value)


def _dump(record: Any) -> Any:
    return record.model_dump(mode="json")


@tool("store_fact", a.StoreFactArgs, writes=True)
def store_fact(args: a.StoreFactArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    if isinstance(args.value, str):
        if AUTH_HEADER.match(args.value):
            raise InvalidInputError.of(
                "value",
                "looks like a whole HTTP header line; store only the bare value, and never "
                "store secrets you were not asked to keep",
            )
        if AUTH_SCHEME.match(args.value):
            raise InvalidInputError.of(
                "value",
                "carries an auth-scheme prefix followed by a credential "
                f"({args.value[:12]!r}…); store the bare token only if the user asked you to",
            )
    if args.value is None:
        raise InvalidInputError.of("value", "must not be null")
    record = mem.facts.store(
        args.namespace,
        args.key,
        args.value,
        confidence=args.confidence,
        fact_kind=FactKind(args.fact_kind),
        occurred_at=parse_time(args.occurred_at, field="occurred_at", tz=args.timezone),
        valid_from=parse_time(args.valid_from, field="valid_from", tz=args.timezone),
        valid_until=parse_time(args.valid_until, field="valid_until", tz=args.timezone),
    )
    note = " (replaced the previous value, kept as history)" if record.supersedes else ""
    return ToolOutput(
        f"Stored {record.namespace}.{record.key} {record.time_tag()}{note}", _dump(record)
    )


@tool("get_fact", a.GetFactArgs, writes=False)
def get_fact(args: a.GetFactArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    record = mem.facts.get(args.namespace, args.key)
    if record is None:
        raise FactNotFoundError(
            args.namespace, args.key, near=mem.facts.names_near(args.namespace, args.key)
        )
    note = ""
    if record.is_expired_at(ctx.now):
        note = " (expired)"
    elif not record.is_valid_at(ctx.now):
        note = " (not yet in force)"  # a state whose window begins later
    return ToolOutput(f"{_json(record.value)} {record.time_tag()}{note}", _dump(record))


@tool("list_facts", a.ListFactsArgs, writes=False)
def list_facts(args: a.ListFactsArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    namespace = args.namespace
    # the selector whole ('user.*' included): the service reads it as the argument type did
    records = mem.facts.list(namespace, offset=args.offset, limit=args.limit)
    if not records:
        past = f" past the first {args.offset:,}" if args.offset else ""
        return ToolOutput(f"No facts in {namespace}{past}", [])
    lines = [f"{r.namespace}.{r.key} = {_json(r.value)}  {r.time_tag()}" for r in records]
    return ToolOutput(_listed_in_parts(lines, args.offset), [_dump(r) for r in records])


def _listed_in_parts(lines: list[str], offset: int) -> str:
    """``lines`` (facts from ``offset`` on), whole when they fit what the model reads back
    (:data:`~philont.tools.registry.MAX_RESULT_CHARS`); else as many whole lines as fit (a
    first one longer than that cut as any text is), and a last line naming the offset to list
    on from: the cut of the whole text would leave no way to reach the rest."""
    text = "\n".join(lines)
    if len(text) <= MAX_RESULT_CHARS:
        return text
    room, shown = MAX_RESULT_CHARS - 200, list[str]()
    for line in lines:
        if len(line) >= room:
            break
        room -= len(line) + 1
        shown.append(line)
    if not shown:
        shown.append(capped(lines[0], MAX_RESULT_CHARS - 200))
    text = "\n".join(shown)
    if len(shown) < len(lines):
        text += (
            f"\n… {len(lines) - len(shown):,} more facts not shown: "
            f"list_facts with offset={offset + len(shown)} lists on"
        )
    return text


@tool("use_skill", a.UseSkillArgs, writes=True)
def use_skill(args: a.UseSkillArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    # Fetching counts as a use (ranking) but never as a success: the reflector credits the
    # skill later from what the following actions achieved (the original promoted on fetch).
    use = mem.skills.use(args.name)
    s = use.skill
    parts = [
        f"# Skill: {s.name} {use.caveat}",
        s.description,
        "",
        "## Action Template",
        s.action_template,
    ]
    if s.recipe is not None and s.recipe.steps:
        parts += ["", "## Steps", *(f"{i}. {step}" for i, step in enumerate(s.recipe.steps, 1))]
        if s.recipe.verification:
            parts += ["", "## Verify", s.recipe.verification]
        if s.recipe.tool_policy:
            parts += ["", "## Allowed tools", ", ".join(s.recipe.tool_policy)]
    parts += ["", "(Using a skill is not proof it works: check the result before relying on it.)"]
    return ToolOutput("\n".join(parts), _dump(s))


@tool("search_notes", a.SearchNotesArgs, writes=False)
def search_notes(args: a.SearchNotesArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    hits = mem.search.notes(args.query, limit=args.limit)
    if not hits:
        return ToolOutput(f"No notes match {_inline(args.query)!r}.", [])
    for h in hits:  # an access-log row each (no access time: a search is not a read of it)
        mem.access.refresh(AccessTarget.NOTE, h.id, context="search_notes", touch=False)
    return ToolOutput("\n".join(f"- {h.content}" for h in hits), [_dump(h) for h in hits])


@tool("search_skills", a.SearchSkillsArgs, writes=False)
def search_skills(args: a.SearchSkillsArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    # The kind filter runs inside the search, before the limit (the original filtered after
    # it and could return fewer skills than exist, Q-K7).
    kind = None if args.include_negative else SkillKind.POSITIVE
    hits = mem.search.skills(args.query, limit=args.limit, kind=kind)
    if not hits:
        return ToolOutput(f"No skills match {_inline(args.query)!r}.", [])
    lines = []
    for h in hits:
        tag = "⚠️ [avoid] " if h.kind == SkillKind.NEGATIVE else ""
        lines.append(
            f"- {tag}**{h.name}** {caveat(h.maturity)} (used {h.use_count} times): "
            f"{h.description}\n  trigger keywords: {', '.join(h.trigger_keywords)}"
        )
    return ToolOutput("\n".join(lines), [_dump(h) for h in hits])


@tool("recall_sessions", a.RecallSessionsArgs, writes=False)
def recall_sessions(args: a.RecallSessionsArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    since = parse_time(args.since, field="since", tz=args.timezone)
    until = parse_time(args.until, field="until", tz=args.timezone, end_of_day=True)
    if since is not None and until is not None and until < since:
        raise InvalidTimeRangeError(since, until, names=("since", "until"), what="recall window")
    around = parse_time(args.around, field="around", tz=args.timezone)
    hits = mem.search.messages(
        args.query, limit=args.limit, since=since, until=until, now=ctx.now, around=around
    )
    if not hits:
        text = f"No past messages match {_inline(args.query)!r}. Try search_notes or list_facts."
        return ToolOutput("\n".join([text, *_channels(mem)]), [])
    return ToolOutput(
        "\n".join([*_by_session(hits, mem), *_channels(mem)]), [_dump(h) for h in hits]
    )


HIT_SHOWN = 300
"""Characters of a message ``recall_sessions`` shows."""
SUMMARY_SHOWN = 600
"""Characters of a session's summary note ``recall_sessions`` shows."""


def _by_session(hits: list[MessageHit], mem: Memory) -> list[str]:
    """The hits grouped by session (sessions in the order of their first hit, hits oldest
    first), each session headed by its time span and its summary note if it has one (spec
    14.7; the original showed only the 3 newest hits of the pseudo-session ``global``, Q-T3).
    Every stored text is one line, so a message cannot add a line that reads as another hit."""
    groups: dict[str, list[MessageHit]] = {}
    for h in sorted(hits, key=lambda h: (h.timestamp, h.id)):
        groups.setdefault(h.session_id, []).append(h)
    sessions = mem.timeline.overviews(list(groups))
    lines: list[str] = []
    for sid, group in groups.items():
        found = sessions.get(sid)
        # The pseudo-session's start is when the database was made, not a conversation's.
        span = "" if found is None or sid == GLOBAL_SESSION else f" ({_span(found)})"
        lines.append(f"Session {_inline(sid)}{span}:")
        if found is not None and found.summary is not None:
            lines.append(f"  summary: {_inline(found.summary, SUMMARY_SHOWN)}")
        lines.extend(
            f"  - {iso(h.timestamp)} [{h.role}]: {_inline(h.content, HIT_SHOWN)}" for h in group
        )
    return lines


def _span(session: SessionRecord) -> str:
    ended = session.ended_at
    return f"started {iso(session.started_at)}, " + (
        "still open" if ended is None else f"ended {iso(ended)}"
    )


def _channels(mem: Memory) -> list[str]:
    """Issue #18: with an embedder, say which evidence answered and what is not embedded."""
    report = mem.search.reports.get(Kind.MESSAGES)
    if report is None:
        return []
    line = f"(answered by: {' + '.join(report.answered) or 'nothing'}"
    if report.unembedded:
        line += f"; {report.unembedded} recent messages not embedded yet, found by keyword only"
    return [line + ")"]


@tool("create_calendar_event", a.CreateCalendarEventArgs, writes=True)
def create_calendar_event(
    args: a.CreateCalendarEventArgs, mem: Memory, ctx: ToolContext
) -> ToolOutput:
    starts, ends = event_times(args.starts_at, args.ends_at, tz=args.timezone)
    wall = given_wall(args.starts_at, field="starts_at")
    local = None if wall is None else wall.replace(tzinfo=zone(args.timezone))
    if local is not None and local.astimezone(UTC) == starts:
        starts = local  # the same instant, as given: a series keeps a skipped time of day
    event = mem.calendar.create(
        args.title,
        starts,
        ends_at=ends,
        timezone=args.timezone,
        rrule=args.rrule,
        external_ref=args.external_ref,
    )
    repeat = f"repeating {event.rrule}" if event.rrule else ""
    days = all_day_dates(event.starts_at, event.ends_at, event.timezone)
    if days is None:
        kind, when = "", _at(event.starts_at, event.timezone, repeat)
    else:
        kind, when = "all-day ", f"{_days(*days)} ({_joined(event.timezone, repeat)})"
    text = f"Created {kind}calendar event '{_inline(event.title)}' {when}"
    notes = _wall_notes(args.timezone, starts_at=args.starts_at, ends_at=args.ends_at)
    return ToolOutput(text + notes, _dump(event))


def _wall_notes(tz: str, **given: object) -> str:
    """Lines saying where a local time the zone skips or repeats was placed (see
    :func:`philont.domain.timeparse.wall_note`), so the model can tell the user or correct it."""
    notes = [note for name, v in given.items() if (note := wall_note(v, field=name, tz=tz))]
    return "".join(f"\nNote: {note}" for note in notes)


def _joined(*parts: str) -> str:
    return ", ".join(p for p in parts if p)


def _at(when: datetime, tz: str, *notes: str) -> str:
    """``@`` and an instant of an item in zone ``tz`` (:func:`shown_at`: its wall time there and
    the UTC instant), then ``notes`` in parentheses; the zone joins them when the time shown
    does not name it (a UTC zone, or one that cannot be read)."""
    shown = shown_at(when, tz)
    named = shown != iso(when)
    inside = _joined(*notes) if named else _joined(tz, *notes)
    return f"@ {shown}" + (f" ({inside})" if inside else "")


def _days(first: date, last: date) -> str:
    """An all-day event's days: ``on 2026-12-04`` or ``2026-12-04 to 2026-12-06``."""
    return f"on {first}" if first == last else f"{first} to {last}"


def _upcoming_items(events: CalendarListing, runs: ScheduleListing) -> list[_Item]:
    """Event and task lines, soonest first; at the same time events before tasks, each in the
    order their service lists them (by title or name, then id)."""
    items: list[_Item] = []
    for o in events.occurrences:
        repeat = _inline(o.event.rrule) if o.event.rrule else ""
        if o.first_day is not None and o.last_day is not None:
            days = _days(o.first_day, o.last_day)
            when = f"{days} ({_joined('all day', o.event.timezone, repeat)})"
        else:
            when = _at(o.starts_at, o.event.timezone, repeat)
        line = f"- [event] {_inline(o.event.title)} {when}"
        items.append((o.starts_at, 0, line, o))
    for r in runs.runs:
        late = " (overdue)" if r.overdue else ""
        name, action = _inline(r.schedule.name), r.schedule.action_type
        when = shown_at(r.run_at, r.schedule.timezone)
        items.append((r.run_at, 1, f"- [task] {name} @ {when} ({action}){late}", r))
    items.sort(key=lambda item: item[:2])
    return items


@tool("list_upcoming", a.ListUpcomingArgs, writes=False)
def list_upcoming(args: a.ListUpcomingArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    # Both listings are capped and bounded (see CalendarService.between): the text shows the
    # first UPCOMING_SHOWN lines and says how many more exist; the data carries the counts.
    end = clamp(ctx.now, timedelta(days=args.window_days))
    events = mem.calendar.between(
        ctx.now, end, limit=UPCOMING_SHOWN, per_series=UPCOMING_PER_SERIES
    )
    runs = mem.schedules.due_between(ctx.now, end, limit=UPCOMING_SHOWN)
    shown = _upcoming_items(events, runs)[:UPCOMING_SHOWN]
    total = events.total + runs.total
    lines = [line for _, _, line, _ in shown]
    if events.capped_series:
        titles = {o.event.id: o.event.title for o in events.occurrences}
        each = ", ".join(
            f"{_series_title(mem, titles, i)} {n}{'' if events.total_is_exact else '+'}"
            for i, n in list(events.capped_series.items())[:5]
        )
        lines.append(
            f"(a recurring event shows its first {UPCOMING_PER_SERIES} occurrences here; "
            f"in the window: {each})"
        )
    if total > len(shown):
        plus = "" if events.total_is_exact else "+"
        lines.append(
            f"… {total - len(shown)}{plus} more not shown (listing the first {len(shown)}); "
            "ask for fewer days to see the rest"
        )
    skipped = [*events.skipped, *runs.skipped]
    skipped_count = events.skipped_bad_rows + runs.skipped_bad_rows
    if skipped_count:
        ids = ", ".join(str(row.id) for row in skipped[:5])
        lines.append(f"({skipped_count} stored item(s) could not be read and were skipped: {ids})")
    data = {
        "events": [_dump(o) for _, kind, _, o in shown if kind == 0],
        "schedules": [_dump(r) for _, kind, _, r in shown if kind == 1],
        "shown": len(shown),
        "total": total,
        "more": total - len(shown),
        "total_is_exact": events.total_is_exact,
        "events_total": events.total,
        "capped_series": events.capped_series,
        "schedules_total": runs.total,
        "skipped_bad_rows": skipped_count,
        "skipped": [row.model_dump() for row in skipped],
        "degraded_rows": events.degraded_rows,
        "rows_read": events.rows_read + len(runs.runs) + runs.skipped_bad_rows,
        "work_steps": events.work_steps,
    }
    if not lines:
        return ToolOutput(f"Nothing in the next {args.window_days} days.", data)
    return ToolOutput("\n".join(lines), data)


def _series_title(mem: Memory, titles: dict[str, str], event_id: str) -> str:
    """A series cut short, as the listing names it: its title, quoted. A series none of whose
    occurrences is among those shown (the lines ran out first) is looked up: it was named by
    its bare id, which the model read as a title. One whose row cannot be read is named by
    its id, saying so."""
    title = titles.get(event_id)
    if title is None:
        try:
            found = mem.calendar.get(event_id)
        except PhilontError:  # an unreadable row: listed as skipped elsewhere
            found = None
        if found is None:
            return f"(event {event_id})"
        title = found.title
    return f"'{_inline(title, 60)}'"


@tool("schedule_reminder", a.ScheduleReminderArgs, writes=True)
def schedule_reminder(args: a.ScheduleReminderArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    at = parse_time(args.at, field="at", tz=args.timezone, needs_clock=True)
    record, replaced = mem.schedules.replace(
        args.name,
        message=args.message,
        at=at,
        interval_ms=args.interval_ms,
        cron=args.cron,
        timezone=args.timezone,
        action_type=args.action_type,
        project=args.project,
    )
    how = {"once": "one-time"}.get(record.kind, f"recurring ({record.cron_expr})")
    kind = "🤖 autonomous" if args.action_type == "autonomous_turn" else "🔔 prompt"
    name, first = _inline(record.name), shown_at(record.next_run_at, record.timezone)
    text = f"Scheduled task '{name}' [{how}, {kind}], first run @ {first}"
    if record.interval_ms is not None and record.timezone is not None:
        text += _interval_note(record.next_run_at, record.interval_ms, record.timezone)
    if replaced:
        text += f" (replaced {replaced} older task(s) with the same name)"
    text += _wall_notes(args.timezone, at=args.at)
    if record.kind == "once" and RECURRING_WORDS.search(args.message):
        text += (
            ". Note: this fires once; for a repeating reminder call schedule_reminder again "
            "with interval_ms or cron."
        )
    return ToolOutput(text, _dump(record))


def _interval_note(first: datetime, interval_ms: int, tz: str) -> str:
    """What an interval's zone does not do: its runs are ``interval_ms`` of elapsed time
    apart, so where the zone changes its UTC offset within a year of the first run, their
    wall time there moves by the change. Nothing for a zone that keeps its offset."""
    where = zone(tz)
    offsets = {clamp(first, timedelta(days=7 * k)).astimezone(where).utcoffset() for k in range(54)}
    if len(offsets) < 2:
        return ""
    return (
        f"; then every {interval_ms} ms of elapsed time, so its wall time in {tz} moves when "
        "the clocks there change (for a fixed local time of day use cron)"
    )


@tool("cancel_schedule", a.CancelScheduleArgs, writes=True)
def cancel_schedule(args: a.CancelScheduleArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    cancelled = mem.schedules.cancel(name=args.name, id=args.id)
    names = ", ".join(_inline(s.name) for s in cancelled)
    return ToolOutput(
        f"Cancelled {len(cancelled)} task(s): {names} (kept in history)",
        {"cancelled_ids": [s.id for s in cancelled]},
    )

"""Read models of calendar events and of their expanded occurrences."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import Field

from philont.schemas.base import ReadModel


class CalendarEventRecord(ReadModel):
    """One stored calendar event (a one-shot, or a series when ``rrule`` is set).

    ``rrule`` is the normalised RFC 5545 rule; ``timezone`` is the IANA zone the series is
    expanded in (wall-clock times stay put across DST). ``all_day``: the event covers whole
    days of that zone, from the first instant of a day to the first instant of a later one
    (how Philont's columns hold an all-day event; see
    :func:`philont.domain.wallclock.all_day_days`).
    """

    id: str
    title: str
    starts_at: datetime
    ends_at: datetime | None
    rrule: str | None
    timezone: str
    related_fact_id: str | None
    external_ref: str | None
    created_at: datetime
    root_pursuit_id: str | None
    all_day: bool = False


class Occurrence(ReadModel):
    """One occurrence of an event inside a window (for a one-shot: the event itself).

    For an all-day event, ``first_day`` and ``last_day`` are its days in the event's zone
    (inclusive): what to show instead of instants, which fall on another date elsewhere.
    """

    event: CalendarEventRecord
    starts_at: datetime
    ends_at: datetime | None
    first_day: date | None = None
    last_day: date | None = None


class SkippedRow(ReadModel):
    """A stored row a listing could not use, and why. It is left in place: remove it (for a
    calendar event, ``philont calendar remove ID`` or ``CalendarService.delete``)."""

    id: str | None
    reason: str


class CalendarListing(ReadModel):
    """The occurrences of a window, capped, with what was left out.

    ``occurrences``: the earliest ones, at most the listing's limit. ``total``: all that overlap
    the window (a lower bound unless ``total_is_exact``; counting is bounded too); ``more`` =
    ``total - len(occurrences)``. ``skipped_bad_rows``: stored events that could not be listed
    at all (values no layer can read, or a series needing more work than an event may cost);
    ``skipped`` names the first of them. ``degraded_rows``: events listed as one-shots because
    their rule or zone cannot be read (as the original program treats them). ``rows_read`` and
    ``work_steps`` report the work done (see :mod:`philont.domain.rrule_engine`).
    ``capped_series``: with a cap per series (``between(per_series=...)``), each series that
    had more occurrences in the window than it was allowed to show, by event id: how many it
    has there (bounded like ``total``).
    """

    occurrences: list[Occurrence]
    total: int
    more: int
    total_is_exact: bool
    skipped_bad_rows: int
    skipped: list[SkippedRow]
    degraded_rows: int
    rows_read: int
    work_steps: int
    capped_series: dict[str, int] = Field(default_factory=dict)


class CalendarEvents(ReadModel):
    """Stored events by start (``philont calendar list``), capped at a limit: ``events`` are the
    readable ones, ``skipped`` the unreadable ones among those rows, ``total`` all rows."""

    events: list[CalendarEventRecord]
    skipped: list[SkippedRow]
    total: int

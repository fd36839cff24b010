"""Read models of calendar events and of their expanded occurrences."""

from __future__ import annotations

from datetime import datetime

from philont.schemas.base import ReadModel


class CalendarEventRecord(ReadModel):
    """One stored calendar event (a one-shot, or a series when ``rrule`` is set).

    ``rrule`` is the normalised RFC 5545 rule; ``timezone`` is the IANA zone the series is
    expanded in (wall-clock times stay put across DST).
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


class Occurrence(ReadModel):
    """One occurrence of an event inside a window (for a one-shot: the event itself)."""

    event: CalendarEventRecord
    starts_at: datetime
    ends_at: datetime | None

"""CalendarService: events and RFC 5545 series, expanded into occurrences over a window."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, and_, delete, func, or_, select
from sqlalchemy.engine import CursorResult

from philont.db.models import CalendarEvent
from philont.domain import recurrence
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.calendar import CalendarEventRecord, Occurrence
from philont.services.base import Service

__all__ = ["DEFAULT_UPCOMING_WINDOW", "CalendarService"]

log = get_logger(__name__)

DEFAULT_UPCOMING_WINDOW = timedelta(days=7)

# Rows Philont wrote may hold '' for "no rule"; it treated that (and any rule it could not parse)
# as a one-shot.
_ONE_SHOT: ColumnElement[bool] = or_(CalendarEvent.rrule.is_(None), CalendarEvent.rrule == "")
_RECURRING: ColumnElement[bool] = and_(CalendarEvent.rrule.is_not(None), CalendarEvent.rrule != "")


def _aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def _record(row: CalendarEvent) -> CalendarEventRecord:
    return CalendarEventRecord.model_validate(row)


class CalendarService(Service):
    """Calendar events: one-shots and recurring series (any RFC 5545 RRULE dateutil supports),
    expanded in their own IANA zone."""

    def create(
        self,
        title: str,
        starts_at: datetime,
        *,
        ends_at: datetime | None = None,
        timezone: str,
        rrule: str | None = None,
        related_fact_id: str | None = None,
        external_ref: str | None = None,
    ) -> CalendarEventRecord:
        """Store an event and return it.

        Everything is validated before anything is written: ``title`` non-blank; ``starts_at``
        and ``ends_at`` timezone-aware (naive datetimes are refused rather than guessed);
        ``ends_at`` not before ``starts_at`` (:class:`~philont.errors.InvalidTimeRangeError`);
        ``timezone`` an IANA zone (canonical spelling stored); ``rrule`` a valid RFC 5545 rule
        (stored normalised; see :func:`philont.domain.recurrence.validate_rrule`).

        ``external_ref`` makes the call idempotent: when an event with that reference exists it
        is **updated in place** (same id and ``created_at``; every other field becomes what this
        call says, so ``None`` clears) instead of a duplicate being added. Re-importing the same
        external calendar therefore converges instead of multiplying events.
        """
        clean_title = inputs.check(inputs.Title, title, "title").strip()
        start = _aware(starts_at, "starts_at")
        end = None if ends_at is None else _aware(ends_at, "ends_at")
        if end is not None and end < start:
            raise InvalidTimeRangeError(start, end, "calendar event")
        zone = recurrence.validate_timezone(timezone)
        rule = None if rrule is None else recurrence.validate_rrule(rrule, start, zone)
        fact_id = inputs.optional(inputs.RecordId, related_fact_id, "related_fact_id")
        ref = inputs.optional(inputs.ExternalRef, external_ref, "external_ref")

        row = None if ref is None else self._by_external_ref(ref)
        if row is None:
            row = CalendarEvent(id=str(uuid.uuid4()), external_ref=ref, created_at=self._now())
            self.session.add(row)
            event = "calendar.created"
        else:
            event = "calendar.updated"
        row.title, row.starts_at, row.ends_at = clean_title, start, end
        row.timezone, row.rrule, row.related_fact_id = zone, rule, fact_id
        self.session.flush()
        log.info(event, id=row.id, external_ref=ref, recurring=rule is not None)
        return _record(row)

    def get(self, id: str) -> CalendarEventRecord | None:
        """The event, or None."""
        row = self.session.get(CalendarEvent, id) if isinstance(id, str) else None
        return None if row is None else _record(row)

    def _by_external_ref(self, ref: str) -> CalendarEvent | None:
        # Philont never prevented duplicates; the oldest one is "the" event.
        stmt = (
            select(CalendarEvent)
            .where(CalendarEvent.external_ref == ref)
            .order_by(CalendarEvent.created_at, CalendarEvent.id)
            .limit(1)
        )
        return self.session.scalars(stmt).first()

    def find_by_external_ref(self, ref: str) -> CalendarEventRecord | None:
        """The (oldest) event carrying this external reference, or None."""
        if not isinstance(ref, str):
            raise InvalidInputError(f"external_ref must be text, got {ref!r}")
        row = self._by_external_ref(ref)
        return None if row is None else _record(row)

    def delete(self, id: str) -> bool:
        """Delete an event (a whole series); True if it existed."""
        if not isinstance(id, str):
            return False
        result = self.session.execute(
            delete(CalendarEvent)
            .where(CalendarEvent.id == id)
            .execution_options(synchronize_session="fetch")
        )
        deleted = isinstance(result, CursorResult) and result.rowcount > 0
        if deleted:
            log.info("calendar.deleted", id=id)
        return deleted

    def count(self) -> int:
        """How many events (series count once) are stored."""
        return int(self.session.scalar(select(func.count()).select_from(CalendarEvent)) or 0)

    def between(
        self,
        start: datetime,
        end: datetime,
        *,
        limit_per_event: int = recurrence.DEFAULT_OCCURRENCE_LIMIT,
    ) -> list[Occurrence]:
        """Every occurrence overlapping ``[start, end]``, sorted by occurrence start.

        An occurrence counts when it starts in the window or is still in progress at ``start``
        (see :func:`philont.domain.recurrence.occurrences`). ``end < start`` raises
        :class:`~philont.errors.InvalidTimeRangeError` (the original returned nothing).

        Stored rules and zones this library cannot read (rows written by the original program)
        do not break the listing: such an event is listed as a one-shot and a warning is logged.
        """
        lo = _aware(start, "start")
        hi = _aware(end, "end")
        if hi < lo:
            raise InvalidTimeRangeError(lo, hi, "calendar window")
        overlapping_one_shot = and_(
            _ONE_SHOT,
            CalendarEvent.starts_at <= hi,
            or_(
                CalendarEvent.starts_at >= lo,
                func.coalesce(CalendarEvent.ends_at, CalendarEvent.starts_at) > lo,
            ),
        )
        recurring = and_(_RECURRING, CalendarEvent.starts_at <= hi)
        stmt = (
            select(CalendarEvent)
            .where(or_(overlapping_one_shot, recurring))
            .order_by(CalendarEvent.starts_at, CalendarEvent.id)
        )
        found: list[Occurrence] = []
        for row in self.session.scalars(stmt):
            record = _record(row)
            for occ_start, occ_end in self._expand(record, lo, hi, limit_per_event):
                found.append(Occurrence(event=record, starts_at=occ_start, ends_at=occ_end))
        found.sort(key=lambda o: (o.starts_at, o.event.starts_at, o.event.id))
        return found

    def _expand(
        self, event: CalendarEventRecord, lo: datetime, hi: datetime, limit: int
    ) -> list[tuple[datetime, datetime | None]]:
        rule = event.rrule or None
        try:
            return recurrence.occurrences(
                event.starts_at, event.ends_at, rule, event.timezone, lo, hi, limit=limit
            )
        except InvalidInputError as exc:
            if rule is None and event.timezone == "UTC":
                raise
            log.warning(
                "calendar.unreadable_event",
                id=event.id,
                rrule=rule,
                timezone=event.timezone,
                reason=str(exc),
            )
            end = (
                event.ends_at if event.ends_at is None or event.ends_at >= event.starts_at else None
            )
            return recurrence.occurrences(event.starts_at, end, None, "UTC", lo, hi, limit=limit)

    def upcoming(
        self, window: timedelta = DEFAULT_UPCOMING_WINDOW, now: datetime | None = None
    ) -> list[Occurrence]:
        """``between(now, now + window)``; ``now`` defaults to the clock."""
        if not isinstance(window, timedelta) or window < timedelta(0):
            raise InvalidInputError(f"window must be a non-negative timedelta, got {window!r}")
        start = self._now() if now is None else _aware(now, "now")
        try:
            end = start + window
        except OverflowError:
            end = datetime.max.replace(tzinfo=UTC)
        return self.between(start, end)

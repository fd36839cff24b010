"""CalendarService: events and RFC 5545 series, expanded into occurrences over a window."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

from sqlalchemy import ColumnElement, and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import CursorResult

from philont.db.models import CalendarEvent
from philont.db.ordering import code_points
from philont.domain import series, timeparse, timepolicy
from philont.domain.rrule_engine import Work, WorkLimitExceeded
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.finds import finds
from philont.log import get_logger
from philont.schemas import inputs, planning
from philont.schemas.calendar import (
    CalendarEventRecord,
    CalendarEvents,
    CalendarListing,
    SkippedRow,
)
from philont.services import _rows
from philont.services._calendar_listing import Listing
from philont.services._calendar_rows import checked, decode, optional_pursuit
from philont.services._rows import row_id
from philont.services.base import Service

__all__ = [
    "DEFAULT_LISTING_LIMIT",
    "DEFAULT_UPCOMING_WINDOW",
    "LISTING_COUNT_LIMIT",
    "LISTING_WORK_LIMIT",
    "MAX_LISTING_LIMIT",
    "CalendarService",
]

log = get_logger(__name__)

DEFAULT_UPCOMING_WINDOW: Final = timedelta(days=7)
DEFAULT_LISTING_LIMIT: Final = 200
MAX_LISTING_LIMIT: Final = series.MAX_LISTING_LIMIT
LISTING_WORK_LIMIT: Final = 200_000
"""Steps one listing may spend expanding series (each event at most ``EVENT_WORK_LIMIT``)."""
LISTING_COUNT_LIMIT: Final = 10_000
"""Occurrences one listing counts beyond those it returns; past that, totals are lower bounds."""

_TABLE = CalendarEvent.__table__

# Rows Philont wrote may hold '' for "no rule"; it treated that (and any rule it could not parse)
# as a one-shot.
_ONE_SHOT: ColumnElement[bool] = or_(CalendarEvent.rrule.is_(None), CalendarEvent.rrule == "")
_RECURRING: ColumnElement[bool] = and_(CalendarEvent.rrule.is_not(None), CalendarEvent.rrule != "")


def _aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def _wall_in(value: datetime, zone: str) -> datetime | None:
    """The naive local time an aware ``value`` was given as, when it was given in ``zone``
    itself (its ``ZoneInfo``, first pass; a skipped time with either fold): a time the zone
    skips keeps the wall time that was meant (see
    :func:`philont.domain.series.keep_skipped_time`). None otherwise."""
    value = timepolicy.forward_in_gap(value)  # a skipped time is meant forward, whatever its fold
    given = value.tzinfo
    if not isinstance(given, ZoneInfo) or value.fold or given.key is None:
        return None
    try:
        same = timepolicy.validate_timezone(given.key) == zone
    except InvalidInputError:
        return None
    return value.replace(tzinfo=None) if same else None


def _day(value: object, name: str) -> date:
    if isinstance(value, datetime) or not isinstance(value, date):
        raise InvalidInputError.of(
            name, f"must be a date (datetime.date, a day without a time), got {value!r}"
        )
    return value


class CalendarService(Service):
    """Calendar events: one-shots and recurring series (any RFC 5545 RRULE), expanded in their
    own IANA zone with bounded work."""

    # --- writing --------------------------------------------------------------------------------

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
        and ``ends_at`` timezone-aware and inside the supported times (naive datetimes are
        refused rather than guessed); ``ends_at`` not before ``starts_at``
        (:class:`~philont.errors.InvalidTimeRangeError`); ``timezone`` an IANA zone (canonical
        spelling stored); ``rrule`` a valid RFC 5545 rule that can be listed within the work
        limit (stored normalised). A series given a start its zone skips, as a ``ZoneInfo``
        time of ``timezone`` (daily at 02:30 from the Berlin spring day), starts where that
        time lands and keeps the time of day given on its other days: the rule gets it as
        ``BYHOUR`` (``BYMINUTE``, ``BYSECOND``) where the start alone would lose it. The
        expensive part is :func:`philont.domain.series.check_event` (pure, cached): callers
        can run it before their write transaction begins, and this call then finds it done.

        ``external_ref`` makes the call idempotent: when an event with that reference exists it
        is **updated in place** (same id and ``created_at``; every other field becomes what this
        call says, so ``None`` clears) instead of a duplicate being added.
        """
        clean_title = inputs.check(planning.Title, title, "title").strip()
        start = _aware(starts_at, "starts_at")
        end = None if ends_at is None else _aware(ends_at, "ends_at")
        zone = timepolicy.validate_timezone(timezone)
        if series.all_day_dates(start, end, zone) is None:
            rrule = series.keep_skipped_time(rrule, _wall_in(starts_at, zone), zone)
        checked = series.check_event(start, end, timezone, rrule)
        fact_id = inputs.optional(inputs.RecordId, related_fact_id, "related_fact_id")
        ref = inputs.optional(planning.ExternalRef, external_ref, "external_ref")
        values: dict[str, Any] = {
            "title": clean_title,
            "starts_at": start,
            "ends_at": end,
            "timezone": zone,
            "rrule": checked.rrule,
            "related_fact_id": fact_id,
        }
        event_id, created, pursuit, event = self._store(values, ref)
        all_day = series.all_day_dates(start, end, zone) is not None
        log.info(
            event,
            id=event_id,
            external_ref=ref,
            recurring=checked.rrule is not None,
            all_day=all_day,
        )
        return CalendarEventRecord(
            id=event_id,
            external_ref=ref,
            created_at=created,
            root_pursuit_id=pursuit,
            all_day=all_day,
            **values,
        )

    def create_all_day(
        self,
        title: str,
        first_day: date,
        *,
        last_day: date | None = None,
        timezone: str,
        rrule: str | None = None,
        related_fact_id: str | None = None,
        external_ref: str | None = None,
    ) -> CalendarEventRecord:
        """Store an all-day event from ``first_day`` to ``last_day`` (inclusive; default the one
        day) of the zone ``timezone``, and return it (``all_day`` true).

        Philont's columns hold it as :meth:`create` would hold the same whole days: ``starts_at``
        the first instant of ``first_day`` in the zone (its midnight), ``ends_at`` the first
        instant of the day after ``last_day`` (iCalendar's exclusive end). Listings show its
        days (``Occurrence.first_day``/``last_day``) and keep it while any of its days remains,
        so it is listed all day long, never on the day before. ``rrule`` repeats it by days
        (FREQ DAILY or longer, no BYHOUR/BYMINUTE/BYSECOND). Days are ``datetime.date``; a
        ``datetime`` is refused (which day would it be?). Everything else as :meth:`create`.
        """
        first = _day(first_day, "first_day")
        last = None if last_day is None else _day(last_day, "last_day")
        zone = timepolicy.validate_timezone(timezone)
        start, end = timeparse.all_day_span(first, last, zone)
        return self.create(
            title,
            start,
            ends_at=end,
            timezone=zone,
            rrule=rrule,
            related_fact_id=related_fact_id,
            external_ref=external_ref,
        )

    def _store(
        self, values: dict[str, Any], ref: str | None
    ) -> tuple[str, datetime, str | None, str]:
        """Insert, or update the event with this external reference (even one whose stored
        values cannot be read: it is overwritten). Returns (id, created_at, root_pursuit_id,
        log event). The only writer of ``ref`` until the transaction ends: two read committed
        transactions each found none and each inserted one (PostgreSQL)."""
        if ref is not None:
            self.mem.backend.serialize(self.session, "calendar", ref)
        existing = None if ref is None else self._by_external_ref(ref)
        if existing is None:
            event_id, created = str(uuid.uuid4()), self._now()
            self.session.execute(
                insert(CalendarEvent).values(
                    id=event_id, external_ref=ref, created_at=created, **values
                )
            )
            self.session.flush()
            return event_id, created, None, "calendar.created"
        event_id = str(existing["id"])
        try:
            created = timepolicy.stored_instant(existing["created_at"], "created_at")
        except InvalidInputError:
            created = self._now()  # repair an unreadable stored creation time
            values["created_at"] = created
        self.session.execute(
            update(CalendarEvent)
            .where(CalendarEvent.id == event_id)
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        self.session.flush()
        values.pop("created_at", None)
        return event_id, created, optional_pursuit(existing), "calendar.updated"

    @finds("id")
    def delete(self, id: str) -> bool:
        """Delete an event (a whole series), readable or not; True if it existed."""
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

    # --- reading one ----------------------------------------------------------------------------

    def _raw(self, *where: ColumnElement[bool], limit: int | None = None) -> list[_rows.Row]:
        """Rows by start, then title (code point order), then id: the order of listings."""
        title = code_points(CalendarEvent.title)
        stmt = (
            select(*_rows.raw_columns(_TABLE))
            .where(*where)
            .order_by(CalendarEvent.starts_at, title, CalendarEvent.id)
            .limit(limit)
        )
        return [row._mapping for row in self.session.execute(stmt)]

    @finds("id")
    def get(self, id: str) -> CalendarEventRecord | None:
        """The event, or None; :class:`~philont.errors.UnreadableRowError` for a stored row
        whose values cannot be read (remove it with :meth:`delete`)."""
        if not isinstance(id, str):
            return None
        rows = self._raw(CalendarEvent.id == id, limit=1)
        return None if not rows else checked(rows[0])

    def _by_external_ref(self, ref: str) -> _rows.Row | None:
        # Philont never prevented duplicates; the oldest one is "the" event.
        stmt = (
            select(*_rows.raw_columns(_TABLE))
            .where(CalendarEvent.external_ref == ref)
            .order_by(CalendarEvent.created_at, CalendarEvent.id)
            .limit(1)
        )
        row = self.session.execute(stmt).first()
        return None if row is None else row._mapping

    @finds("ref")
    def find_by_external_ref(self, ref: str) -> CalendarEventRecord | None:
        """The (oldest) event carrying this external reference, or None."""
        if not isinstance(ref, str):
            raise InvalidInputError.of("ref", f"must be text, got {ref!r}")
        row = self._by_external_ref(ref)
        return None if row is None else checked(row)

    def count(self) -> int:
        """How many events (series count once) are stored."""
        return int(self.session.scalar(select(func.count()).select_from(CalendarEvent)) or 0)

    def list(self, *, limit: int = DEFAULT_LISTING_LIMIT) -> CalendarEvents:
        """The stored events by start, at most ``limit`` rows (and ``MAX_LISTING_LIMIT``);
        unreadable rows are reported in ``skipped`` (with their id, so they can be removed),
        never raised."""
        lim = min(limit, MAX_LISTING_LIMIT)
        events, skipped = [], []
        for row in self._raw(limit=lim):
            try:
                events.append(decode(row))
            except InvalidInputError as exc:
                skipped.append(SkippedRow(id=row_id(row), reason=str(exc)))
        return CalendarEvents(events=events, skipped=skipped, total=self.count())

    # --- windows --------------------------------------------------------------------------------

    def between(
        self,
        start: datetime,
        end: datetime,
        *,
        limit: int = DEFAULT_LISTING_LIMIT,
        per_series: int | None = None,
    ) -> CalendarListing:
        """The earliest ``limit`` occurrences overlapping ``[start, end]`` and how many there are;
        ordered by start, then title (code point order, on every backend), then event id.
        ``per_series``: at most that many occurrences of one recurring event (the earliest),
        so that one frequent series cannot hide every other event; the series cut short are
        named in ``capped_series``.

        An occurrence counts when it starts in the window or is still in progress at ``start``
        (see :func:`philont.domain.series.expand`). ``end < start`` raises
        :class:`~philont.errors.InvalidTimeRangeError` (the original returned nothing).

        Bounded: one-shots are limited in SQL; each series is entered at the window and costs
        at most ``EVENT_WORK_LIMIT`` steps, the whole listing at most ``LISTING_WORK_LIMIT``;
        counting stops at ``LISTING_COUNT_LIMIT``. One stored row never breaks the listing:
        unreadable values, or a series needing more work than allowed, are skipped and counted;
        an unreadable rule or zone lists the event as a one-shot, as the original program did.
        """
        lo, hi = _aware(start, "start"), _aware(end, "end")
        if hi < lo:
            raise InvalidTimeRangeError(lo, hi, names=("start", "end"), what="calendar window")
        if per_series is not None:
            inputs.check(inputs.Limit, per_series, "per_series")
        listing = Listing(min(limit, MAX_LISTING_LIMIT), per_series)
        self._one_shots(listing, lo, hi)
        self._series(listing, lo, hi)
        return listing.result()

    def _one_shots(self, listing: Listing, lo: datetime, hi: datetime) -> None:
        overlapping = and_(
            _ONE_SHOT,
            CalendarEvent.starts_at <= hi,
            or_(
                CalendarEvent.starts_at >= lo,
                func.coalesce(CalendarEvent.ends_at, CalendarEvent.starts_at) > lo,
            ),
        )
        total = self.session.scalar(select(func.count()).select_from(_TABLE).where(overlapping))
        listing.total += int(total or 0)
        for row in self._raw(overlapping, limit=listing.limit):
            listing.rows += 1
            try:
                record = decode(row)
            except InvalidInputError as exc:
                listing.total -= 1
                listing.skip(row_id(row), str(exc))
                continue
            end = record.ends_at if record.ends_at and record.ends_at >= record.starts_at else None
            listing.add(record, ((record.starts_at, end),))

    def _series(self, listing: Listing, lo: datetime, hi: datetime) -> None:
        recurring = and_(_RECURRING, CalendarEvent.starts_at <= hi)
        stmt = (
            select(*_rows.raw_columns(_TABLE))
            .where(recurring)
            .order_by(CalendarEvent.starts_at, CalendarEvent.id)
            .execution_options(yield_per=200)
        )
        examined = 0
        for row in self.session.execute(stmt).mappings():
            left = LISTING_WORK_LIMIT - listing.steps
            if left <= 0:
                waiting = select(func.count()).select_from(_TABLE).where(recurring)
                unread = max(int(self.session.scalar(waiting) or 0) - examined, 0)
                listing.skipped_count += unread
                listing.exact = False
                log.warning("calendar.listing_work_limit", unexpanded=unread)
                return
            examined += 1
            listing.rows += 1
            try:
                record = decode(row)
            except InvalidInputError as exc:
                listing.skip(row_id(row), str(exc))
                continue
            self._expand_into(listing, record, lo, hi, min(series.EVENT_WORK_LIMIT, left))

    def _expand_into(
        self, listing: Listing, event: CalendarEventRecord, lo: datetime, hi: datetime, steps: int
    ) -> None:
        work = Work(steps)
        counted = max(LISTING_COUNT_LIMIT - listing.total, 0)
        try:
            try:
                found = series.expand(
                    event.starts_at,
                    event.ends_at,
                    event.rrule,
                    event.timezone,
                    lo,
                    hi,
                    limit=min(listing.limit, listing.per_series or MAX_LISTING_LIMIT),
                    count_limit=counted,
                    keep_until=listing.cutoff(),
                    work=work,
                )
            except InvalidInputError as exc:
                # Philont lists what it cannot expand as a one-shot (spec 13.1); so do we.
                log.warning("calendar.unreadable_event", id=event.id, reason=str(exc))
                listing.degraded += 1
                end = event.ends_at if event.ends_at and event.ends_at >= event.starts_at else None
                found = series.expand(event.starts_at, end, None, "UTC", lo, hi, work=work)
        except WorkLimitExceeded:
            listing.exact = False
            listing.skip(event.id, f"its series needs more than {steps} steps to expand")
            return
        finally:
            listing.steps += work.steps
        listing.total += found.total
        listing.exact = listing.exact and found.exact
        cap = listing.per_series
        if cap is not None and (
            found.total > cap or (not found.exact and len(found.items) >= cap)  # counting ran out
        ):
            listing.capped[event.id] = max(found.total, len(found.items))
        listing.add(event, found.items)

    def upcoming(
        self,
        window: timedelta = DEFAULT_UPCOMING_WINDOW,
        now: datetime | None = None,
        *,
        limit: int = DEFAULT_LISTING_LIMIT,
    ) -> CalendarListing:
        """``between(now, now + window)``; ``now`` defaults to the clock."""
        if not isinstance(window, timedelta) or window < timedelta(0):
            raise InvalidInputError.of(
                "window", f"must be a non-negative timedelta, got {window!r}"
            )
        start = self._now() if now is None else _aware(now, "now")
        return self.between(start, timepolicy.clamp(start, window), limit=limit)

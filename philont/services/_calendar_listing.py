"""What a calendar listing gathers while it reads rows and expands series: the earliest
occurrences, the counts, the rows it skipped and the work it spent."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime

from philont.domain import series
from philont.log import get_logger
from philont.schemas.calendar import CalendarEventRecord, CalendarListing, Occurrence, SkippedRow
from philont.services import _rows

__all__ = ["Listing"]

log = get_logger("philont.services.calendar")  # its events are the calendar service's


@dataclass
class Listing:
    """What a listing gathers: the earliest ``limit`` occurrences and the counts."""

    limit: int
    per_series: int | None = None
    kept: list[tuple[tuple[datetime, str, str], Occurrence]] = field(default_factory=list)
    capped: dict[str, int] = field(default_factory=dict)
    total: int = 0
    exact: bool = True
    skipped: list[SkippedRow] = field(default_factory=list)
    skipped_count: int = 0
    degraded: int = 0
    rows: int = 0
    steps: int = 0

    def add(
        self, event: CalendarEventRecord, items: tuple[tuple[datetime, datetime | None], ...]
    ) -> None:
        for start, end in items:
            key = (start, event.title, event.id)  # a tie on time: by title, then id
            if len(self.kept) >= self.limit and key >= self.kept[-1][0]:
                continue
            days = series.all_day_dates(start, end, event.timezone) if event.all_day else None
            first, last = days or (None, None)
            occ = Occurrence(
                event=event, starts_at=start, ends_at=end, first_day=first, last_day=last
            )
            bisect.insort(self.kept, (key, occ), key=lambda pair: pair[0])
            if len(self.kept) > self.limit:
                self.kept.pop()

    def cutoff(self) -> datetime | None:
        """Occurrences starting after this cannot be shown any more (only counted)."""
        return self.kept[-1][0][0] if len(self.kept) >= self.limit else None

    def skip(self, row_id: str | None, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < _rows.SKIPPED_SHOWN:
            self.skipped.append(SkippedRow(id=row_id, reason=reason))
        log.warning("calendar.skipped_row", id=row_id, reason=reason)

    def result(self) -> CalendarListing:
        shown = [occ for _, occ in self.kept]
        total = max(self.total, len(shown))
        return CalendarListing(
            occurrences=shown,
            total=total,
            more=total - len(shown),
            total_is_exact=self.exact,
            skipped_bad_rows=self.skipped_count,
            skipped=self.skipped,
            degraded_rows=self.degraded,
            rows_read=self.rows,
            work_steps=self.steps,
            capped_series=self.capped,
        )

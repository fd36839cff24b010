"""Facts in time: what held at a valid time as believed at a transaction time, and the
occurrences of events."""

from __future__ import annotations

import builtins
from datetime import datetime

from sqlalchemy import ColumnElement, func, select

from philont.db.models import Fact
from philont.db.ordering import code_points
from philont.db.types import to_epoch_ms
from philont.domain.facts import latest_held, link_depths
from philont.domain.kinds import FactKind
from philont.errors import (
    InvalidTimeRangeError,
)
from philont.finds import finds
from philont.schemas import inputs
from philont.schemas.facts import FactRecord
from philont.services.base import Service
from philont.services.fact_base import (
    aware,
    held_address,
    namespace_filter,
    optional_aware,
    rank_row,
    to_record,
)


class FactTime(Service):
    """The time-travel methods of :class:`~philont.services.facts.FactService`."""

    # --- time ---------------------------------------------------------------------------

    @finds(namespace=inputs.NamespaceLookup, key=inputs.FactKeyLookup)
    def as_of(
        self,
        namespace: str,
        key: str,
        at: datetime,
        *,
        believed_at: datetime | None = None,
    ) -> FactRecord | None:
        """The version of ``namespace.key`` that held at valid time ``at``, as we believed it at
        transaction time ``believed_at`` (default: now). Bitemporal semantics:

        * Transaction time: only versions recorded by then (``created_at <= believed_at``)
          count, so a correction stored later is invisible to an earlier ``believed_at``.
        * Valid time: a state counts if ``valid_from <= at <= valid_until`` (a missing bound is
          open); an event counts if it had occurred by then (``occurred_at <= at``, or
          ``created_at`` for legacy events without one), its window ignored.
        * Supersession does not hide a version: a later version overrides an earlier one only
          where their valid windows overlap. So "Paris 2020-2023" then "Berlin from 2024"
          still answers Paris for 2022.
        * Among the candidates the latest belief wins: states by newest ``created_at``; events
          by latest occurrence, then newest ``created_at`` (a correction of the same
          occurrence); of versions stored in one millisecond, the one stored later (its place
          in the key's supersession chain; the random id only where no link says). A version
          forgotten by ``believed_at`` never answers; one forgotten later still does (it was
          believed then, as ``list(as_of=...)`` shows it).

        No access refresh and no access-log row (this is an audit query).
        """
        cond = held_address(self.session, namespace, key)
        when = aware(at, "at")
        believed = self._now() if believed_at is None else aware(believed_at, "believed_at")
        row = self._held(cond, when, believed)
        return None if row is None else to_record(row)

    def _held(self, cond: ColumnElement[bool], at: datetime, believed: datetime) -> Fact | None:
        """:meth:`as_of` of the key ``cond`` selects, as its row."""
        versions = builtins.list(self.session.scalars(select(Fact).where(cond)))
        depths = link_depths((v.id, v.superseded_by) for v in versions)  # every version's links
        at_ms = to_epoch_ms(at)
        return latest_held(
            (rank_row(row, at_ms, depths[row.id]), row)
            for row in versions
            if row.created_at <= believed
            and (row.forgotten_at is None or row.forgotten_at > believed)
        )

    @finds(namespace=inputs.NamespaceSelector)
    def events(
        self,
        namespace: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        prefix: bool = True,
    ) -> builtins.list[FactRecord]:
        """Event facts ordered by when they occurred (then when recorded), bounds inclusive.

        Unlike ``list``, superseded versions are included: re-storing an event under the same
        key ("lunch") is a new occurrence, not a replacement, so no occurrence is lost (the
        original only ever showed the latest one, Q-S3). Forgotten versions are left out. The
        versions of one key's occurrence (same ``occurred_at``) are that occurrence's
        corrections: the newest recorded that is not forgotten is listed, the one
        :meth:`as_of` answers at that time (forgetting a correction brings back what it
        corrected; it hid both). ``namespace`` (default all) matches as a prefix unless
        ``prefix=False``.
        """
        cond = namespace_filter(self.session, namespace, prefix=prefix)
        start = optional_aware(since, "since")
        end = optional_aware(until, "until")
        if start is not None and end is not None and end < start:
            raise InvalidTimeRangeError(start, end, names=("since", "until"), what="events window")
        occurred = func.coalesce(Fact.occurred_at, Fact.created_at)
        stmt = (
            select(Fact)
            .where(Fact.fact_kind == FactKind.EVENT, Fact.forgotten_at.is_(None))
            .order_by(
                occurred,
                Fact.created_at,
                code_points(Fact.namespace),
                code_points(Fact.key),
                code_points(Fact.id),
            )
        )
        if cond is not None:
            stmt = stmt.where(cond)
        if start is not None:
            stmt = stmt.where(occurred >= start)
        if end is not None:
            stmt = stmt.where(occurred <= end)
        rows = builtins.list(self.session.scalars(stmt))
        depths = self._tie_depths(rows)
        # an occurrence's answer: its newest version by held_rank's order (recorded, then its
        # place in the key's chain, then id)
        newest: dict[tuple[str, str, datetime], tuple[datetime, int, str]] = {}
        for r in rows:
            occurrence = (r.namespace, r.key, r.occurred_at or r.created_at)
            rank = (r.created_at, depths.get(r.id, 0), r.id)
            newest[occurrence] = max(newest.get(occurrence, rank), rank)
        return [
            to_record(r)
            for r in rows
            if newest[(r.namespace, r.key, r.occurred_at or r.created_at)]
            == (r.created_at, depths.get(r.id, 0), r.id)
        ]

    def _tie_depths(self, rows: builtins.list[Fact]) -> dict[str, int]:
        """:func:`~philont.domain.facts.link_depths` over every version of each key two of
        whose ``rows`` of one occurrence were recorded in the same millisecond (read only
        then: the chain may run through versions ``rows`` leave out)."""
        seen: set[tuple[str, str, datetime, datetime]] = set()
        tied: set[tuple[str, str]] = set()
        for r in rows:
            stamp = (r.namespace, r.key, r.occurred_at or r.created_at, r.created_at)
            if stamp in seen:
                tied.add((r.namespace, r.key))
            seen.add(stamp)
        depths: dict[str, int] = {}
        for namespace, key in sorted(tied):
            links = self.session.execute(
                select(Fact.id, Fact.superseded_by).where(
                    Fact.namespace == namespace, Fact.key == key
                )
            )
            depths.update(link_depths((vid, successor) for vid, successor in links))
        return depths

"""FactService: versioned namespaced facts with supersession, decay, forgetting and time travel."""

from __future__ import annotations

import builtins
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, or_, select

from philont.db.models import Fact
from philont.db.ordering import code_points
from philont.db.types import to_epoch_ms
from philont.domain import decay
from philont.domain.kinds import AccessTarget, FactKind
from philont.domain.names import NEAR_CANDIDATES, near
from philont.errors import (
    InvalidTimeRangeError,
)
from philont.finds import finds
from philont.schemas import inputs
from philont.schemas.facts import FactRecord
from philont.services.fact_base import (
    CURRENT,
    FACT_COLUMNS,
    LIGHT,
    SCORE_COLUMNS,
    FactIdNotFoundError,
    aware,
    current_as_of,
    held_address,
    holding,
    log,
    namespace_filter,
    newest_first,
    optional_aware,
    score_record,
    scores_raw,
    to_record,
    valid_row,
    versions_held,
)
from philont.services.fact_time import FactTime

__all__ = [
    "FactIdNotFoundError",
    "FactService",
]


def _no_fact(_service: Any, fact_id: str, **_: Any) -> Any:
    """A fact id no version can have (:func:`~philont.finds.finds`): not found."""
    raise FactIdNotFoundError(fact_id)


def _no_fact_tau(_service: Any, fact_id: str, days: float | None, **_: Any) -> Any:
    """``set_tau`` of a fact id no version can have: ``days`` checked first, as the method does."""
    if days is not None:
        decay.validate_tau_override(days, "days")
    raise FactIdNotFoundError(fact_id)


def _no_candidates(_service: Any, threshold: Any, namespace: str, **_: Any) -> Any:
    """``forget_candidates`` of a namespace no fact can have: its arguments checked as the
    method checks them, then none."""
    inputs.check(inputs.Threshold, threshold, "threshold")
    inputs.check(inputs.NamespaceSelector, namespace, "namespace")
    return []


class FactService(FactTime):
    """Facts: (namespace, key) -> JSON value, one row per version.

    Invariant kept by every write here: at most one *current* version (not superseded, not
    forgotten) per (namespace, key), under concurrency too (``Backend.serialize``: on
    PostgreSQL two read committed writers of one key would both see "no current version").
    Legacy databases may break it (Q-S1); reads then pick the newest deterministically and the
    next ``store`` repairs it.
    """

    # --- writing ------------------------------------------------------------------------

    def store(
        self,
        namespace: str,
        key: str,
        value: Any,
        *,
        confidence: float = 1.0,
        fact_kind: FactKind | str = FactKind.STATE,
        occurred_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        decay_tau_days: float | None = None,
    ) -> FactRecord:
        """Store a new version of ``namespace.key`` and return it.

        Every argument is validated before anything is written; bad input raises
        :class:`~philont.errors.InvalidInputError` (or its subclasses
        :class:`~philont.errors.ReservedNamespaceError` for ``self``/``self.*`` and
        :class:`~philont.errors.InvalidTimeRangeError` for ``valid_until < valid_from``).
        Datetimes must be timezone-aware; they are stored in UTC at millisecond precision.

        An event without ``occurred_at`` is taken to have occurred now (the moment it is
        told). The validity window is kept for events but ignored by time queries.

        Every current version of the key (legacy data may hold several) is superseded by the
        new row in the same flush; the new row's ``supersedes`` names the newest of them.
        Forgotten versions are left alone: they stay forgotten and unlinked, so a forgotten
        fact is never resurrected into the chain by a later write.

        Without ``decay_tau_days`` the new version keeps the key's decay setting: the current
        version's pin or τ override (Philont's new row had none, so a value the agent
        re-stored lost the pin a person had set and could decay into a forget candidate).
        ``unpin`` (or ``set_tau``) the new version to change it.
        """
        namespace = inputs.check(inputs.Namespace, namespace, "namespace")
        key = inputs.check(inputs.FactKey, key, "key")
        value = inputs.check(inputs.FactValue, value, "value")
        confidence = inputs.check(inputs.Confidence, confidence, "confidence")
        kind = inputs.check(inputs.FactKindName, fact_kind, "fact_kind")
        occurred = optional_aware(occurred_at, "occurred_at")
        start = optional_aware(valid_from, "valid_from")
        end = optional_aware(valid_until, "valid_until")
        if start is not None and end is not None and end < start:
            raise InvalidTimeRangeError(
                start, end, names=("valid_from", "valid_until"), what="validity"
            )
        tau = None if decay_tau_days is None else decay.validate_tau_override(decay_tau_days)
        now = self._now()
        if kind is FactKind.EVENT and occurred is None:
            occurred = now
        return self._write(
            namespace,
            key,
            value,
            confidence=confidence,
            fact_kind=kind,
            occurred_at=occurred,
            valid_from=start,
            valid_until=end,
            decay_tau_days=tau,
            now=now,
        )

    def _write(
        self,
        namespace: str,
        key: str,
        value: Any,
        *,
        confidence: float,
        fact_kind: FactKind,
        occurred_at: datetime | None,
        valid_from: datetime | None,
        valid_until: datetime | None,
        decay_tau_days: float | None,
        now: datetime,
    ) -> FactRecord:
        """Insert an already validated version and supersede the current ones (``decay_tau_days``
        None: the newest current version's setting, by :func:`~philont.domain.decay.inherited_tau`;
        no checks:
        a future kernel path for ``self`` facts calls this after its own authorisation)."""
        self.mem.backend.serialize(self.session, "fact", namespace, key)
        current = newest_first(
            self.session.scalars(
                select(Fact).where(Fact.namespace == namespace, Fact.key == key, CURRENT)
            )
        )
        row = Fact(
            id=str(uuid.uuid4()),
            namespace=namespace,
            key=key,
            value=value,
            confidence=confidence,
            fact_kind=fact_kind,
            created_at=now,
            occurred_at=occurred_at,
            valid_from=valid_from,
            valid_until=valid_until,
            # deliberately equal to created_at: a new fact counts as just touched
            last_accessed_at=now,
            decay_tau_days=decay_tau_days,
            supersedes=current[0].id if current else None,
        )
        if decay_tau_days is None and current:
            row.decay_tau_days = decay.inherited_tau(current[0].decay_tau_days)
        self.session.add(row)
        for old in current:
            old.superseded_by = row.id
        self.session.flush()
        for old in current:
            log.info("fact.superseded", namespace=namespace, key=key, old_id=old.id, new_id=row.id)
        log.info("fact.stored", namespace=namespace, key=key, id=row.id, kind=fact_kind.value)
        return to_record(row)

    # --- reading ------------------------------------------------------------------------

    @finds(namespace=inputs.NamespaceLookup, key=inputs.FactKeyLookup)
    def get(self, namespace: str, key: str, *, include_expired: bool = True) -> FactRecord | None:
        """What ``namespace.key`` holds now: its current version, or ``None``.

        When the current version is a state that does not hold now (expired, or not yet in
        force) but an older version does, that one answers, as :meth:`as_of` at now would
        (storing a past state supersedes an open one, which still holds). When none does, the
        current version answers (the original's behaviour, Q-S2), or with
        ``include_expired=False`` none: a miss.

        A hit refreshes ``last_accessed_at`` and writes one access-log row (the original did
        neither log, Q-D4; a read-only Store does neither). A miss writes nothing. On
        PostgreSQL it takes the key's lock (``Backend.serialize``) first, like a store: it
        waits for a concurrent writer of the key to end.
        """
        # the key's lock before its row's (Backend.serialize's order): a host's get, which
        # locks the row it refreshes, and then store of the key deadlocked with a tool's store
        self.mem.backend.serialize(self.session, "fact", namespace, key)
        cond = held_address(self.session, namespace, key)
        rows = newest_first(self.session.scalars(select(Fact).where(cond, CURRENT)))
        if not rows:
            return None
        row = rows[0]
        now = self._now()
        if not valid_row(row, to_epoch_ms(now)):
            held = self._held(cond, now, now)
            if held is not None:
                row = held
            elif not include_expired:
                return None
        self.mem.access.refresh(AccessTarget.FACT, row.id, context=f"get {namespace}.{key}")
        return to_record(row)

    def names_near(self, namespace: str, key: str) -> builtins.list[str]:
        """Up to three current facts (``namespace.key``) that ``namespace.key``, which names
        none, may have meant: for a refusal to name (:class:`~philont.errors.FactNotFoundError`'s
        ``near``)."""
        rows = self.session.execute(
            select(Fact.namespace, Fact.key).where(CURRENT).limit(NEAR_CANDIDATES)
        )
        return near(f"{namespace}.{key}", (f"{ns}.{k}" for ns, k in rows))

    @finds("fact_id")
    def get_by_id(self, fact_id: str, include_forgotten: bool = False) -> FactRecord | None:
        """Any version by id (superseded ones too); forgotten ones only when asked. No access
        refresh."""
        row = self.session.get(Fact, fact_id)
        if row is None or (row.forgotten_at is not None and not include_forgotten):
            return None
        return to_record(row)

    @finds(namespace=inputs.NamespaceSelector)
    def list(
        self,
        namespace: str | None = None,
        *,
        prefix: bool = False,
        ranked: bool = False,
        now: datetime | None = None,
        include_expired: bool = False,
        as_of: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[FactRecord]:
        """Current facts of a namespace that hold at ``now``, without refreshing access.

        ``namespace`` is matched exactly, or with ``prefix=True`` (or the pattern form
        ``'user.*'``) as ``user`` plus every ``user.<child>`` — never ``username``. ``None`` or
        ``'*'`` lists every namespace. Ordered by namespace and key, or with ``ranked=True`` by
        decay score at ``now``, highest first, with ``score`` filled in. By default only what
        holds at ``now`` (default: the clock) is listed, a key's version as :meth:`as_of` at
        ``now`` answers it: the current version when it is an event or a state inside its
        validity window; else the version of the key that holds then (storing a past state
        supersedes an open one, which still holds now), or nothing. ``include_expired=True``
        lists every current version, in its window or not. ``as_of`` lists the versions
        current as we believed them then (recorded by then, not yet superseded or forgotten
        then), held at ``as_of`` unless ``now`` says otherwise, by the same rule as believed
        then. ``offset`` skips the first N after ordering, ``limit`` keeps the next N.
        """
        offset = inputs.check(inputs.Offset, offset, "offset")
        cond = namespace_filter(self.session, namespace, prefix=prefix)
        at, light = self._light(cond, now, include_expired, as_of)
        at_ms = to_epoch_ms(at)
        chosen: builtins.list[tuple[float | None, str]] = [(None, r.id) for r in light]
        if ranked:
            scored = list(zip(scores_raw(light, at_ms), (r.id for r in light), strict=True))
            # sorted() is stable: equal scores keep the (namespace, key) order
            scored.sort(key=lambda pair: -pair[0])
            chosen = [(score, i) for score, i in scored]
        chosen = chosen[offset:][:limit]
        full = {
            r.id: r
            for r in self.session.execute(
                select(*FACT_COLUMNS).where(Fact.id.in_([i for _, i in chosen]))
            )
        }
        # an id stored as text that is not UTF-8 reads with U+FFFD and finds no row again
        return [to_record(full[i], score=score) for score, i in chosen if i in full]

    def count(
        self,
        *,
        now: datetime | None = None,
        include_expired: bool = False,
        as_of: datetime | None = None,
    ) -> int:
        """How many facts :meth:`list` would list for every namespace."""
        return len(self._light(None, now, include_expired, as_of)[1])

    def _light(
        self,
        cond: ColumnElement[bool] | None,
        now: datetime | None,
        include_expired: bool,
        as_of: datetime | None,
    ) -> tuple[datetime, builtins.list[Any]]:
        """The time :meth:`list` lists at, and what it lists as raw stored values
        (``SCORE_COLUMNS`` and the key), by namespace, key and age."""
        believed = optional_aware(as_of, "as_of")
        at = aware(now, "now") if now is not None else believed or self._now()
        stmt = current_as_of(select(*SCORE_COLUMNS, Fact.key).select_from(Fact), believed)
        if cond is not None:
            stmt = stmt.where(cond)
        rows = builtins.list(
            self.session.execute(
                stmt.order_by(code_points(Fact.namespace), code_points(Fact.key), Fact.created_at)
            )
        )
        if include_expired:
            return at, rows
        recorded_by = believed or self._now()
        return at, holding(
            rows,
            to_epoch_ms(at),
            lambda: versions_held(
                self.session, LIGHT, at=at, recorded_by=recorded_by, believed=believed, cond=cond
            ),
        )

    @finds(namespace=inputs.NamespaceLookup, key=inputs.FactKeyLookup)
    def history(self, namespace: str, key: str) -> builtins.list[FactRecord]:
        """Every version of ``namespace.key``, superseded and forgotten ones included: the
        current version first, then newest first (each record says ``active``)."""
        rows = builtins.list(
            self.session.scalars(select(Fact).where(held_address(self.session, namespace, key)))
        )
        by_id = {r.id: r for r in rows}

        def depth(row: Fact) -> int:
            # position in the supersedes chain: orders versions stored in the same millisecond
            seen: set[str] = set()
            while row.supersedes in by_id and row.id not in seen:
                seen.add(row.id)
                row = by_id[row.supersedes]
            return len(seen)

        ordered = sorted(
            rows,
            key=lambda r: (
                r.superseded_by is None and r.forgotten_at is None,
                r.created_at,
                depth(r),
                r.id,
            ),
            reverse=True,
        )
        return [to_record(r) for r in ordered]

    # --- forgetting and pinning ---------------------------------------------------------

    def _row(self, fact_id: str) -> Fact:
        row = self.session.get(Fact, fact_id) if isinstance(fact_id, str) else None
        if row is None:
            raise FactIdNotFoundError(str(fact_id))
        return row

    def _locked_row(self, fact_id: str) -> Fact:
        """The version ``fact_id`` read again under its key's lock (taken before any of the
        key's rows is written: :meth:`get`), as a concurrent writer of the key left it."""
        row = self._row(fact_id)
        self.mem.backend.serialize(self.session, "fact", row.namespace, row.key)
        self.session.refresh(row)
        return row

    @finds("fact_id", absent=_no_fact)
    def forget(self, fact_id: str) -> bool:
        """Soft-forget a version; True if it was not forgotten before (the first
        ``forgotten_at`` is kept)."""
        row = self._locked_row(fact_id)
        if row.forgotten_at is not None:
            return False
        row.forgotten_at = self._now()
        self.session.flush()
        log.info("fact.forgotten", namespace=row.namespace, key=row.key, id=row.id)
        return True

    @finds("fact_id", absent=_no_fact)
    def unforget(self, fact_id: str) -> bool:
        """Bring a forgotten version back; True if it was forgotten (the original said True
        for any existing id).

        If other current versions of its key exist, the newest (by ``created_at``) stays or
        becomes current and the others are marked superseded by it, so a key never has two
        current versions.
        """
        row = self._locked_row(fact_id)
        if row.forgotten_at is None:
            return False
        row.forgotten_at = None
        if row.superseded_by is None:
            self._settle_current(row.namespace, row.key)
        self.session.flush()
        log.info("fact.unforgotten", namespace=row.namespace, key=row.key, id=row.id)
        return True

    def _settle_current(self, namespace: str, key: str) -> None:
        current = newest_first(
            self.session.scalars(
                select(Fact).where(Fact.namespace == namespace, Fact.key == key, CURRENT)
            )
        )
        if len(current) < 2:
            return
        winner, losers = current[0], current[1:]
        if winner.supersedes is None:
            winner.supersedes = losers[0].id
        for old in losers:
            old.superseded_by = winner.id
            log.info(
                "fact.superseded", namespace=namespace, key=key, old_id=old.id, new_id=winner.id
            )

    @finds("fact_id", absent=_no_fact_tau)
    def set_tau(self, fact_id: str, days: float | None) -> FactRecord:
        """Override the decay time constant of a version (``None``: back to the namespace
        default; :data:`~philont.domain.decay.PIN_SENTINEL`: pin)."""
        tau = None if days is None else decay.validate_tau_override(days, "days")
        row = self._row(fact_id)
        row.decay_tau_days = tau
        self.session.flush()
        log.info("fact.tau_set", namespace=row.namespace, key=row.key, id=row.id, tau_days=tau)
        return to_record(row)

    @finds("fact_id", absent=_no_fact)
    def pin(self, fact_id: str) -> FactRecord:
        """Pin a version: it never decays and is never a forget candidate."""
        return self.set_tau(fact_id, decay.PIN_SENTINEL)

    @finds("fact_id", absent=_no_fact)
    def unpin(self, fact_id: str) -> FactRecord:
        """Unpin a version (its namespace's default time constant applies again)."""
        return self.set_tau(fact_id, None)

    # --- decay --------------------------------------------------------------------------

    def score(self, record: FactRecord, now: datetime | None = None) -> float:
        """The decayed relevance of ``record`` at ``now`` (default: the clock)."""
        at = self._now() if now is None else inputs.check(inputs.AwareTime, now, "now")
        return score_record(record, to_epoch_ms(at))

    @finds("namespace", absent=_no_candidates)
    def forget_candidates(
        self,
        threshold: float = decay.DEFAULT_FORGET_THRESHOLD,
        limit: int = 50,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> builtins.list[tuple[FactRecord, float]]:
        """Current, unpinned facts scoring strictly below ``threshold`` at ``now``, lowest
        first, at most ``limit``. ``namespace`` is exact (``'x.*'`` for a subtree)."""
        return self._candidates(
            inputs.check(inputs.Threshold, threshold, "threshold"),
            limit,
            namespace,
            now,
        )

    def _candidates(
        self, threshold: float, limit: int | None, namespace: str | None, now: datetime | None
    ) -> builtins.list[tuple[FactRecord, float]]:
        cond = namespace_filter(self.session, namespace, prefix=False)
        at = self._now() if now is None else aware(now, "now")
        stmt = select(Fact).where(
            CURRENT, or_(Fact.decay_tau_days.is_(None), Fact.decay_tau_days >= 0)
        )
        if cond is not None:
            stmt = stmt.where(cond)
        found: builtins.list[tuple[Fact, float]] = []
        at_ms = to_epoch_ms(at)
        for row in self.session.scalars(stmt):
            s = score_record(row, at_ms)
            if decay.is_forget_candidate(s, threshold):
                found.append((row, s))
        found.sort(key=lambda pair: (pair[1], pair[0].namespace, pair[0].key))
        chosen = found if limit is None else found[:limit]
        return [(to_record(row, score=s), s) for row, s in chosen]

    def sweep(
        self, threshold: float = decay.DEFAULT_FORGET_THRESHOLD, now: datetime | None = None
    ) -> int:
        """Soft-forget every forget candidate (no limit) and return how many. Scores are taken
        at ``now``; ``forgotten_at`` is the clock's time of the sweep. On PostgreSQL a
        candidate a concurrent transaction is writing is left to the next sweep."""
        candidates = self._candidates(
            inputs.check(inputs.Threshold, threshold, "threshold"), None, None, now
        )
        if not candidates:
            return 0
        stamp = self._now()
        ids = [rec.id for rec, _ in candidates]
        # Rows a concurrent writer holds are left for the next sweep (SKIP LOCKED, PostgreSQL;
        # SQLite's unit holds the whole file): a sweep never waits for a row, so it cannot
        # close a cycle of waits with a writer that holds the row's key lock.
        free = select(Fact).where(Fact.id.in_(ids), Fact.forgotten_at.is_(None))
        rows = list(self.session.scalars(free.with_for_update(skip_locked=True)))
        for row in rows:
            row.forgotten_at = stamp
        self.session.flush()
        log.info("fact.swept", threshold=threshold, forgotten=len(rows))
        return len(rows)

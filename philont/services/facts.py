"""FactService: versioned namespaced facts with supersession, decay, forgetting and time travel."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Integer, Text, and_, func, or_, select, type_coerce
from sqlalchemy.orm import aliased

from philont.db.models import Fact
from philont.db.types import to_epoch_ms
from philont.domain import decay
from philont.domain.facts import is_expired, rank_score
from philont.domain.kinds import AccessTarget, FactKind
from philont.domain.query import like_escape as _like_escape
from philont.errors import (
    InvalidTimeRangeError,
    NotFoundError,
)
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.facts import FactRecord
from philont.services.base import Service

__all__ = [
    "FactIdNotFoundError",
    "FactService",
]

log = get_logger(__name__)

_ALL_NAMESPACES = "*"
_PREFIX_SUFFIX = ".*"


class FactIdNotFoundError(NotFoundError):
    """No fact version has this id."""

    code = "fact_id_not_found"

    def __init__(self, fact_id: str) -> None:
        super().__init__(f"no fact with id {fact_id!r}", fact_id=fact_id)
        self.fact_id = fact_id


# --- validation (the shared input types; raise before anything is written) ------------------


def _optional_aware(value: object, name: str) -> datetime | None:
    return inputs.optional(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def _aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def _exact_namespace(namespace: object) -> ColumnElement[bool]:
    """SQL condition for one namespace on reads (lenient: see ``inputs.NamespaceLookup``)."""
    name: str = inputs.check(inputs.NamespaceLookup, namespace, "namespace")
    return Fact.namespace == name


def _namespace_filter(namespace: str | None, *, prefix: bool) -> ColumnElement[bool] | None:
    """SQL condition selecting namespaces for listing. ``None`` or ``'*'`` selects all (no
    condition); ``'user.*'`` means the prefix form of ``'user'``."""
    if namespace is None or namespace == _ALL_NAMESPACES:
        return None
    namespace = inputs.check(inputs.NamespaceSelector, namespace, "namespace")
    if namespace.endswith(_PREFIX_SUFFIX):
        namespace, prefix = namespace[: -len(_PREFIX_SUFFIX)], True
    if not prefix:
        return Fact.namespace == namespace
    # 'user' matches 'user' and 'user.<anything>', never 'username'; '_' in a namespace is a
    # literal, not a LIKE wildcard.
    return or_(
        Fact.namespace == namespace,
        Fact.namespace.like(_like_escape(namespace) + ".%", escape="\\"),
    )


def _newest_first(rows: Iterable[Fact]) -> builtins.list[Fact]:
    # created_at is millisecond-grained; equal stamps fall back to the id so the choice is
    # deterministic (the original took "the first row", whatever SQLite returned: Q-S1).
    return sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True)


def _is_expired(row: Fact | Any, now_ms: int) -> bool:
    """:func:`philont.domain.facts.is_expired` of an ORM or column row (datetimes, enums)."""
    until = row.valid_until
    return is_expired(
        fact_kind=row.fact_kind.value,
        valid_until_ms=None if until is None else to_epoch_ms(until),
        now_ms=now_ms,
    )


def _record(row: Fact | Any, *, score: float | None = None) -> FactRecord:
    """A read model from an ORM row or a column row with the same attribute names."""
    return FactRecord(
        id=row.id,
        namespace=row.namespace,
        key=row.key,
        value=row.value,
        confidence=row.confidence,
        fact_kind=row.fact_kind,
        created_at=row.created_at,
        occurred_at=row.occurred_at,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        last_accessed_at=row.last_accessed_at,
        decay_tau_days=row.decay_tau_days,
        pinned=decay.is_pinned(row.decay_tau_days),
        superseded_by=row.superseded_by,
        supersedes=row.supersedes,
        forgotten_at=row.forgotten_at,
        active=row.superseded_by is None and row.forgotten_at is None,
        score=score,
    )


_CURRENT = and_(Fact.superseded_by.is_(None), Fact.forgotten_at.is_(None))
_FACT_COLUMNS = tuple(getattr(Fact, attr.key) for attr in Fact.__mapper__.column_attrs)
# Raw stored values (epoch-ms ints, plain text): ranking every current fact on each turn must
# not pay for a datetime and an enum per column per row.
_SCORE_COLUMNS = (
    Fact.id,
    Fact.namespace,
    Fact.confidence,
    type_coerce(Fact.created_at, Integer).label("created_at"),
    type_coerce(Fact.last_accessed_at, Integer).label("last_accessed_at"),
    Fact.decay_tau_days,
    type_coerce(Fact.fact_kind, Text).label("fact_kind"),
    type_coerce(Fact.valid_until, Integer).label("valid_until"),
)


def _score_raw(row: Any, now_ms: int) -> float:
    """:func:`philont.domain.facts.rank_score` of raw stored values (``_SCORE_COLUMNS``)."""
    return rank_score(
        namespace=row.namespace,
        confidence=row.confidence,
        created_ms=row.created_at,
        accessed_ms=row.last_accessed_at,
        tau_override=row.decay_tau_days,
        now_ms=now_ms,
    )


def _score_record(row: Fact | FactRecord, now_ms: int) -> float:
    """:func:`philont.domain.facts.rank_score` of an ORM row or a read model."""
    accessed = row.last_accessed_at
    return rank_score(
        namespace=row.namespace,
        confidence=row.confidence,
        created_ms=to_epoch_ms(row.created_at),
        accessed_ms=None if accessed is None else to_epoch_ms(accessed),
        tau_override=row.decay_tau_days,
        now_ms=now_ms,
    )


class FactService(Service):
    """Facts: (namespace, key) -> JSON value, one row per version.

    Invariant kept by every write here: at most one *current* version (not superseded, not
    forgotten) per (namespace, key). Legacy databases may break it (Q-S1); reads then pick the
    newest deterministically and the next ``store`` repairs it.
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
        """
        namespace = inputs.check(inputs.Namespace, namespace, "namespace")
        key = inputs.check(inputs.FactKey, key, "key")
        value = inputs.check(inputs.FactValue, value, "value")
        confidence = inputs.check(inputs.Confidence, confidence, "confidence")
        kind = inputs.check(inputs.FactKindName, fact_kind, "fact_kind")
        occurred = _optional_aware(occurred_at, "occurred_at")
        start = _optional_aware(valid_from, "valid_from")
        end = _optional_aware(valid_until, "valid_until")
        if start is not None and end is not None and end < start:
            raise InvalidTimeRangeError(start, end, what="valid_until before valid_from")
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
        """Insert an already validated version and supersede the current ones (no checks:
        a future kernel path for ``self`` facts calls this after its own authorisation)."""
        current = _newest_first(
            self.session.scalars(
                select(Fact).where(Fact.namespace == namespace, Fact.key == key, _CURRENT)
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
        self.session.add(row)
        for old in current:
            old.superseded_by = row.id
        self.session.flush()
        for old in current:
            log.info("fact.superseded", namespace=namespace, key=key, old_id=old.id, new_id=row.id)
        log.info("fact.stored", namespace=namespace, key=key, id=row.id, kind=fact_kind.value)
        return _record(row)

    # --- reading ------------------------------------------------------------------------

    def get(self, namespace: str, key: str, *, include_expired: bool = True) -> FactRecord | None:
        """The current version of ``namespace.key``, or ``None``.

        A hit refreshes ``last_accessed_at`` and writes one access-log row (the original did
        neither log, Q-D4). With ``include_expired=False`` a state whose ``valid_until`` has
        passed counts as a miss (Q-S2); the default keeps the original's behaviour.
        A miss writes nothing.
        """
        stmt = select(Fact).where(_exact_namespace(namespace), Fact.key == key, _CURRENT)
        rows = _newest_first(self.session.scalars(stmt))
        if not rows:
            return None
        row = rows[0]
        now = self._now()
        if not include_expired and _is_expired(row, to_epoch_ms(now)):
            return None
        row.last_accessed_at = now
        self.session.flush()
        self.mem.access.record(AccessTarget.FACT, row.id, context=f"get {namespace}.{key}")
        return _record(row)

    def get_by_id(self, fact_id: str, include_forgotten: bool = False) -> FactRecord | None:
        """Any version by id (superseded ones too); forgotten ones only when asked. No access
        refresh."""
        row = self.session.get(Fact, fact_id)
        if row is None or (row.forgotten_at is not None and not include_forgotten):
            return None
        return _record(row)

    def list(
        self,
        namespace: str | None,
        *,
        prefix: bool = False,
        ranked: bool = False,
        now: datetime | None = None,
        include_expired: bool = True,
        limit: int | None = None,
    ) -> builtins.list[FactRecord]:
        """Current facts of a namespace, without refreshing access.

        ``namespace`` is matched exactly, or with ``prefix=True`` (or the pattern form
        ``'user.*'``) as ``user`` plus every ``user.<child>`` — never ``username``. ``None`` or
        ``'*'`` lists every namespace. Ordered by namespace and key, or with ``ranked=True`` by
        decay score at ``now`` (default: the clock), highest first, with ``score`` filled in.
        ``include_expired=False`` drops states whose ``valid_until`` lies before ``now``.
        ``limit`` keeps the first N after ordering.
        """
        cond = _namespace_filter(namespace, prefix=prefix)
        at = self._now() if now is None else _aware(now, "now")
        # Plain column rows, not ORM objects: every turn's prefix ranks all current facts.
        stmt = (
            select(*_FACT_COLUMNS)
            .where(_CURRENT)
            .order_by(Fact.namespace, Fact.key, Fact.created_at)
        )
        if cond is not None:
            stmt = stmt.where(cond)
        if not ranked:
            at_ms = to_epoch_ms(at)
            rows: builtins.list[Any] = [
                r
                for r in self.session.execute(stmt)
                if include_expired or not _is_expired(r, at_ms)
            ]
            return [_record(r) for r in rows[:limit]]
        # Rank on the few columns the score needs, then load only the winners in full.
        light = stmt.with_only_columns(*_SCORE_COLUMNS)
        at_ms = to_epoch_ms(at)
        scored = [
            (_score_raw(r, at_ms), r.id)
            for r in self.session.execute(light)
            if include_expired
            or not is_expired(fact_kind=r.fact_kind, valid_until_ms=r.valid_until, now_ms=at_ms)
        ]
        # sorted() is stable: equal scores keep the (namespace, key) order
        scored.sort(key=lambda pair: -pair[0])
        top = scored[:limit]
        full = {
            r.id: r
            for r in self.session.execute(
                select(*_FACT_COLUMNS).where(Fact.id.in_([i for _, i in top]))
            )
        }
        return [_record(full[i], score=score) for score, i in top]

    def count(self, *, now: datetime | None = None, include_expired: bool = True) -> int:
        """How many current (active, not forgotten) facts there are, in every namespace."""
        stmt = select(func.count()).select_from(Fact).where(_CURRENT)
        if not include_expired:
            at = self._now() if now is None else _aware(now, "now")
            stmt = stmt.where(
                or_(
                    Fact.fact_kind == FactKind.EVENT,
                    Fact.valid_until.is_(None),
                    Fact.valid_until >= at,
                )
            )
        return int(self.session.scalar(stmt) or 0)

    def history(self, namespace: str, key: str) -> builtins.list[FactRecord]:
        """Every version of ``namespace.key``, superseded and forgotten ones included: the
        current version first, then newest first (each record says ``active``)."""
        rows = builtins.list(
            self.session.scalars(select(Fact).where(_exact_namespace(namespace), Fact.key == key))
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
        return [_record(r) for r in ordered]

    # --- forgetting and pinning ---------------------------------------------------------

    def _row(self, fact_id: str) -> Fact:
        row = self.session.get(Fact, fact_id) if isinstance(fact_id, str) else None
        if row is None:
            raise FactIdNotFoundError(str(fact_id))
        return row

    def forget(self, fact_id: str) -> bool:
        """Soft-forget a version; True if it was not forgotten before (the first
        ``forgotten_at`` is kept)."""
        row = self._row(fact_id)
        if row.forgotten_at is not None:
            return False
        row.forgotten_at = self._now()
        self.session.flush()
        log.info("fact.forgotten", namespace=row.namespace, key=row.key, id=row.id)
        return True

    def unforget(self, fact_id: str) -> bool:
        """Bring a forgotten version back; True if it was forgotten (the original said True
        for any existing id).

        If other current versions of its key exist, the newest (by ``created_at``) stays or
        becomes current and the others are marked superseded by it, so a key never has two
        current versions.
        """
        row = self._row(fact_id)
        if row.forgotten_at is None:
            return False
        row.forgotten_at = None
        if row.superseded_by is None:
            self._settle_current(row.namespace, row.key)
        self.session.flush()
        log.info("fact.unforgotten", namespace=row.namespace, key=row.key, id=row.id)
        return True

    def _settle_current(self, namespace: str, key: str) -> None:
        current = _newest_first(
            self.session.scalars(
                select(Fact).where(Fact.namespace == namespace, Fact.key == key, _CURRENT)
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

    def set_tau(self, fact_id: str, days: float | None) -> FactRecord:
        """Override the decay time constant of a version (``None``: back to the namespace
        default; :data:`~philont.domain.decay.PIN_SENTINEL`: pin)."""
        tau = None if days is None else decay.validate_tau_override(days)
        row = self._row(fact_id)
        row.decay_tau_days = tau
        self.session.flush()
        log.info("fact.tau_set", namespace=row.namespace, key=row.key, id=row.id, tau_days=tau)
        return _record(row)

    def pin(self, fact_id: str) -> FactRecord:
        """Pin a version: it never decays and is never a forget candidate."""
        return self.set_tau(fact_id, decay.PIN_SENTINEL)

    def unpin(self, fact_id: str) -> FactRecord:
        """Unpin a version (its namespace's default time constant applies again)."""
        return self.set_tau(fact_id, None)

    # --- decay --------------------------------------------------------------------------

    def score(self, record: FactRecord, now: datetime | None = None) -> float:
        """The decayed relevance of ``record`` at ``now`` (default: the clock)."""
        at = self._now() if now is None else inputs.check(inputs.AwareTime, now, "now")
        return _score_record(record, to_epoch_ms(at))

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
            inputs.check(inputs.Limit, limit, "limit"),
            namespace,
            now,
        )

    def _candidates(
        self, threshold: float, limit: int | None, namespace: str | None, now: datetime | None
    ) -> builtins.list[tuple[FactRecord, float]]:
        cond = _namespace_filter(namespace, prefix=False)
        at = self._now() if now is None else _aware(now, "now")
        stmt = select(Fact).where(
            _CURRENT, or_(Fact.decay_tau_days.is_(None), Fact.decay_tau_days >= 0)
        )
        if cond is not None:
            stmt = stmt.where(cond)
        found: builtins.list[tuple[Fact, float]] = []
        at_ms = to_epoch_ms(at)
        for row in self.session.scalars(stmt):
            s = _score_record(row, at_ms)
            if decay.is_forget_candidate(s, threshold):
                found.append((row, s))
        found.sort(key=lambda pair: (pair[1], pair[0].namespace, pair[0].key))
        chosen = found if limit is None else found[:limit]
        return [(_record(row, score=s), s) for row, s in chosen]

    def sweep(
        self, threshold: float = decay.DEFAULT_FORGET_THRESHOLD, now: datetime | None = None
    ) -> int:
        """Soft-forget every forget candidate (no limit) and return how many. Scores are taken
        at ``now``; ``forgotten_at`` is the clock's time of the sweep."""
        candidates = self._candidates(
            inputs.check(inputs.Threshold, threshold, "threshold"), None, None, now
        )
        if not candidates:
            return 0
        stamp = self._now()
        ids = [rec.id for rec, _ in candidates]
        for row in self.session.scalars(select(Fact).where(Fact.id.in_(ids))):
            row.forgotten_at = stamp
        self.session.flush()
        log.info("fact.swept", threshold=threshold, forgotten=len(ids))
        return len(ids)

    # --- time ---------------------------------------------------------------------------

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
          occurrence). Forgotten versions never answer.

        No access refresh and no access-log row (this is an audit query).
        """
        cond = _exact_namespace(namespace)
        when = _aware(at, "at")
        believed = self._now() if believed_at is None else _aware(believed_at, "believed_at")
        rows = self.session.scalars(
            select(Fact).where(
                cond,
                Fact.key == key,
                Fact.forgotten_at.is_(None),
                Fact.created_at <= believed,
            )
        )
        candidates: builtins.list[tuple[datetime, datetime, str, Fact]] = []
        for row in rows:
            if row.fact_kind is FactKind.EVENT:
                occurred = row.occurred_at or row.created_at
                if occurred <= when:
                    candidates.append((occurred, row.created_at, row.id, row))
            elif (row.valid_from is None or row.valid_from <= when) and (
                row.valid_until is None or when <= row.valid_until
            ):
                candidates.append((row.created_at, row.created_at, row.id, row))
        if not candidates:
            return None
        return _record(max(candidates, key=lambda c: c[:3])[3])

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
        original only ever showed the latest one, Q-S3). An event superseded by an event with
        the same ``occurred_at`` is a correction of that occurrence and is left out, and so are
        forgotten versions. ``namespace`` (default all) matches as a prefix unless
        ``prefix=False``.
        """
        cond = _namespace_filter(namespace, prefix=prefix)
        start = _optional_aware(since, "since")
        end = _optional_aware(until, "until")
        if start is not None and end is not None and end < start:
            raise InvalidTimeRangeError(start, end, what="events window")
        successor = aliased(Fact)
        occurred = func.coalesce(Fact.occurred_at, Fact.created_at)
        stmt = (
            select(Fact)
            .outerjoin(successor, successor.id == Fact.superseded_by)
            .where(
                Fact.fact_kind == FactKind.EVENT,
                Fact.forgotten_at.is_(None),
                or_(
                    successor.id.is_(None),
                    successor.fact_kind != FactKind.EVENT,
                    successor.occurred_at.is_(None),
                    successor.occurred_at != occurred,
                ),
            )
            .order_by(occurred, Fact.created_at, Fact.namespace, Fact.key, Fact.id)
        )
        if cond is not None:
            stmt = stmt.where(cond)
        if start is not None:
            stmt = stmt.where(occurred >= start)
        if end is not None:
            stmt = stmt.where(occurred <= end)
        return [_record(r) for r in self.session.scalars(stmt)]

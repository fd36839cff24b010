"""What the fact service's parts share: input checks, SQL conditions, records from rows, scores."""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import compress
from operator import attrgetter
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Text,
    and_,
    bindparam,
    func,
    or_,
    select,
    type_coerce,
)
from sqlalchemy.orm import Session, aliased

from philont.db.models import Fact
from philont.db.stored_values import CAREFUL, UNREADABLE, clean, cleaned
from philont.db.types import kinds_of, to_epoch_ms
from philont.domain import decay
from philont.domain.facts import (
    HeldRank,
    held_rank,
    is_expired,
    is_valid_at,
    latest_held,
    rank_score,
    rank_scores,
    valid_at,
)
from philont.domain.kinds import FactKind
from philont.errors import (
    InvalidInputError,
    NotFoundError,
)
from philont.log import get_logger
from philont.schemas import inputs, stored
from philont.schemas.facts import FactRecord

log = get_logger("philont.services.facts")

ALL_NAMESPACES = inputs.ALL_NAMESPACES
PREFIX_SUFFIX = inputs.PREFIX_SUFFIX


class FactIdNotFoundError(NotFoundError):
    """No fact version has this id."""

    code = "fact_id_not_found"
    table = "memory_facts"

    def __init__(self, fact_id: str) -> None:
        super().__init__(f"no fact with id {fact_id!r}", fact_id=fact_id)
        self.fact_id = fact_id


# --- validation (the shared input types; raise before anything is written) ------------------


def optional_aware(value: object, name: str) -> datetime | None:
    return inputs.optional(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def exact_namespace(namespace: object) -> ColumnElement[bool]:
    """SQL condition for one namespace on reads (the write rule: ``inputs.NamespaceLookup``)."""
    name: str = inputs.check(inputs.NamespaceLookup, namespace, "namespace")
    return Fact.namespace == name


def exact_address(namespace: object, key: object) -> ColumnElement[bool]:
    """SQL condition for one fact address on reads: namespace and key by the write rules
    (``inputs.NamespaceLookup``, ``inputs.FactKeyLookup``)."""
    in_namespace = exact_namespace(namespace)
    name: str = inputs.check(inputs.FactKeyLookup, key, "key")
    return and_(in_namespace, Fact.key == name)


def held_address(session: Session, namespace: object, key: object) -> ColumnElement[bool]:
    """:func:`exact_address`, except that an address outside today's rules is read when a
    stored row has exactly that address: a legacy database (the original checked no
    namespace) keeps such rows, and what ``list('*')`` shows must be readable by name. An
    address no row holds is refused with the write's message."""
    try:
        return exact_address(namespace, key)
    except InvalidInputError:
        try:
            ns = inputs.check(stored.StoredNamespace, namespace, "namespace")
            name = inputs.check(stored.StoredFactKey, key, "key")
        except InvalidInputError:
            ns = None
        legacy = and_(Fact.namespace == ns, Fact.key == name) if ns is not None else None
        if legacy is None or session.scalar(select(Fact.id).where(legacy).limit(1)) is None:
            raise
        return legacy


def namespace_filter(
    session: Session, namespace: str | None, *, prefix: bool
) -> ColumnElement[bool] | None:
    """SQL condition selecting namespaces for listing. ``None`` or ``'*'`` selects all (no
    condition); ``'user.*'`` means the prefix form of ``'user'``; any other namespace follows
    the write rule (``inputs.NamespaceSelector``), except that one outside it is selected when
    a stored row's namespace matches it (a legacy database's ``User Prefs``, which
    ``list('*')`` shows, as :func:`held_address` reads it): a filter no row matches is refused
    with the write's message."""
    if namespace is None or namespace == ALL_NAMESPACES:
        return None
    try:
        selector: str = inputs.check(inputs.NamespaceSelector, namespace, "namespace")
    except InvalidInputError:
        held = _held_filter(session, namespace, prefix=prefix)
        if held is None:
            raise
        return held
    return _selecting(selector, prefix=prefix)


def _held_filter(
    session: Session, namespace: object, *, prefix: bool
) -> ColumnElement[bool] | None:
    """The condition of a filter outside the write rule whose namespace a stored row may hold
    (:data:`philont.schemas.inputs.HeldNamespaceSelector`), if a row (any version) matches it."""
    try:
        selector: str = inputs.check(inputs.HeldNamespaceSelector, namespace, "namespace")
        inputs.check(stored.StoredNamespace, _root(selector), "namespace")
    except InvalidInputError:
        return None
    cond = _selecting(selector, prefix=prefix)
    return cond if session.scalar(select(Fact.id).where(cond).limit(1)) is not None else None


def _root(selector: str) -> str:
    return selector.removesuffix(PREFIX_SUFFIX) or selector


def _selecting(selector: str, *, prefix: bool) -> ColumnElement[bool]:
    namespace = _root(selector)
    if namespace != selector:
        prefix = True
    if not prefix:
        return Fact.namespace == namespace
    # 'user' matches 'user' and 'user.<anything>', never 'username'. Compared as text, not by
    # LIKE: no character of the name is a wildcard, and the case counts on SQLite too (its LIKE
    # ignores ASCII case: 'user.*' listed a legacy database's 'User.prefs').
    head = namespace + "."
    return or_(
        Fact.namespace == namespace,
        func.substr(Fact.namespace, 1, len(head)) == head,
    )


def newest_first(rows: Iterable[Fact]) -> builtins.list[Fact]:
    # created_at is millisecond-grained; equal stamps fall back to the id so the choice is
    # deterministic (the original took "the first row", whatever SQLite returned: Q-S1).
    return sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True)


def expired(row: Fact | Any, now_ms: int) -> bool:
    """:func:`philont.domain.facts.is_expired` of an ORM or column row (datetimes, enums)."""
    until = row.valid_until
    return is_expired(
        fact_kind=row.fact_kind.value,
        valid_until_ms=None if until is None else to_epoch_ms(until),
        now_ms=now_ms,
    )


def valid_raw(row: Any, at_ms: int) -> bool:
    """:func:`philont.domain.facts.is_valid_at` of raw stored values (``SCORE_COLUMNS``)."""
    try:
        return is_valid_at(
            fact_kind=row.fact_kind,
            valid_from_ms=row.valid_from,
            valid_until_ms=row.valid_until,
            at_ms=at_ms,
        )
    except UNREADABLE:
        return valid_raw(cleaned(row, FACT_ROW, raw=True), at_ms)


_WINDOW = attrgetter("fact_kind", "valid_from", "valid_until")
_SCORED_BY = attrgetter(
    "namespace", "confidence", "created_at", "last_accessed_at", "decay_tau_days"
)


def valid_raws(rows: Sequence[Any], at_ms: int) -> builtins.list[bool]:
    """:func:`valid_raw` of each row, in one pass (:func:`philont.domain.facts.valid_at`); row
    by row, each read again as its columns' kinds if need be, when one holds a value of
    another kind."""
    try:
        return valid_at(map(_WINDOW, rows), at_ms)
    except UNREADABLE:
        return [valid_raw(r, at_ms) for r in rows]


def current_as_of(stmt: Any, believed: datetime | None, version: Any = Fact) -> Any:
    """``stmt`` restricted to the current versions (``version``: the fact table or an alias of
    it): today's (not superseded, not forgotten), or with ``believed`` those current as we
    believed them then (recorded by then, and not yet superseded or forgotten by then)."""
    if believed is None:
        return stmt.where(version.superseded_by.is_(None), version.forgotten_at.is_(None))
    successor = aliased(Fact)
    return (
        stmt.outerjoin(successor, successor.id == version.superseded_by)
        .where(version.created_at <= believed)
        .where(or_(version.forgotten_at.is_(None), version.forgotten_at > believed))
        .where(or_(version.superseded_by.is_(None), successor.created_at > believed))
    )


def rank_raw(row: Any, at_ms: int) -> HeldRank | None:
    """:func:`philont.domain.facts.held_rank` of raw stored values (``RAW_COLUMNS``)."""
    try:
        return held_rank(
            fact_id=row.id,
            fact_kind=row.fact_kind,
            created_ms=row.created_at,
            occurred_ms=row.occurred_at,
            valid_from_ms=row.valid_from,
            valid_until_ms=row.valid_until,
            at_ms=at_ms,
        )
    except UNREADABLE:
        return rank_raw(cleaned(row, FACT_ROW, raw=True), at_ms)


def rank_row(row: Fact, at_ms: int, depth: int = 0) -> HeldRank | None:
    """:func:`philont.domain.facts.held_rank` of an ORM row (``depth``: its
    :func:`~philont.domain.facts.link_depths` among the key's versions read)."""
    occurred, start, until = row.occurred_at, row.valid_from, row.valid_until
    return held_rank(
        fact_id=row.id,
        fact_kind=row.fact_kind.value,
        created_ms=to_epoch_ms(row.created_at),
        occurred_ms=None if occurred is None else to_epoch_ms(occurred),
        valid_from_ms=None if start is None else to_epoch_ms(start),
        valid_until_ms=None if until is None else to_epoch_ms(until),
        at_ms=at_ms,
        depth=depth,
    )


def valid_row(row: Fact, at_ms: int) -> bool:
    """:func:`philont.domain.facts.is_valid_at` of an ORM row."""
    start, until = row.valid_from, row.valid_until
    return is_valid_at(
        fact_kind=row.fact_kind.value,
        valid_from_ms=None if start is None else to_epoch_ms(start),
        valid_until_ms=None if until is None else to_epoch_ms(until),
        at_ms=at_ms,
    )


def holding(
    rows: Sequence[Any], at_ms: int, others: Callable[[], Iterable[Any]]
) -> builtins.list[Any]:
    """What holds at ``at_ms`` of the keys of ``rows`` (current versions as raw stored values,
    with ``namespace``, ``key`` and :func:`valid_raw`'s columns): each row valid then, in
    order; in place of a key none of whose current versions is, the version that holds by
    ``FactService.as_of``'s rule (:func:`philont.domain.facts.latest_held`) among ``others``
    (:func:`rank_raw`'s columns). Storing a past state supersedes an open one, which still
    holds now.

    ``others`` is one read, made only when a current version does not hold: the other
    versions of every key whose current state is outside its window at ``at_ms`` (for the
    prefix :func:`philont.db.queries.facts.others_of_lapsed`, for ``FactService.list``
    :func:`versions_held`)."""
    valid = valid_raws(rows, at_ms)
    if all(valid):
        return list(rows)
    lapsed = {(r.namespace, r.key) for r, ok in zip(rows, valid, strict=True) if not ok}
    keys = {key for _namespace, key in lapsed}  # a text test first: few keys have lapsed
    looked = lapsed - {
        (r.namespace, r.key) for r in compress(rows, valid) if r.key in keys
    }  # a key another of whose current versions holds is not looked up
    versions: dict[tuple[str, str], builtins.list[Any]] = {}
    for row in others() if looked else ():
        if (row.namespace, row.key) in looked:
            versions.setdefault((row.namespace, row.key), []).append(row)
    found = {k: latest_held((rank_raw(v, at_ms), v) for v in vs) for k, vs in versions.items()}
    if all(version is None for version in found.values()):
        return list(compress(rows, valid))
    out = []
    for r, ok in zip(rows, valid, strict=True):
        if ok:
            out.append(r)
        elif (version := found.pop((r.namespace, r.key), None)) is not None:
            out.append(version)
    return out


@functools.cache
def _versions_held(columns: tuple[str, ...], believed: bool) -> Any:
    """The statement of :func:`versions_held` (``columns``, and current as ``:believed`` says
    when ``believed``), built once."""
    current = aliased(Fact, name="current_version")
    names = dict.fromkeys([*_STAMPS, *columns])
    at, recorded_by = _time_param("at"), _time_param("recorded_by")
    return current_as_of(
        select(*(RAW_COLUMNS[n] for n in names))
        .select_from(Fact)
        .join(current, and_(current.namespace == Fact.namespace, current.key == Fact.key)),
        _time_param("believed") if believed else None,
        current,
    ).where(
        # the SQL of "a current state outside its window" (text in a time column orders after
        # every number here as it reads in Python: philont.db.stored_values)
        current.fact_kind != FactKind.EVENT,
        or_(current.valid_from > at, current.valid_until < at),
        Fact.id != current.id,
        Fact.created_at <= recorded_by,
        or_(Fact.forgotten_at.is_(None), Fact.forgotten_at > recorded_by),
    )


def _time_param(name: str) -> Any:
    return bindparam(name, type_=Fact.__table__.c.created_at.type)


def versions_held(
    session: Session,
    columns: Sequence[str],
    *,
    at: datetime,
    recorded_by: datetime,
    believed: datetime | None = None,
    cond: ColumnElement[bool] | None = None,
) -> builtins.list[Any]:
    """:func:`holding`'s ``others`` for keys current as ``believed`` says, in namespaces
    ``cond``: their versions recorded by ``recorded_by`` and not forgotten by then, read with
    ``columns`` (names in ``RAW_COLUMNS``)."""
    stmt = _versions_held(tuple(columns), believed is not None)
    if cond is not None:
        stmt = stmt.where(cond)
    params = {"at": at, "recorded_by": recorded_by, "believed": believed}
    rows = builtins.list(session.execute(stmt, params))
    if session.info.get(CAREFUL):  # a careful read reads every row as its columns' kinds
        return [clean(row, FACT_ROW, raw=True) for row in rows]
    return rows


def to_record(row: Fact | Any, *, score: float | None = None) -> FactRecord:
    """A read model from an ORM row or a column row with the same attribute names (a value
    of the wrong kind is read again as its column's kind: :mod:`philont.db.stored_values`)."""
    try:
        return _record(row, score)
    except UNREADABLE:
        return _record(cleaned(row, FACT_ROW, raw=False), score)


def _record(row: Fact | Any, score: float | None) -> FactRecord:
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


FACT_ROW = kinds_of(Fact)
CURRENT = and_(Fact.superseded_by.is_(None), Fact.forgotten_at.is_(None))
FACT_COLUMNS = tuple(getattr(Fact, attr.key) for attr in Fact.__mapper__.column_attrs)
# Raw stored values (epoch-ms ints, plain text): ranking every current fact on each turn must
# not pay for a datetime and an enum per column per row.


def _epoch(column: Any) -> Any:
    return type_coerce(column, Integer).label(column.key)


RAW_COLUMNS: dict[str, Any] = {
    "id": Fact.id,
    "namespace": Fact.namespace,
    "key": Fact.key,
    "value_json": type_coerce(Fact.value, Text).label("value_json"),
    "confidence": Fact.confidence,
    "fact_kind": type_coerce(Fact.fact_kind, Text).label("fact_kind"),
    "created_at": _epoch(Fact.created_at),
    "occurred_at": _epoch(Fact.occurred_at),
    "valid_from": _epoch(Fact.valid_from),
    "valid_until": _epoch(Fact.valid_until),
    "last_accessed_at": _epoch(Fact.last_accessed_at),
    "decay_tau_days": Fact.decay_tau_days,
}
"""Columns as stored (epoch-ms ints, plain text), by name: ranking every current fact on each
turn must not pay for a datetime and an enum per column per row."""
_SCORED = (
    "id",
    "namespace",
    "confidence",
    "created_at",
    "last_accessed_at",
    "decay_tau_days",
    "fact_kind",
    "valid_from",
    "valid_until",
)
SCORE_COLUMNS = tuple(RAW_COLUMNS[n] for n in _SCORED)
LIGHT = (*_SCORED, "key")
"""What ``FactService.list`` ranks and filters by (``SCORE_COLUMNS`` and the key)."""
_STAMPS = (
    "id",
    "namespace",
    "key",
    "fact_kind",
    "created_at",
    "occurred_at",
    "valid_from",
    "valid_until",
)
"""What :func:`rank_raw` reads, and a version's key."""


def score_raw(row: Any, now_ms: int) -> float:
    """:func:`philont.domain.facts.rank_score` of raw stored values (``SCORE_COLUMNS``)."""
    try:
        return rank_score(
            namespace=row.namespace,
            confidence=row.confidence,
            created_ms=row.created_at,
            accessed_ms=row.last_accessed_at,
            tau_override=row.decay_tau_days,
            now_ms=now_ms,
        )
    except UNREADABLE:
        return score_raw(cleaned(row, FACT_ROW, raw=True), now_ms)


def scores_raw(rows: Sequence[Any], now_ms: int) -> builtins.list[float]:
    """:func:`score_raw` of each row, in one pass (:func:`philont.domain.facts.rank_scores`);
    row by row, each read again as its columns' kinds if need be, when one holds a value of
    another kind."""
    try:
        return rank_scores(map(_SCORED_BY, rows), now_ms)
    except UNREADABLE:
        return [score_raw(r, now_ms) for r in rows]


def score_record(row: Fact | FactRecord | Any, now_ms: int) -> float:
    """:func:`philont.domain.facts.rank_score` of an ORM row or a read model."""
    accessed = row.last_accessed_at
    try:
        return rank_score(
            namespace=row.namespace,
            confidence=row.confidence,
            created_ms=to_epoch_ms(row.created_at),
            accessed_ms=None if accessed is None else to_epoch_ms(accessed),
            tau_override=row.decay_tau_days,
            now_ms=now_ms,
        )
    except UNREADABLE:
        return score_record(cleaned(row, FACT_ROW, raw=False), now_ms)

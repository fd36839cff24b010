"""Values another program (the original, a hand edit, another tool) may have stored in each
column, built from the models: the column kinds, the bad values of each kind, a seeded memory
with a victim row and an untouched control row in every table, and the read paths over it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Float, Integer, LargeBinary, Table

from philont.db.schema import metadata
from philont.db.types import EpochMillis, IntBool, JsonText, StrEnumText
from philont.domain.kinds import AccessTarget, Role
from philont.store import Store

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)

# --- the kinds of columns and their bad values ---------------------------------------------


def kind_of(column: Column[Any]) -> str:
    """The storage kind of a column, from its SQLAlchemy type."""
    kind = column.type
    if isinstance(kind, EpochMillis):
        return "epoch"
    if isinstance(kind, JsonText):
        return "json"
    if isinstance(kind, StrEnumText):
        return "enum"
    if isinstance(kind, IntBool):
        return "flag"
    if isinstance(kind, Float):
        return "real"
    if isinstance(kind, Integer):
        return "int"
    if isinstance(kind, LargeBinary):
        return "blob"
    return "text"


# What SQLite keeps for each SQL literal in a column of that kind's affinity (INTEGER, REAL,
# TEXT; numeric text is converted by the affinity, so only non-numeric text stays text).
JS_MAX_DATE = "8640000000000000"  # 8.64e15 ms: JavaScript's largest Date (year 275760)
NOT_UTF8 = "CAST(x'66ff6f22' AS TEXT)"
"""Text that is not UTF-8 (``f``, a stray byte 0xff, ``o"``): a hand edit or another program
can store it in any column, where sqlite3 could not decode it."""

BAD_VALUES: dict[str, dict[str, str]] = {
    "epoch": {
        "js-max-date": JS_MAX_DATE,
        "js-min-date": "-" + JS_MAX_DATE,
        "int64-max": str(2**63 - 1),
        "past-max-instant": "253402300800000",  # 10000-01-01: past Python's datetime
        "real-1e20": "1e20",
        "real-inf": "9e999",
        "real-minus-inf": "-9e999",
        "real-fraction": "1714000000000.5",
        "text": "'yesterday'",
        "blob": "x'00ff'",
        "not-utf8": NOT_UTF8,
    },
    "json": {
        "not-json": "'{not json'",
        "empty": "''",
        "nan-token": "'NaN'",
        "number-past-float": "'[1e999]'",  # valid JSON text; Python reads it as infinity
        "deep": "'" + "[" * 100_000 + "'",
        "lone-surrogate": "'\"\\ud800\"'",
        "number": "'5'",
        "object": "'{\"a\":1}'",
        "null": "'null'",
        "list-of-mixed": "'[1,null,{}]'",
        "blob": "x'00ff'",
        "not-utf8": NOT_UTF8,
    },
    "enum": {
        "unknown": "'bogus'",
        "empty": "''",
        "number": "7",
        "blob": "x'00ff'",
        "not-utf8": NOT_UTF8,
    },
    "flag": {
        "two": "2",
        "negative": "-1",
        "text": "'yes'",
        "real": "0.5",
        "blob": "x'00ff'",
        "not-utf8": NOT_UTF8,
    },
    "int": {
        "text": "'many'",
        "real-fraction": "1.5",
        "real-1e20": "1e20",
        "real-inf": "9e999",
        "negative": "-5",
        "int64-max": str(2**63 - 1),
        "blob": "x'00ff'",
        "not-utf8": NOT_UTF8,
    },
    "real": {
        "text": "'high'",
        "inf": "9e999",
        "minus-inf": "-9e999",
        "huge": "1e308",
        "negative": "-3",
        "blob": "x'00ff'",
        "not-utf8": NOT_UTF8,
    },
    "text": {"blob": "x'00ff'", "number": "42", "empty": "''", "not-utf8": NOT_UTF8},
    "blob": {"text": "'not bytes'", "empty": "x''", "not-utf8": NOT_UTF8},
}
"""Per kind: a label and the SQL literal that stores the bad value."""

# The values PostgreSQL can hold where SQLite could hold anything: its columns are typed.
PG_BAD_VALUES: dict[str, dict[str, str]] = {
    "epoch": {k: BAD_VALUES["epoch"][k] for k in ("js-max-date", "js-min-date", "int64-max")},
    "int": {"negative": "-5", "int64-max": str(2**63 - 1)},
    "real": {"inf": "'Infinity'", "minus-inf": "'-Infinity'", "huge": "1e308", "negative": "-3"},
    "json": {
        k: BAD_VALUES["json"][k]
        for k in ("not-json", "empty", "number", "number-past-float", "object")
    },
    "enum": {"unknown": "'bogus'", "empty": "''"},
    "flag": {"two": "2", "negative": "-1"},
}


def column_lines() -> list[str]:
    """docs/stored-values.md's table of every column by kind, line by line, from the models."""
    from philont.db.types import column_kind

    order = ("epoch", "json", "enum", "flag", "int", "real", "text", "blob", "key")
    lines = []
    for table in sorted(metadata.sorted_tables, key=lambda t: t.name):
        by_kind: dict[str, list[str]] = {}
        for column in table.c:
            kind = column_kind(column)
            notes = []
            if kind.least is not None:
                notes.append("count")
            if kind.shape is not None:
                notes.append("object")
            if kind.choices:
                notes.append("one of " + "/".join(kind.choices))
            if kind.kind == "enum" and kind.fallback is not None:
                notes.append(f"unknown → {kind.fallback.value}")
            label = "key" if column.primary_key and kind.kind == "int" else kind.kind
            shown = column.name + (f" ({', '.join(notes)})" if notes else "")
            by_kind.setdefault(label, []).append(shown)
        parts = [f"{k}: {', '.join(by_kind[k])}" for k in order if k in by_kind]
        lines.append(f"| `{table.name}` | " + "; ".join(parts) + " |")
    return lines


def cases(values: dict[str, dict[str, str]]) -> Iterator[tuple[str, str, str, str]]:
    """(table, column, label, SQL literal) for every column and every bad value of its kind.
    INTEGER PRIMARY KEY columns are left out: SQLite holds only integers there."""
    for table in metadata.sorted_tables:
        for column in table.c:
            if column.primary_key and isinstance(column.type, Integer):
                continue
            for label, literal in values.get(kind_of(column), {}).items():
                yield table.name, column.name, label, literal


# --- a seeded memory: a victim and a control row in every table ----------------------------

# The words that show a row in a listing (each is in exactly one row).
VICTIM_FACT = ("user.home", "city")
CONTROL_FACT = ("user.work", "employer")
CONTROL_WORDS = {
    "memory_facts": "Acme",
    "memory_notes": "wombat",
    "memory_skills": "fold-paper",
    "memory_raw_messages": "platypus",
    "memory_actions": "list_facts",
    "memory_calendar": "Concert",
    "memory_schedules": "water-plants",
}


@dataclass(frozen=True)
class Seeded:
    """A seeded template file and, per table, the rowid of its victim row."""

    path: Path
    victims: dict[str, int]
    ids: dict[str, Any]


def _generic_value(column: Column[Any], n: int) -> Any:
    if column.foreign_keys and column.nullable:
        return None  # no dangling reference: an import checks them
    kind = kind_of(column)
    if kind == "epoch":
        return NOW_MS - n * 60_000
    if kind == "json":
        return "[]"
    if kind == "enum":
        return next(iter(column.type.enum_cls)).value  # type: ignore[attr-defined]
    if kind in ("flag", "int"):
        return 0 if kind == "flag" else n
    if kind == "real":
        return 0.5
    if kind == "blob":
        return bytes([n, 0, 0, 0])
    return f"{column.table.name}-{column.name}-{n}"


def _insert_generic(conn: sqlite3.Connection, table: Table, n: int) -> None:
    columns = [c for c in table.c if not (c.primary_key and isinstance(c.type, Integer))]
    names = ", ".join(f'"{c.name}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    values = [_generic_value(c, n) for c in columns]
    conn.execute(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', values)


def seed_services(store: Store) -> dict[str, Any]:
    ids: dict[str, Any] = {}
    with store.begin() as mem:
        sessions = [mem.timeline.start_session(s).id for s in ("s-victim", "s-control")]
        mem.timeline.append("we talked about kangaroos", session_id=sessions[0])
        mem.timeline.append("kangaroos hop", role=Role.ASSISTANT, session_id=sessions[0])
        mem.timeline.append("a platypus swims", session_id=sessions[1])
        mem.timeline.append("platypus noted", role=Role.ASSISTANT, session_id=sessions[1])
        mem.facts.store(*VICTIM_FACT, "Paris")
        victim = mem.facts.store(
            *VICTIM_FACT,
            "Berlin",
            occurred_at=NOW - timedelta(days=3),
            valid_from=NOW - timedelta(days=2),
            valid_until=NOW + timedelta(days=300),
            decay_tau_days=40.0,
        )
        ids["fact"] = victim.id
        mem.facts.store(*CONTROL_FACT, "Acme")
        mem.facts.store(
            "user.diary",
            "trip",
            "went to Rome",
            fact_kind="event",
            occurred_at=NOW - timedelta(days=9),
        )
        mem.facts.get(*VICTIM_FACT)  # last_accessed_at, an access-log row
        mem.access.record(AccessTarget.FACT, victim.id, context="stored-values")
        ids["note"] = mem.notes.add("the quokka note", importance=0.9, session_id=sessions[0]).id
        mem.notes.add("the wombat note", importance=0.4, session_id=sessions[1])
        mem.skills.create(
            "brew-tea",
            "brew tea for the quokka",
            ["tea", "quokka"],
            "boil water; steep",
            when_to_use="when tea is wanted",
        )
        mem.skills.set_recipe(
            "brew-tea", steps=["boil", "steep"], verification="taste", tool_policy=["use_skill"]
        )
        mem.skills.revise_recipe("brew-tea", steps=["boil", "steep", "pour"])
        mem.skills.create("fold-paper", "fold paper cranes", ["paper", "crane"], "fold twice")
        for name in ("brew-tea", "fold-paper"):
            mem.skills.set_grade(name, "confirmed", reason="seeded")
        mem.skills.record_outcome("brew-tea", success=True)
        mem.skills.record_outcome("brew-tea", success=False)
        ids["action"] = mem.actions.record(
            "use_skill",
            params={"name": "brew-tea"},
            success=True,
            result="ok",
            session_id=sessions[0],
            linked_skill="brew-tea",
        ).id
        mem.actions.record(
            "list_facts", params={}, success=False, result="nope", session_id=sessions[1]
        )
        ids["event"] = mem.calendar.create(
            "Dentist",
            NOW + timedelta(days=1),
            ends_at=NOW + timedelta(days=1, hours=1),
            timezone="Europe/Berlin",
            rrule="FREQ=WEEKLY",
            related_fact_id=victim.id,
            external_ref="ext-1",
        ).id
        mem.calendar.create("Concert", NOW + timedelta(days=2), timezone="UTC")
        schedule = mem.schedules.create("feed-cat", interval_ms=3_600_000, message="feed")
        ids["schedule"] = schedule.id
        mem.schedules.create(
            "water-plants", cron="0 9 * * *", timezone="Europe/Berlin", message="water"
        )
        mem.schedules.record_outcome(
            schedule.id,
            ok=False,
            fired_at=NOW,
            duration_ms=5,
            summary="failed",
            http_status={"500": 1},
            failure_signatures=["boom"],
        )
    return ids


# Tables the services fill: how the victim row is found (the control row is another row).
VICTIM_ROWS: dict[str, str] = {
    "memory_facts": "namespace = 'user.home' AND key = 'city' AND value_json = '\"Berlin\"'",
    "memory_notes": "content = 'the quokka note'",
    "memory_skills": "name = 'brew-tea'",
    # not fold-paper's row: its grade was set by hand, so it has an anchor-only recipe row
    "philont_skill_recipes": "skill_id = (SELECT id FROM memory_skills WHERE name = 'brew-tea')",
    "philont_skill_revisions": "1 = 1",
    "memory_raw_sessions": "id = 's-victim'",
    "memory_raw_messages": "content = 'we talked about kangaroos'",
    "memory_actions": "tool_name = 'use_skill'",
    "memory_access_log": "context = 'stored-values'",
    "memory_calendar": "title = 'Dentist'",
    "memory_schedules": "name = 'feed-cat'",
    "schedule_outcomes": "1 = 1",
}


def seed(path: Path) -> Seeded:
    """A memory at ``path`` with a victim and a control row in every table."""
    store = Store.open(path, clock=lambda: NOW)
    try:
        ids = seed_services(store)
    finally:
        store.close()
    victims: dict[str, int] = {}
    with closing(sqlite3.connect(path)) as conn, conn:
        for table in metadata.sorted_tables:
            where = VICTIM_ROWS.get(table.name)
            if where is None:
                before = conn.execute(f'SELECT max(rowid) FROM "{table.name}"').fetchone()[0]
                _insert_generic(conn, table, 1)
                _insert_generic(conn, table, 2)
                where = f"rowid > {before or 0}"
            victims[table.name] = conn.execute(
                f'SELECT min(rowid) FROM "{table.name}" WHERE {where}'
            ).fetchone()[0]
    return Seeded(path, victims, ids)


def victim_row(conn: sqlite3.Connection, seeded: Seeded, table: str) -> dict[str, Any]:
    """The victim row's stored values, by column."""
    cursor = conn.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (seeded.victims[table],))
    names = [d[0] for d in cursor.description]
    return dict(zip(names, cursor.fetchone(), strict=True))


def spoil(path: Path, seeded: Seeded, table: str, column: str, literal: str) -> dict[str, Any]:
    """Write ``literal`` into ``table.column`` of the victim row with plain sqlite3 (the file
    is in WAL mode); return the row as it was, for :func:`restore`."""
    with closing(sqlite3.connect(path)) as conn, conn:
        before = victim_row(conn, seeded, table)
        conn.execute(
            f'UPDATE "{table}" SET "{column}" = {literal} WHERE rowid = ?',
            (seeded.victims[table],),
        )
    return before


def restore(path: Path, seeded: Seeded, table: str, before: dict[str, Any]) -> None:
    """Put the victim row back as it was (every column: a read path may have touched more)."""
    names = [n for n in before if not _integer_key(table, n)]
    assignments = ", ".join(f'"{n}" = ?' for n in names)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            f'UPDATE "{table}" SET {assignments} WHERE rowid = ?',
            [before[n] for n in names] + [seeded.victims[table]],
        )


def _integer_key(table: str, name: str) -> bool:
    column = metadata.tables[table].c[name]
    return bool(column.primary_key and isinstance(column.type, Integer))

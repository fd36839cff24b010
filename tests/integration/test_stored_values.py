"""A stored value our Python types cannot hold as it is never breaks a read (docs/stored-values.md).

Generated from the models: every column of every table gets every bad value of its kind
(an epoch-ms integer JavaScript accepts but Python's calendar does not, text in an INTEGER
column, JSON that does not parse, an unknown enum text, ...), written with plain sqlite3 into
the victim row of a real WAL file, and every read path over that table runs: the services,
the prefix, search, the retriever, the eleven tools, the export and its import gate. No path may
fail untyped; a listing must keep showing the other rows. A new column is covered as soon as
its model has it. ``PHILONT_HEAVY=1`` runs every value and the commands in every case; by
default a sample of the values per kind, and the commands once per table and kind.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from philont import migrate, tools, transfer
from philont.aio import AsyncStore
from philont.db import stored_values
from philont.db.schema import metadata
from philont.domain.timepolicy import MAX_INSTANT, MIN_INSTANT
from philont.store import Store
from philont.transfer.format import ImportFormatError
from tests import pg_support
from tests.stored_values import (
    BAD_VALUES,
    JS_MAX_DATE,
    NOW,
    PG_BAD_VALUES,
    VICTIM_FACT,
    VICTIM_ROWS,
    Seeded,
    cases,
    column_lines,
    kind_of,
    restore,
    seed,
    seed_services,
    spoil,
)
from tests.stored_values_paths import Ctx, check_paths

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"

SAMPLE: dict[str, tuple[str, ...]] = {
    "epoch": ("js-max-date", "js-min-date", "real-minus-inf", "real-fraction", "text", "not-utf8"),
    "json": ("not-json", "number-past-float", "deep", "lone-surrogate", "null", "blob", "not-utf8"),
    "enum": ("unknown", "blob", "not-utf8"),
    "flag": ("two", "text", "not-utf8"),
    "int": ("text", "real-1e20", "negative", "not-utf8"),
    "real": ("text", "inf", "not-utf8"),
    "text": ("blob", "not-utf8"),
    "blob": ("text", "not-utf8"),
}
"""The values every run tries (the heavy variant tries all of ``BAD_VALUES``)."""

VALUES = (
    BAD_VALUES
    if HEAVY
    else {
        kind: {k: v for k, v in values.items() if k in SAMPLE[kind]}
        for kind, values in BAD_VALUES.items()
    }
)
CASES = list(cases(VALUES))


def _first_per_kind() -> list[tuple[str, str, str, str]]:
    """One case per table and kind (its first column of that kind, the first sampled value),
    and one with text that is not UTF-8 (which sqlite3 itself failed to read)."""
    seen: set[tuple[str, str, bool]] = set()
    chosen = []
    for table, column, label, literal in cases(VALUES):
        key = (table, kind_of(metadata.tables[table].c[column]), label == "not-utf8")
        if key not in seen:
            seen.add(key)
            chosen.append((table, column, label, literal))
    return chosen


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Seeded, Ctx]]:
    folder = tmp_path_factory.mktemp("stored-values")
    seeded = seed(folder / "memory.sqlite")
    store = Store.open(seeded.path, clock=lambda: NOW)
    yield seeded, Ctx(seeded.path, store, seeded.ids, folder)
    store.close()


def _run(memory: tuple[Seeded, Ctx], table: str, column: str, literal: str, commands: bool) -> None:
    seeded, ctx = memory
    before = spoil(seeded.path, seeded, table, column, literal)
    try:
        failures = check_paths(ctx, table, commands=commands)
    finally:
        restore(seeded.path, seeded, table, before)
    assert not failures, "\n".join(str(f) for f in failures)


@pytest.mark.parametrize(
    ("table", "column", "label", "literal"), CASES, ids=[f"{t}.{c}={v}" for t, c, v, _ in CASES]
)
def test_a_value_of_the_wrong_kind_in_any_column_never_breaks_a_read(
    memory: tuple[Seeded, Ctx], table: str, column: str, label: str, literal: str
) -> None:
    _run(memory, table, column, literal, commands=HEAVY)


COMMAND_CASES = _first_per_kind()


@pytest.mark.skipif(HEAVY, reason="the heavy variant runs the commands in every case")
@pytest.mark.parametrize(
    ("table", "column", "label", "literal"),
    COMMAND_CASES,
    ids=[f"{t}.{c}={v}" for t, c, v, _ in COMMAND_CASES],
)
def test_the_commands_read_a_value_of_the_wrong_kind_too(
    memory: tuple[Seeded, Ctx], table: str, column: str, label: str, literal: str
) -> None:
    _run(memory, table, column, literal, commands=True)


def test_the_doc_lists_every_column_by_its_kind() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "stored-values.md").read_text(encoding="utf-8")
    table = doc[doc.index("| table | columns by kind |") :].splitlines()[2:]
    assert table == column_lines()


# --- text that is not UTF-8: read with U+FFFD, reported once, never rewritten ------------------


def test_text_that_is_not_utf8_reads_with_a_replacement_reported_once_never_rewritten(
    memory: tuple[Seeded, Ctx], tmp_path: Path
) -> None:
    path = tmp_path / "memory.sqlite"
    shutil.copyfile(memory[0].path, path)
    stored = b'"\xc3\xa9\xfe\xfe~"'  # "é", two stray bytes, "~" (unique to this test)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "UPDATE memory_facts SET value_json = CAST(? AS TEXT) WHERE namespace = ?"
            " AND key = ? AND superseded_by IS NULL",
            (stored, *VICTIM_FACT),
        )
    store = Store.open(path, clock=lambda: NOW)
    with capture_logs() as logs:
        try:
            for _ in range(2):
                got = tools.call("get_fact", {"namespace": "user.home", "key": "city"}, db=store)
                assert got.ok and "é\ufffd\ufffd~" in got.text, got.text
                with store.begin() as mem:
                    fact = mem.facts.get(*VICTIM_FACT)
                    assert fact is not None and fact.value == "é\ufffd\ufffd~"
                    listed = {f.key: f.value for f in mem.facts.list("*", include_expired=True)}
                    assert listed["city"] == "é\ufffd\ufffd~"
                    assert "é\ufffd\ufffd~" in mem.prefix.build(now=NOW).text
        finally:
            store.close()
    reports = [r for r in logs if r["event"] == "stored_value.read_leniently"]
    assert [(r["column"], r["stored"], r["read_as"]) for r in reports] == [
        ("value_json", repr(stored), repr('"é\ufffd\ufffd~"'))
    ]
    with closing(sqlite3.connect(path)) as conn:
        conn.text_factory = bytes
        kept = conn.execute(
            "SELECT value_json FROM memory_facts WHERE namespace = ? AND key = ?"
            " AND superseded_by IS NULL",
            VICTIM_FACT,
        ).fetchone()[0]
    assert kept == stored  # read, never rewritten


def test_the_async_store_reads_text_that_is_not_utf8_too(
    memory: tuple[Seeded, Ctx], tmp_path: Path
) -> None:
    path = tmp_path / "memory.sqlite"
    shutil.copyfile(memory[0].path, path)
    _set(path, "value_json", "CAST(x'22c3a9ff22' AS TEXT)")  # "é", a stray byte

    async def read() -> tuple[list[object], str]:
        store = await AsyncStore.open(path, clock=lambda: NOW)
        try:
            listed = await store.run(
                lambda m: [f.value for f in m.facts.list("*", include_expired=True)]
            )
            got = await store.call("get_fact", {"namespace": VICTIM_FACT[0], "key": VICTIM_FACT[1]})
            assert got.ok, got.text
            return listed, got.text
        finally:
            await store.close()

    listed, text = asyncio.run(read())
    assert "é\ufffd" in listed and "é\ufffd" in text


# --- far-off times: read as the nearest supported time, compared as such, never rewritten ----


def _stored(path: Path, column: str) -> object:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            f"SELECT {column} FROM memory_facts WHERE namespace = ? AND key = ?"
            " AND superseded_by IS NULL",
            VICTIM_FACT,
        ).fetchone()[0]


@pytest.fixture
def spoiled(memory: tuple[Seeded, Ctx], tmp_path: Path) -> Iterator[Path]:
    """A copy of the seeded memory of its own (these tests keep what they write)."""
    seeded, _ctx = memory
    path = tmp_path / "memory.sqlite"
    shutil.copyfile(seeded.path, path)
    yield path


def _set(path: Path, column: str, literal: str) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            f"UPDATE memory_facts SET {column} = {literal} WHERE namespace = ? AND key = ?"
            " AND superseded_by IS NULL",
            VICTIM_FACT,
        )


def test_javascripts_largest_date_as_valid_until_is_forever(
    spoiled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def careful(rows: object) -> object:
        raise AssertionError("a far-off time made a hot path read its rows again")

    monkeypatch.setattr(stored_values, "clean_named", careful)  # read once, as any other
    _set(spoiled, "valid_until", JS_MAX_DATE)
    store = Store.open(spoiled, clock=lambda: NOW)
    try:
        got = tools.call("get_fact", {"namespace": "user.home", "key": "city"}, db=store)
        assert got.ok, got.text
        with store.begin() as mem:
            fact = mem.facts.get(*VICTIM_FACT)
            assert fact is not None and fact.valid_until == MAX_INSTANT
            assert not fact.is_expired_at(NOW + timedelta(days=365 * 7000))
            listed = [f.key for f in mem.facts.list("*", now=NOW + timedelta(days=3000))]
            assert "city" in listed  # still valid: it expires never
            prefix = mem.prefix.build(now=NOW).text
            assert '"Berlin"' in prefix and "→ 9999-12-30T23:59:59.999Z" in prefix
    finally:
        store.close()
    assert _stored(spoiled, "valid_until") == int(JS_MAX_DATE)  # read, never rewritten


def test_javascripts_earliest_date_as_valid_until_has_expired(spoiled: Path) -> None:
    _set(spoiled, "valid_until", "-" + JS_MAX_DATE)
    store = Store.open(spoiled, clock=lambda: NOW)
    try:
        with store.begin() as mem:
            # Berlin expired long ago, so Paris, stored before it without end, holds now
            held = mem.facts.get(*VICTIM_FACT, include_expired=False)
            assert held is not None and held.value == "Paris"
            assert mem.facts.get(*VICTIM_FACT) == held
            listed = [f.value for f in mem.facts.list("*", now=NOW) if f.key == "city"]
            assert listed == ["Paris"]
            (current,) = [f for f in mem.facts.list("*", include_expired=True) if f.key == "city"]
            assert current.value == "Berlin" and current.valid_until == MIN_INSTANT
            prefix = mem.prefix.build(now=NOW).text
            assert '"Berlin"' not in prefix and '"Paris"' in prefix
    finally:
        store.close()


@pytest.mark.parametrize("literal", [JS_MAX_DATE, "1e20", "9e999", "'forever'"])
def test_a_far_off_time_survives_a_supersede_and_is_refused_by_an_import_naming_it(
    spoiled: Path, tmp_path: Path, literal: str
) -> None:
    """Superseding copies no time of the old version, so the old one keeps what it held. An
    export writes the value as stored; the import refuses it (line, table, column): it writes
    only what a service could have written, so nothing changes silently on the way."""
    _set(spoiled, "valid_until", literal)
    with closing(sqlite3.connect(spoiled)) as conn:
        stored = conn.execute(
            "SELECT valid_until FROM memory_facts WHERE valid_until IS NOT NULL"
            " AND namespace = 'user.home'"
        ).fetchone()[0]
    store = Store.open(spoiled, clock=lambda: NOW)
    try:
        with store.begin() as mem:
            new = mem.facts.store(*VICTIM_FACT, "Hamburg")
            assert new.valid_until is None
    finally:
        store.close()
    with closing(sqlite3.connect(spoiled)) as conn:
        old = conn.execute(
            "SELECT valid_until FROM memory_facts WHERE superseded_by = ?", (new.id,)
        ).fetchone()[0]
    assert old == stored  # the superseded version keeps its value as it was
    out = tmp_path / "export.jsonl"
    transfer.export(spoiled, out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:-1]]
    exported = [r["row"]["valid_until"] for r in rows if r["table"] == "memory_facts"]
    # an infinity as JSON has none: {"$real": "Infinity"}, which the import reads back as it
    assert stored in exported or (stored == float("inf") and {"$real": "Infinity"} in exported)
    target = tmp_path / "target.sqlite"
    migrate.upgrade(target, backup=False)
    with pytest.raises(ImportFormatError, match=r"memory_facts\.valid_until"):
        transfer.import_(target, out)


# --- PostgreSQL: its columns are typed, so only what they can hold (BIGINT past the calendar,
# an infinite DOUBLE PRECISION, text that is not JSON or no known enum value) --------------


@dataclass(frozen=True)
class PgMemory:
    store: Store
    ctx: Ctx
    keys: dict[str, dict[str, object]]  # table -> the victim row's primary key


def _pg_victims(store: Store) -> dict[str, dict[str, object]]:
    keys: dict[str, dict[str, object]] = {}
    with store.begin() as mem:
        raw = mem.raw()
        for table, where in VICTIM_ROWS.items():
            pk = [c.name for c in metadata.tables[table].primary_key.columns]
            found = raw.rows(
                f"SELECT {', '.join(pk)} FROM {table}{raw.where(where)} ORDER BY 1 LIMIT 1"
            )
            keys[table] = dict(zip(pk, found[0], strict=True))
    return keys


@pytest.fixture(scope="module")
def pg_memory(
    pg_layout: pg_support.Layout, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PgMemory]:
    store = Store.open(pg_layout.app_url, agent=pg_layout.new_agent(), clock=lambda: NOW)
    ids = seed_services(store)
    folder = tmp_path_factory.mktemp("stored-values-pg")
    yield PgMemory(store, Ctx(folder / "unused.sqlite", store, ids, folder), _pg_victims(store))
    store.close()


def _pg_update(
    store: Store, table: str, key: dict[str, object], sets: str, params: list[object]
) -> None:
    with store.begin() as mem:
        raw = mem.raw()
        cond = " AND ".join(f"{k} = {raw.mark}" for k in key)
        raw.run(f"UPDATE {table} SET {sets}{raw.where(cond)}", [*params, *key.values()])


PG_CASES = [c for c in cases(PG_BAD_VALUES) if c[0] in VICTIM_ROWS]


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("table", "column", "label", "literal"),
    PG_CASES,
    ids=[f"{t}.{c}={v}" for t, c, v, _ in PG_CASES],
)
def test_a_value_postgresql_holds_but_python_cannot_never_breaks_a_read(
    pg_memory: PgMemory, table: str, column: str, label: str, literal: str
) -> None:
    key = pg_memory.keys[table]
    with pg_memory.store.begin() as mem:
        raw = mem.raw()
        cond = " AND ".join(f"{k} = {raw.mark}" for k in key)
        before = raw.rows(f"SELECT {column} FROM {table}{raw.where(cond)}", list(key.values()))
    _pg_update(pg_memory.store, table, key, f"{column} = {literal}", [])
    try:
        failures = check_paths(pg_memory.ctx, table, commands=False, sqlite_only=False)
    finally:
        _pg_update(pg_memory.store, table, key, f"{column} = {raw.mark}", [before[0][0]])
    assert not failures, "\n".join(str(f) for f in failures)


def test_a_json_number_past_the_largest_float_is_read_as_its_text_by_every_path(
    memory: tuple[Seeded, Ctx],
) -> None:
    # '1e999' is JSON text Python reads as infinity: the prefix refused the whole memory
    # (`value: not JSON: inf`) and `facts list --json` wrote `Infinity`, which is not JSON
    literal = BAD_VALUES["json"]["number-past-float"]
    _run(memory, "memory_facts", "value_json", literal, commands=True)


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("memory_facts", "confidence"),
        ("memory_facts", "decay_tau_days"),
        ("memory_notes", "importance"),
    ],
)
@pytest.mark.parametrize("label", ["inf", "minus-inf"])
def test_an_infinite_real_is_read_as_the_largest_float_of_its_sign_by_every_path(
    memory: tuple[Seeded, Ctx], table: str, column: str, label: str
) -> None:
    # records held the infinity: `--json` wrote Infinity (not JSON), a tool's data too
    _run(memory, table, column, BAD_VALUES["real"][label], commands=True)


def test_a_pinned_fact_stored_with_an_infinite_negative_tau_stays_pinned(
    memory: tuple[Seeded, Ctx],
) -> None:
    seeded, ctx = memory
    before = spoil(seeded.path, seeded, "memory_facts", "decay_tau_days", "-9e999")
    try:
        with ctx.store.begin() as mem:
            fact = mem.facts.get(*VICTIM_FACT)
    finally:
        restore(seeded.path, seeded, "memory_facts", before)
    assert fact is not None and fact.pinned and fact.decay_tau_days == -sys.float_info.max

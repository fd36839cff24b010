"""Every float a REAL column can hold, infinities and NaN included (SQLite stores ``9e999`` as
infinity; PostgreSQL holds NaN too), through export and import, in every REAL column of the
tables the export writes: the export is JSON (no bare ``Infinity`` or ``NaN`` token, which no
JSON reader takes: the import refused that row as not JSON), its value reads back as the very
value stored, and the import either takes it (the same value stored, the export of the import
the same file, but the moment) or refuses the file naming the line, the table and the column
(a value no service writes, as an infinite confidence), and nothing is lost on the way."""

from __future__ import annotations

import io
import json
import math
import shutil
import sqlite3
import struct
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Float, text

from philont import migrate, transfer
from philont.db.engine import create_engine
from philont.transfer.format import export_tables
from philont.transfer.reader import Reader
from tests.pg_support import Layout
from tests.stored_values import seed

REALS = [(t.name, c.name) for t in export_tables() for c in t.c if isinstance(c.type, Float)]
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def test_the_tables_the_export_writes_have_real_columns() -> None:
    assert len(REALS) >= 5, REALS


@dataclass
class Backend:
    """A source holding a row in every table, how to set one value in it, and how to export
    it and import a file into a new target (returning that target's export)."""

    set_value: Callable[[str, str, dict[str, Any], float], object]
    export: Callable[[], str]
    import_export: Callable[[Path], str]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A row in every table; memory_meta only its schema record (a target keeps its own)."""
    path = seed(tmp_path_factory.mktemp("seed") / "memory.sqlite").path
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM memory_meta WHERE key <> 'schema_version'")
    return path


@pytest.fixture(scope="module")
def empty_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("target") / "memory.sqlite"
    migrate.upgrade(path, backup=False)
    return path


def _exported(db: object, **kw: Any) -> str:
    buf = io.StringIO()
    transfer.export(db, buf, **kw)  # type: ignore[arg-type]
    return buf.getvalue()


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, seeded: Path, empty_target: Path, tmp_path: Path
) -> Iterator[Backend]:
    source = tmp_path / "source.sqlite"
    shutil.copyfile(seeded, source)
    if request.param == "sqlite":

        def set_sqlite(table: str, column: str, key: dict[str, Any], value: float) -> object:
            where = " AND ".join(f'"{k}" = ?' for k in key)
            with closing(sqlite3.connect(source)) as conn, conn:
                update = f'UPDATE "{table}" SET "{column}" = ? WHERE {where}'
                with suppress(sqlite3.IntegrityError):  # NaN: SQLite stores NULL (NOT NULL: none)
                    conn.execute(update, (value, *key.values()))
                select = f'SELECT "{column}" FROM "{table}" WHERE {where}'
                found = conn.execute(select, (*key.values(),))
                return found.fetchone()[0]

        def import_sqlite(file: Path) -> str:
            target = file.with_suffix(".sqlite")
            shutil.copyfile(empty_target, target)
            transfer.import_(target, file)
            return _exported(target)

        yield Backend(set_sqlite, lambda: _exported(source), import_sqlite)
        return
    layout: Layout = request.getfixturevalue("pg_layout")
    agent = layout.new_agent()
    transfer.import_(layout.url, io.StringIO(_exported(source)), agent=agent)
    engine = create_engine(layout.url)  # the owner's: every agent's rows

    def set_pg(table: str, column: str, key: dict[str, Any], value: float) -> object:
        where = " AND ".join(f'"{k}" = :k_{k}' for k in key)
        params = {f"k_{k}": v for k, v in key.items()} | {"v": value, "agent": agent}
        scope = "agent_id = (SELECT id FROM philont_agents WHERE name = :agent)"
        with engine.begin() as conn:
            conn.execute(
                text(f'UPDATE "{table}" SET "{column}" = :v WHERE {scope} AND {where}'), params
            )
            found = conn.execute(
                text(f'SELECT "{column}" FROM "{table}" WHERE {scope} AND {where}'), params
            )
            return found.scalar()

    def import_pg(file: Path) -> str:
        other = layout.new_agent()
        transfer.import_(layout.url, file, agent=other)
        return _exported(layout.url, agent=other)

    try:
        yield Backend(set_pg, lambda: _exported(layout.url, agent=agent), import_pg)
    finally:
        engine.dispose()


def _refuse_constant(token: str) -> float:
    raise ValueError(f"{token} is not JSON")


def _same(a: object, b: object) -> bool:
    """The same stored value, bit for bit (NaN is NaN, -0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or struct.pack(">d", a) == struct.pack(">d", b)
    return a == b and type(a) is type(b)


def _without_moment(export: str) -> list[str]:
    lines = export.splitlines()
    header = json.loads(lines[0])
    header.pop("exported_at")
    return [json.dumps(header), *lines[1:]]


@contextmanager
def _file(tmp_path: Path, content: str) -> Iterator[Path]:
    file = tmp_path / "export.jsonl"
    file.write_text(content, encoding="utf-8")
    try:
        yield file
    finally:
        file.unlink()


@pytest.mark.parametrize(("table", "column"), REALS, ids=[f"{t}.{c}" for t, c in REALS])
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=st.floats())
@example(value=math.inf)
@example(value=-math.inf)
@example(value=math.nan)
@example(value=0.25)
def test_every_float_is_exported_as_json_and_read_back_or_refused_by_name(
    value: float, table: str, column: str, backend: Backend, tmp_path: Path
) -> None:
    before = backend.export()
    known = {t.name: t for t in export_tables()}
    rows = [json.loads(line) for line in before.splitlines()[1:-1]]
    first = next(row for row in rows if row["table"] == table)
    key = {c.name: first["row"][c.name] for c in known[table].primary_key.columns}
    stored = backend.set_value(table, column, key, value)

    export = backend.export()

    lines = export.splitlines()
    for line in lines:  # strict JSON: no Infinity or NaN token
        json.loads(line, parse_constant=_refuse_constant)
    with _file(tmp_path, export) as file, file.open(encoding="utf-8") as fh:
        read = [(n, r) for n, name, r in Reader(fh, known) if name == table]
    (number, row), *_ = [(n, r) for n, r in read if all(r[k] == v for k, v in key.items())]
    assert _same(row[column], stored), (row[column], stored)

    with _file(tmp_path, export) as file:
        try:
            again = backend.import_export(file)
        except transfer.ImportFormatError as exc:
            assert exc.line_number == number, exc
            assert f"{table}.{column}" in exc.reason, exc
            return
    assert isinstance(stored, float | int | None) and (stored is None or math.isfinite(stored)), (
        f"a {stored!r} was imported"
    )
    assert _without_moment(again) == _without_moment(export)

"""Every float a REAL column can hold, infinities and NaN included (SQLite stores ``9e999`` as
infinity; PostgreSQL holds NaN too), through export and import, in every REAL column of the
tables the export writes: the export is JSON (no bare ``Infinity`` or ``NaN`` token, which no
JSON reader takes: the import refused that row as not JSON), its value reads back as the very
value stored (-0.0 as 0.0: an SQLite REAL holds no sign of zero), and the import either takes
it (the same value stored, the export of the import the same file, but the moment) or refuses
the file naming the line, the table and the column (a value no service writes, as an infinite
confidence), and nothing is lost on the way; and from either backend to the other."""

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
@example(value=-0.0)
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
    # the value stored, but -0.0 as 0.0: an SQLite REAL cannot hold the sign, and an export
    # is the same whichever backend holds the memory
    expected = 0.0 if isinstance(stored, float) and stored == 0.0 else stored
    assert _same(row[column], expected), (row[column], stored)

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


# --- across backends --------------------------------------------------------------------------

EDGES = [
    -0.0,
    0.0,
    5e-324,  # the least subnormal
    -5e-324,
    2.2250738585072009e-308,  # the largest subnormal
    2.2250738585072014e-308,  # the least normal
    1.7976931348623157e308,  # the largest float
    -1.7976931348623157e308,
    2.0**53 + 2,  # an integer past 2**53 as a float
    1e300,
    0.1,
    -1.5,
]


@dataclass
class Side:
    """One backend of a transfer: a source holding a row in every table (one cell of which is
    set), its export, and an import of a file into a new target with that target's export."""

    set_value: Callable[[str, str, dict[str, Any], float], object]
    export: Callable[[], str]
    import_export: Callable[[Path], str]


@pytest.fixture
def sides(
    request: pytest.FixtureRequest, seeded: Path, empty_target: Path, tmp_path: Path
) -> dict[str, Side]:
    made: dict[str, Side] = {}
    for name in ("sqlite", "postgres"):
        made[name] = _side(name, request, seeded, empty_target, tmp_path / name)
    return made


def _side(
    name: str, request: pytest.FixtureRequest, seeded: Path, empty_target: Path, where: Path
) -> Side:
    where.mkdir()
    source = where / "source.sqlite"
    shutil.copyfile(seeded, source)
    if name == "sqlite":

        def set_sqlite(table: str, column: str, key: dict[str, Any], value: float) -> object:
            cond = " AND ".join(f'"{k}" = ?' for k in key)
            with closing(sqlite3.connect(source)) as conn, conn:
                conn.execute(
                    f'UPDATE "{table}" SET "{column}" = ? WHERE {cond}', (value, *key.values())
                )
                found = conn.execute(
                    f'SELECT "{column}" FROM "{table}" WHERE {cond}', (*key.values(),)
                )
                return found.fetchone()[0]

        def import_sqlite(file: Path) -> str:
            target = where / f"target-{len(list(where.iterdir()))}.sqlite"
            shutil.copyfile(empty_target, target)
            transfer.import_(target, file)
            return _exported(target)

        return Side(set_sqlite, lambda: _exported(source), import_sqlite)
    layout: Layout = request.getfixturevalue("pg_layout")
    agent = layout.new_agent()
    transfer.import_(layout.url, io.StringIO(_exported(source)), agent=agent)

    def set_pg(table: str, column: str, key: dict[str, Any], value: float) -> object:
        cond = " AND ".join(f'"{k}" = :k_{k}' for k in key)
        params = {f"k_{k}": v for k, v in key.items()} | {"v": value, "agent": agent}
        scope = "agent_id = (SELECT id FROM philont_agents WHERE name = :agent)"
        engine = create_engine(layout.url)  # the owner's: every agent's rows
        try:
            with engine.begin() as conn:
                conn.execute(
                    text(f'UPDATE "{table}" SET "{column}" = :v WHERE {scope} AND {cond}'), params
                )
                found = conn.execute(
                    text(f'SELECT "{column}" FROM "{table}" WHERE {scope} AND {cond}'), params
                )
                return found.scalar()
        finally:
            engine.dispose()

    def import_pg(file: Path) -> str:
        other = layout.new_agent()
        transfer.import_(layout.url, file, agent=other)
        return _exported(layout.url, agent=other)

    return Side(set_pg, lambda: _exported(layout.url, agent=agent), import_pg)


def _cell(export: str, table: str, key: dict[str, Any], column: str) -> object:
    for line in export.splitlines()[1:-1]:
        entry = json.loads(line)
        if entry["table"] == table and all(entry["row"][k] == v for k, v in key.items()):
            return entry["row"][column]
    raise AssertionError(f"no {table} row {key}")


@pytest.mark.postgres
@pytest.mark.parametrize("direction", ["sqlite->postgres", "postgres->sqlite"])
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cell=st.sampled_from(REALS),
    value=st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EDGES),
)
@example(cell=("memory_notes", "importance"), value=-0.0)
def test_a_real_moves_between_backends_bit_for_bit(
    cell: tuple[str, str], value: float, direction: str, sides: dict[str, Side], tmp_path: Path
) -> None:
    """A REAL exported from one backend and imported into the other is the same bits in the
    target's export (the file's digest is the same but the moment and the row order): an
    export is the same whichever backend holds the memory. PostgreSQL kept -0.0, which an
    SQLite REAL column cannot hold (it stores 0), so -0.0 through SQLite came back 0.0."""
    table, column = cell
    source, target = (sides[name] for name in direction.split("->"))
    known = {t.name: t for t in export_tables()}
    before = source.export()
    first = next(
        json.loads(line)["row"]
        for line in before.splitlines()[1:-1]
        if json.loads(line)["table"] == table
    )
    key = {c.name: first[c.name] for c in known[table].primary_key.columns}
    source.set_value(table, column, key, value)
    export = source.export()
    sent = _cell(export, table, key, column)
    assert isinstance(sent, float | int), sent
    assert sent == value, (sent, value)  # the value, whichever sign of zero the backend holds
    with _file(tmp_path, export) as file:
        try:
            again = target.import_export(file)
        except transfer.ImportFormatError as refused:  # a value no service writes there
            with pytest.raises(transfer.ImportFormatError) as too:  # nor here
                source.import_export(file)
            assert (too.value.line_number, too.value.reason) == (
                refused.line_number,
                refused.reason,
            )
            return
    assert _same(float(_cell(again, table, key, column)), float(sent)), (sent, again)
    with _file(tmp_path, again) as file:  # and back: the source's own export, cell for cell
        back = source.import_export(file)
    assert _same(float(_cell(back, table, key, column)), float(sent))

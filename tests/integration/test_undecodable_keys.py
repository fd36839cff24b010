"""A row whose key was stored as text that is not UTF-8 (another program, a hand edit) is read
with U+FFFD in place of the bad bytes (docs/stored-values.md), so its key names no row: an
UPDATE or DELETE by it matches nothing. Through the ORM that was SQLAlchemy's untyped
``StaleDataError`` (storing a new version of such a fact, updating a skill) or a warning and
nothing deleted (deleting a skill, which then said it had); a Core write said nothing. Now
every write keyed by such a value, the ORM's and Core's, in every table, is
:class:`UnreadableRowError` naming the table and the key column (the referred-to key for a
write of the rows that refer to it), and the stored bytes stay as they were. Generated from
the models: every text column of a primary key, every reference to one.
SQLite only: PostgreSQL refuses to store such text."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import bindparam, delete, literal_column, select, text, update
from sqlalchemy.orm import Mapper
from sqlalchemy.orm.attributes import flag_modified

from philont import tools
from philont.aio import AsyncStore
from philont.db.base import Base
from philont.db.schema import metadata
from philont.errors import UnreadableRowError
from philont.store import Store
from tests.stored_values import NOW, VICTIM_FACT, Seeded, seed


def _text_keys() -> list[tuple[str, str]]:
    assert metadata.tables  # every model imported (philont.db.schema)
    found = []
    for mapper in Base.registry.mappers:
        for column in mapper.primary_key:
            if column.type.python_type is str:
                found.append((mapper.local_table.name, column.name))
    return sorted(found)


TEXT_KEYS = _text_keys()


def _mapper(table: str) -> Mapper[Any]:
    return next(m for m in Base.registry.mappers if m.local_table.name == table)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    return seed(tmp_path_factory.mktemp("undecodable-keys") / "memory.sqlite")


@pytest.fixture
def copy(template: Seeded, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "memory.sqlite"
    shutil.copyfile(template.path, path)
    yield path


def _spoil(path: Path, table: str, column: str, rowid: int) -> bytes:
    """Append a stray byte 0xff to ``column`` of the row: its text is no longer UTF-8."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            f'UPDATE "{table}" SET "{column}" = CAST(CAST("{column}" AS BLOB) || x\'ff\' AS TEXT)'
            " WHERE rowid = ?",
            (rowid,),
        )
    return _stored(path, table, rowid)


def _stored(path: Path, table: str, rowid: int) -> bytes:
    """The row as stored, every value as its bytes (what a write must not change)."""
    with closing(sqlite3.connect(path)) as conn:
        conn.text_factory = bytes
        row = conn.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone()
    return repr(row).encode()


@pytest.mark.parametrize("rows", ["alone", "with-another"])
@pytest.mark.parametrize("write", ["update", "delete"])
@pytest.mark.parametrize(("table", "column"), TEXT_KEYS, ids=[f"{t}.{c}" for t, c in TEXT_KEYS])
def test_an_orm_write_of_a_row_whose_key_is_not_utf8_is_refused_by_name(
    template: Seeded, copy: Path, table: str, column: str, write: str, rows: str
) -> None:
    """Refused before its statement runs: alone, and with another row in the same flush (one
    ``executemany``), neither written."""
    rowid = template.victims[table]
    before = _spoil(copy, table, column, rowid)
    mapper = _mapper(table)
    others = [a.key for a in mapper.column_attrs if not a.columns[0].primary_key]
    if write == "update" and not others:
        pytest.skip("a table of keys only: nothing to update")
    with closing(sqlite3.connect(copy)) as conn:  # the first other row (no row refers to it)
        another = conn.execute(
            f'SELECT min(rowid) FROM "{table}" WHERE rowid != ?', (rowid,)
        ).fetchone()[0]
    if rows == "with-another" and another is None:
        pytest.skip("the table holds one row")
    wanted = [rowid] if rows == "alone" else [rowid, another]
    other = _stored(copy, table, another) if another is not None else b""
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with pytest.raises(UnreadableRowError, match="not UTF-8") as raised, store.begin() as mem:
            found = mem.session.scalars(
                select(mapper.class_).where(literal_column("rowid").in_(wanted))
            ).all()
            assert len(found) == len(wanted)
            for row in found:
                if write == "update":
                    flag_modified(row, others[0])  # written again as it was read
                else:
                    mem.session.delete(row)
            mem.session.flush()
    finally:
        store.close()
    assert raised.value.details["table"] == table and raised.value.details["column"] == column
    assert _stored(copy, table, rowid) == before
    if another is not None:
        assert _stored(copy, table, another) == other


@pytest.mark.parametrize("write", ["update", "delete"])
@pytest.mark.parametrize(("table", "column"), TEXT_KEYS, ids=[f"{t}.{c}" for t, c in TEXT_KEYS])
def test_a_core_write_keyed_by_such_a_key_is_refused_by_name(
    template: Seeded, copy: Path, table: str, column: str, write: str
) -> None:
    """A Core ``update()``/``delete()`` (as services write) keyed by the value read matched no
    row and said nothing: the calendar reported an update it never made."""
    refused = _core_write(template, copy, (table, column), (table, column), write)
    assert (refused["table"], refused["column"]) == (table, column)


def _core_write(
    template: Seeded, copy: Path, read: tuple[str, str], written: tuple[str, str], write: str
) -> dict[str, Any]:
    """Spoil the key ``read`` (table, column) of its table's victim row, read it, and update
    or delete the rows of ``written`` (table, column) keyed by what was read: the details of
    the refusal (the spoiled row as it was)."""
    (parent, key), (table, column) = read, written
    rowid = template.victims[parent]
    before = _spoil(copy, parent, key, rowid)
    t, p = metadata.tables[table], metadata.tables[parent]
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with pytest.raises(UnreadableRowError, match="not UTF-8") as raised, store.begin() as mem:
            value = mem.session.execute(
                select(p.c[key]).where(literal_column("rowid") == rowid)
            ).scalar_one()
            kind = update(t).values({t.c[column]: t.c[column]}) if write == "update" else delete(t)
            mem.session.execute(kind.where(t.c[column] == value))
    finally:
        store.close()
    assert _stored(copy, parent, rowid) == before
    return raised.value.details


def _references() -> list[tuple[str, str, str, str]]:
    """Every column that refers to a text key of another table and is not its own row's key:
    (table, column, referenced table, referenced column)."""
    found = []
    for table in metadata.sorted_tables:
        for column in table.c:
            for key in column.foreign_keys:
                if not column.primary_key and key.column.type.python_type is str:
                    found.append((table.name, column.name, key.column.table.name, key.column.name))
    return sorted(found)


REFERENCES = _references()


@pytest.mark.parametrize("write", ["update", "delete"])
@pytest.mark.parametrize(
    ("table", "column", "parent", "key"), REFERENCES, ids=[f"{t}.{c}" for t, c, _, _ in REFERENCES]
)
def test_a_write_of_the_rows_that_refer_to_such_a_key_names_the_row_it_keys(
    template: Seeded, copy: Path, table: str, column: str, parent: str, key: str, write: str
) -> None:
    """A delete that removes a row's dependents first (a skill's revisions, then the skill)
    was refused at that first statement, naming the dependents' table: the refusal names the
    row the caller asked to write (the skill) and its key column."""
    refused = _core_write(template, copy, (parent, key), (table, column), write)
    assert (refused["table"], refused["column"]) == (parent, key)


TEXT_WRITES = [
    "DELETE FROM memory_calendar WHERE id = :id",
    "UPDATE OR IGNORE memory_calendar SET title = 'x' WHERE id = :id",
    '/* a host\'s */ -- note\n update "main"."memory_calendar" SET title = \'x\' WHERE id = :id',
]


@pytest.mark.parametrize("statement", TEXT_WRITES)
def test_a_text_statement_keyed_by_such_a_key_is_refused_naming_its_table(
    template: Seeded, copy: Path, statement: str
) -> None:
    """A statement written as text has no compiled WHERE clause to name the column from: its
    table is read from the text (after comments, through ``OR IGNORE`` and ``main.``)."""
    rowid = template.victims["memory_calendar"]
    before = _spoil(copy, "memory_calendar", "id", rowid)
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with pytest.raises(UnreadableRowError, match="not UTF-8") as raised, store.begin() as mem:
            value = mem.session.execute(
                text("SELECT id FROM memory_calendar WHERE rowid = :r"), {"r": rowid}
            ).scalar_one()
            mem.session.execute(text(statement), {"id": value})
    finally:
        store.close()
    assert raised.value.details["table"] == "memory_calendar"
    assert raised.value.details["column"] is None
    assert _stored(copy, "memory_calendar", rowid) == before


def test_updating_an_event_found_by_its_external_ref_is_refused(
    template: Seeded, copy: Path
) -> None:
    rowid = template.victims["memory_calendar"]
    before = _spoil(copy, "memory_calendar", "id", rowid)
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with pytest.raises(UnreadableRowError, match="memory_calendar"), store.begin() as mem:
            mem.calendar.create("New title", NOW, timezone="UTC", external_ref="ext-1")
    finally:
        store.close()
    assert _stored(copy, "memory_calendar", rowid) == before


def test_storing_a_new_version_of_such_a_fact_is_refused_and_changes_nothing(
    template: Seeded, copy: Path
) -> None:
    rowid = template.victims["memory_facts"]
    before = _spoil(copy, "memory_facts", "id", rowid)
    with closing(sqlite3.connect(copy)) as conn:
        count = conn.execute("SELECT count(*) FROM memory_facts").fetchone()[0]
    store = Store.open(copy, clock=lambda: NOW)
    try:
        for write in (
            lambda m: m.facts.store(*VICTIM_FACT, "Hamburg"),
            lambda m: m.facts.store(*VICTIM_FACT, "Hamburg", confidence=0.5),
        ):
            with pytest.raises(UnreadableRowError, match="memory_facts"), store.begin() as mem:
                write(mem)
        args = {"namespace": VICTIM_FACT[0], "key": VICTIM_FACT[1], "value": "Hamburg"}
        result = tools.call("store_fact", args, db=store)
        assert not result.ok and result.error_code == "unreadable_row", result.text
    finally:
        store.close()

    async def in_async() -> None:
        astore = await AsyncStore.open(copy, clock=lambda: NOW)
        try:
            with pytest.raises(UnreadableRowError):
                await astore.run(lambda m: m.facts.store(*VICTIM_FACT, "Hamburg"))
        finally:
            await astore.close()

    asyncio.run(in_async())
    assert _stored(copy, "memory_facts", rowid) == before
    with closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("SELECT count(*) FROM memory_facts").fetchone()[0] == count


def test_updating_or_deleting_such_a_skill_is_refused(template: Seeded, copy: Path) -> None:
    """The delete used to say it had deleted the skill (SQLAlchemy warned, nothing was)."""
    rowid = template.victims["memory_skills"]
    before = _spoil(copy, "memory_skills", "id", rowid)
    store = Store.open(copy, clock=lambda: NOW)
    try:
        for write in (
            lambda m: m.skills.update("brew-tea", description="brew it"),
            lambda m: m.skills.delete("brew-tea"),
        ):
            # the delete is refused at its first statement (the skill's revisions, by the
            # skill's id), naming the skill, which the caller asked to delete
            with (
                pytest.raises(
                    UnreadableRowError, match=r"^memory_skills row .* stored id"
                ) as raised,
                store.begin() as mem,
            ):
                write(mem)
            assert raised.value.details["table"] == "memory_skills"
            assert raised.value.details["column"] == "id"
        with store.begin() as mem:  # the others are written as ever
            assert mem.skills.update("fold-paper", description="fold it").description == "fold it"
    finally:
        store.close()
    assert _stored(copy, "memory_skills", rowid) == before


def _other_texts() -> list[tuple[str, str]]:
    """Every text column that is not a key, of a table the ORM writes."""
    found = []
    for mapper in Base.registry.mappers:
        for attr in mapper.column_attrs:
            column = attr.columns[0]
            if not column.primary_key and column.type.python_type is str:
                found.append((mapper.local_table.name, column.name))
    return sorted(found)


OTHER_TEXTS = _other_texts()


def _column_bytes(path: Path, table: str, column: str, rowid: int) -> object:
    with closing(sqlite3.connect(path)) as conn:
        conn.text_factory = bytes
        return conn.execute(
            f'SELECT "{column}" FROM "{table}" WHERE rowid = ?', (rowid,)
        ).fetchone()


@pytest.mark.parametrize(("table", "column"), OTHER_TEXTS, ids=[f"{t}.{c}" for t, c in OTHER_TEXTS])
def test_a_write_of_another_column_keeps_the_bytes_of_one_that_is_not_utf8(
    template: Seeded, copy: Path, table: str, column: str
) -> None:
    """Such text elsewhere in the row (a fact's namespace or key, a skill's name) does not keep
    the row from being written by its key; the write sets only what it changes, so the stored
    bytes stay (never the U+FFFD they were read as)."""
    rowid = template.victims[table]
    _spoil(copy, table, column, rowid)
    before = _column_bytes(copy, table, column, rowid)
    mapper = _mapper(table)
    others = [
        a.key
        for a in mapper.column_attrs
        if not a.columns[0].primary_key and a.columns[0].name != column
    ]
    if not others:
        pytest.skip("no other column to write")
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with store.begin() as mem:
            row = mem.session.scalars(
                select(mapper.class_).where(literal_column("rowid") == rowid)
            ).one()
            flag_modified(row, others[0])
            mem.session.flush()
    finally:
        store.close()
    assert _column_bytes(copy, table, column, rowid) == before


READS = {
    "memory_facts": lambda m: m.facts.get(*VICTIM_FACT),
    "memory_skills": lambda m: m.skills.get("brew-tea"),
}


@pytest.mark.parametrize("table", sorted(READS))
def test_reading_such_a_row_answers_and_refreshes_nothing(
    template: Seeded, copy: Path, table: str
) -> None:
    """A read's access-time refresh and access-log row are writes keyed by the id read with
    U+FFFD: the read was refused (unreadable_row) for a side effect. Now it answers, and the
    row and the access log stay as they were."""
    rowid = template.victims[table]
    before = _spoil(copy, table, "id", rowid)
    with closing(sqlite3.connect(copy)) as conn:
        logged = conn.execute("SELECT count(*) FROM memory_access_log").fetchone()[0]
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with store.begin() as mem:
            found = READS[table](mem)
        assert found is not None and "\ufffd" in found.id
        if table == "memory_facts":
            args = {"namespace": VICTIM_FACT[0], "key": VICTIM_FACT[1]}
            result = tools.call("get_fact", args, db=store)
            assert result.ok, result.text
    finally:
        store.close()
    assert _stored(copy, table, rowid) == before
    with closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("SELECT count(*) FROM memory_access_log").fetchone()[0] == logged


def _another(path: Path, table: str, rowid: int) -> int:
    """The first row of ``table`` other than ``rowid``."""
    with closing(sqlite3.connect(path)) as conn:
        found = conn.execute(
            f'SELECT min(rowid) FROM "{table}" WHERE rowid != ?', (rowid,)
        ).fetchone()[0]
    if found is None:
        pytest.skip("the table holds one row")
    return int(found)


def _read(mem: Any, table: str, column: str, rowid: int) -> str:
    t = metadata.tables[table]
    value: str = mem.session.execute(
        select(t.c[column]).where(literal_column("rowid") == rowid)
    ).scalar_one()
    return value


@pytest.mark.parametrize("write", ["update", "delete"])
@pytest.mark.parametrize(("table", "column"), TEXT_KEYS, ids=[f"{t}.{c}" for t, c in TEXT_KEYS])
def test_a_write_keyed_by_such_a_key_and_a_good_one_is_refused_and_changes_neither(
    template: Seeded, copy: Path, table: str, column: str, write: str
) -> None:
    """``IN (bad, good)`` changed the good key's row alone and said nothing of the bad key,
    which addressed nothing (the statement's row count was not 0): each key is judged alone,
    before the statement runs."""
    rowid = template.victims[table]
    another = _another(copy, table, rowid)
    before = _spoil(copy, table, column, rowid)
    other = _stored(copy, table, another)
    t = metadata.tables[table]
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with pytest.raises(UnreadableRowError, match="not run") as raised, store.begin() as mem:
            bad, good = _read(mem, table, column, rowid), _read(mem, table, column, another)
            kind = update(t).values({t.c[column]: t.c[column]}) if write == "update" else delete(t)
            mem.session.execute(kind.where(t.c[column].in_([bad, good])))
    finally:
        store.close()
    assert raised.value.details["id"] == bad
    assert _stored(copy, table, rowid) == before
    assert _stored(copy, table, another) == other


def test_a_refused_executemany_changed_nothing_even_when_the_host_commits(
    template: Seeded, copy: Path
) -> None:
    """One statement run for a bad key and a good one (``executemany``): it said "nothing was
    changed" after the good key's row was deleted, which a host that catches the refusal and
    commits made true no more. It is refused before it runs."""
    rowid = template.victims["memory_calendar"]
    another = _another(copy, "memory_calendar", rowid)
    _spoil(copy, "memory_calendar", "id", rowid)
    other = _stored(copy, "memory_calendar", another)
    t = metadata.tables["memory_calendar"]
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with store.begin() as mem:
            keys = [_read(mem, "memory_calendar", "id", r) for r in (rowid, another)]
            with pytest.raises(UnreadableRowError, match="nothing of it was changed"):
                mem.session.connection().execute(
                    delete(t).where(t.c.id == bindparam("k")), [{"k": k} for k in keys]
                )
    finally:
        store.close()
    assert _stored(copy, "memory_calendar", another) == other


@pytest.mark.parametrize("stored", ["as-text", "nowhere"])
@pytest.mark.parametrize("write", ["update", "delete"])
@pytest.mark.parametrize(("table", "column"), TEXT_KEYS, ids=[f"{t}.{c}" for t, c in TEXT_KEYS])
def test_a_write_returning_rows_is_judged_by_what_is_stored(
    template: Seeded, copy: Path, table: str, column: str, write: str, stored: str
) -> None:
    """``UPDATE ... RETURNING`` has no row count when its statement has run (sqlite3 counts
    the rows as they are read), so it was refused even where a row does store the text read
    with U+FFFD (written as such: U+FFFD is a character): that row is written and returned;
    where none does, the write is refused."""
    if stored == "as-text" and (
        table == "memory_meta" or metadata.tables[table].c[column].foreign_keys
    ):
        pytest.skip("another row cannot take that key (a reference; the schema's version)")
    rowid = template.victims[table]
    another = _another(copy, table, rowid)
    before = _spoil(copy, table, column, rowid)
    if stored == "as-text":  # the other row's key: the victim's, read with U+FFFD, as text
        with closing(sqlite3.connect(copy)) as conn, conn:
            (raw,) = conn.execute(
                f'SELECT CAST("{column}" AS BLOB) FROM "{table}" WHERE rowid = ?', (rowid,)
            ).fetchone()
            conn.execute(
                f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?',
                (raw.decode("utf-8", "replace"), another),
            )
    t = metadata.tables[table]
    store = Store.open(copy, clock=lambda: NOW)
    try:
        with store.begin() as mem:
            value = _read(mem, table, column, rowid)
            kind = update(t).values({t.c[column]: t.c[column]}) if write == "update" else delete(t)
            stmt = kind.where(t.c[column] == value).returning(t.c[column])
            if stored == "nowhere":
                with pytest.raises(UnreadableRowError, match="not run"):
                    mem.session.connection().execute(stmt)
            else:
                assert mem.session.connection().execute(stmt).scalars().all() == [value]
    finally:
        store.close()
    assert _stored(copy, table, rowid) == before

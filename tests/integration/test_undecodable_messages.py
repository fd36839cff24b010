"""A damaged file whose SQLite error quotes bytes that are not UTF-8.

SQLite names a damaged schema's table in its message (``malformed database schema (NAME)``),
and when the name's bytes are not UTF-8 Python's sqlite3 raises ``UnicodeDecodeError``
decoding the message, instead of the ``DatabaseError``: a restore of such a backup, `philont
stats` and `Store.open` ended in a traceback (CI: a restore test whose corrupt backup's random
bytes happened to land there); the typing at the edges that followed left every ``except
sqlite3.DatabaseError`` of the way blind to it (a backup's verification, an upgrade's look at
the file: "failed: UnicodeDecodeError"). Every connection philont opens is now
``philont.db.connections``'s, which raises it as the ``DatabaseError`` SQLite reported.
Generated: any bytes that are not UTF-8 in the name, through every entry point that reads
such a file, handled as the same damage with a name that is UTF-8."""

from __future__ import annotations

import ast
import functools
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import Store, migrate
from philont.backup import backup, restore, verify
from philont.cli.inspect import _sqlite_stats
from philont.db import connections
from philont.db.checkpoint import Checkpointer
from philont.db.engine import file_kind
from philont.errors import PhilontError
from philont.transfer import export, import_
from tests.support import examples, is_utf8

ROOT = Path(__file__).resolve().parents[2]

NOT_UTF8 = st.binary(min_size=4, max_size=4).filter(lambda b: not is_utf8(_quoted(b)))


def _quoted(name: bytes) -> bytes:
    """What SQLite's message quotes of the name ``name``: up to its first NUL (a C string)."""
    return name.partition(b"\0")[0]


def _damaged(path: Path, name: bytes) -> Path:
    """A database whose one table's name is ``name`` and whose schema SQLite cannot parse."""
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE zzqq(a)")
        conn.commit()
    data = bytearray(path.read_bytes())
    at = data.find(b"zzqq")
    data[at : at + 4] = name
    at = data.find(b"CREATE TABLE")
    data[at : at + 12] = b"CREATE TABLX"
    path.write_bytes(bytes(data))
    raised = sqlite3.DatabaseError if is_utf8(_quoted(name)) else UnicodeDecodeError
    with pytest.raises(raised), closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode").fetchone()  # what Python's sqlite3 does with it
    return path


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=NOT_UTF8)
def test_a_damaged_file_whose_message_is_not_utf8_is_refused_typed(
    tmp_path: Path, name: bytes
) -> None:
    bad = _damaged(tmp_path / "bad.sqlite", name)
    assert file_kind(bad) == "damaged"
    with pytest.raises(PhilontError):
        Store.open(bad)
    live = tmp_path / "live" / "memory.sqlite"
    with pytest.raises(PhilontError):
        restore(bad, live)
    assert not live.exists()


@pytest.mark.parametrize("args", [["stats"], ["facts", "list"], ["restore", "{bad}"]], ids=str)
def test_the_command_line_says_it_in_one_line(tmp_path: Path, args: list[str]) -> None:
    bad = _damaged(tmp_path / "bad.sqlite", b"\x83\x84\x85\x86")
    db = bad if args[0] != "restore" else tmp_path / "live.sqlite"
    argv = [a.format(bad=bad) for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "philont", *argv, "--db", str(db)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("error (")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]


def _checkpoint(path: Path, _sound: Path) -> int:
    """One run of the background checkpointer's thread on ``path``, in this thread."""
    checkpointer = Checkpointer(path)
    checkpointer._wake.set()
    checkpointer._run()  # a failure is logged and ends the run
    return checkpointer.runs


_SOUND = tempfile.TemporaryDirectory()


@functools.cache
def _sound() -> Path:
    """A backup of a sound, empty store, and its export beside it (``.jsonl``): read only."""
    live = Path(_SOUND.name) / "memory.sqlite"
    Store.open(live).close()
    export(live, live.with_suffix(".jsonl"))
    return backup(live)


def _on(use: Callable[[connections.Connection], object]) -> Callable[[Path, Path], object]:
    """An entry that opens a philont connection on the damaged file and ``use``s it."""

    def entry(bad: Path, _sound: Path) -> object:
        with closing(connections.connect(bad)) as conn:
            return use(conn)

    return entry


ENTRIES: dict[str, Callable[[Path, Path], object]] = {
    "file_kind": lambda bad, _: file_kind(bad),
    "Store.open": lambda bad, _: Store.open(bad).close(),
    "Store.open read_only": lambda bad, _: Store.open(bad, read_only=True).close(),
    "backup.verify": lambda bad, _: verify(bad),
    "backup": lambda bad, _: backup(bad),
    "restore from it": lambda bad, _: restore(bad, bad.parent / "live" / "memory.sqlite"),
    "restore over it": lambda bad, sound: restore(sound, bad),
    "migrate.status": lambda bad, _: migrate.status(bad),
    "migrate.check": lambda bad, _: migrate.check(bad),
    "migrate.upgrade": lambda bad, _: migrate.upgrade(bad),
    "export": lambda bad, _: export(bad, bad.parent / "out.jsonl"),
    "import into it": lambda bad, sound: import_(bad, sound.parents[1] / "memory.jsonl"),
    "stats": lambda bad, _: _sqlite_stats(str(bad)),
    "checkpoint": _checkpoint,
    # the connection's own methods (philont iterates cursors and creates a function)
    "a cursor iterated": _on(lambda c: list(c.cursor().execute("SELECT * FROM sqlite_master"))),
    "Connection.iterdump": _on(lambda c: list(c.iterdump())),
    "Connection.blobopen": _on(lambda c: c.blobopen("zzqq", "a", 1)),
    "Connection.serialize": _on(lambda c: c.serialize()),
    "Connection.create_function": _on(lambda c: c.create_function("f", 1, abs)),
    "Connection.create_collation": _on(lambda c: c.create_collation("c", lambda a, b: 0)),
}
_SAME_DAMAGE: dict[str, tuple[str, str]] = {}
"""Each entry's outcome on the damage with a name that is UTF-8 (``zzqa``)."""


def _outcome(entry: str, name: bytes) -> tuple[str, str]:
    """What ``entry`` does with a damaged file whose table is named ``name``: the type of what
    it raised (``returned``) and its text, the folder and a backup's time left out."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        bad = _damaged(tmp / "memory.sqlite", name)
        try:
            kind, text = "returned", repr(ENTRIES[entry](bad, _sound()))
        except Exception as exc:
            kind, text = type(exc).__qualname__, str(exc)
        text = text.replace(folder, "<tmp>").replace(_SOUND.name, "<sound>")
        return kind, re.sub(r"\d{8}T\d{6}", "<at>", text)


@pytest.mark.parametrize("entry", ENTRIES)
@settings(max_examples=4, deadline=None)
@given(name=NOT_UTF8)
def test_every_handler_gets_it_as_the_same_damage_named_in_utf8(entry: str, name: bytes) -> None:
    if entry not in _SAME_DAMAGE:
        _SAME_DAMAGE[entry] = _outcome(entry, b"zzqa")
    kind, text = _SAME_DAMAGE[entry]
    quoted = _quoted(name).decode("utf-8", "replace")
    assert _outcome(entry, name) == (kind, text.replace("zzqa", quoted))


def _damage_schema(path: Path, name: bytes) -> str:
    """Another connection damages ``path``'s schema as :func:`_damaged` does (``zzqq`` renamed
    ``name``, its SQL unparsable) and commits (``committed``), unless it cannot take the write
    lock at once (the error's text)."""
    with closing(sqlite3.connect(path, isolation_level=None, timeout=0)) as other:
        try:
            version = other.execute("PRAGMA schema_version").fetchone()[0]
            other.execute("PRAGMA writable_schema = ON")
            other.execute("BEGIN IMMEDIATE")
            other.execute(
                "UPDATE sqlite_master SET name = CAST(? AS TEXT), sql = 'CREATE TABLX zzqq(a)'"
                " WHERE name = 'zzqq'",
                (name,),
            )
            other.execute(f"PRAGMA schema_version = {version + 1}")
            other.execute("COMMIT")
            return "committed"
        except sqlite3.OperationalError as exc:
            return str(exc)


@pytest.mark.parametrize("journal", ["wal", "delete"])
@examples(4)
@given(name=NOT_UTF8)
def test_a_cursor_iterates_on_while_another_connection_damages_the_schema(
    tmp_path: Path, journal: str, name: bytes
) -> None:
    """Why iterating a cursor (sqlite3's C loop) is not wrapped: its statement holds its read
    transaction from its first step (in ``execute``), so the schema it was prepared on cannot
    change under it. Another connection damages the schema in the middle of the iteration:
    in WAL it commits, and the iteration yields every row of its snapshot, then the next
    statement reads the damaged schema and raises it as ``DatabaseError`` (``SQLITE_CORRUPT``);
    in a rollback-journal mode it cannot take the write lock while the cursor reads."""
    path = tmp_path / f"{journal}-{name.hex()}.sqlite"
    with closing(sqlite3.connect(path, isolation_level=None)) as setup:
        setup.execute(f"PRAGMA journal_mode = {journal}")
        setup.execute(
            "CREATE TABLE t AS WITH RECURSIVE n(a) AS"
            " (SELECT 0 UNION ALL SELECT a + 1 FROM n WHERE a < 4999) SELECT a FROM n"
        )
        setup.execute("CREATE TABLE zzqq(a)")
    with closing(connections.connect(path, isolation_level=None)) as conn:
        cursor = conn.execute("SELECT a FROM t")
        rows = [next(cursor)]
        damage = _damage_schema(path, name)
        rows += cursor
        assert rows == [(i,) for i in range(5000)]
        if journal == "wal":
            assert damage == "committed"
            with pytest.raises(sqlite3.DatabaseError) as caught:
                conn.execute("SELECT count(*) FROM t")
            assert caught.value.sqlite_errorname == "SQLITE_CORRUPT"
            assert "malformed database schema" in str(caught.value)
        else:
            assert damage == "database is locked"


def _connects(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that call ``sqlite3.connect`` or ``connect`` imported from
    ``sqlite3``, or make a ``sqlite3.Connection`` directly."""
    names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "sqlite3"
        for alias in node.names
        if alias.name in ("connect", "Connection")
    }
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        direct = (
            isinstance(func, ast.Attribute)
            and func.attr in ("connect", "Connection")
            and isinstance(func.value, ast.Name)
            and func.value.id == "sqlite3"
        )
        if direct or (isinstance(func, ast.Name) and func.id in names):
            lines.append(node.lineno)
    return lines


def test_no_connection_bypasses_the_factory() -> None:
    """philont and its migrations open sqlite3 connections only through
    ``philont.db.connections.connect`` (its own call the one allowed)."""
    files = sorted((ROOT / "philont").rglob("*.py")) + sorted((ROOT / "alembic").rglob("*.py"))
    allowed = ROOT / "philont" / "db" / "connections.py"
    assert allowed in files
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in files
        for line in _connects(ast.parse(path.read_text(), str(path)))
        if path != allowed
    ]
    assert found == []
    assert _connects(ast.parse("import sqlite3\nsqlite3.connect('x')")) == [2]  # it can see one


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
def test_the_engines_connections_are_the_factorys(tmp_path: Path, read_only: bool) -> None:
    from philont.db.connections import Connection

    path = tmp_path / "memory.sqlite"
    Store.open(path).close()
    store = Store.open(path, read_only=read_only)
    try:
        raw = store.engine.raw_connection()
        try:
            assert isinstance(raw.driver_connection, Connection)
        finally:
            raw.close()
    finally:
        store.close()

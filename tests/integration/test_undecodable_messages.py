"""A damaged file whose SQLite error quotes bytes that are not UTF-8.

SQLite names a damaged schema's table in its message (``malformed database schema (NAME)``),
and when the name's bytes are not UTF-8 Python's sqlite3 raises ``UnicodeDecodeError``
decoding the message, instead of the ``DatabaseError``: a restore of such a backup, `philont
stats` and `Store.open` ended in a traceback (CI: a restore test whose corrupt backup's random
bytes happened to land there). Generated: any bytes that are not UTF-8 in the name."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import Store
from philont.backup import restore
from philont.db.engine import file_kind
from philont.errors import PhilontError

NOT_UTF8 = st.binary(min_size=4, max_size=4).filter(lambda b: not _decodes(b))


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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
    with pytest.raises(UnicodeDecodeError), closing(sqlite3.connect(path)) as conn:
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

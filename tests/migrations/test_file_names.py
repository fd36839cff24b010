"""A database file's name is a name: ``?``, ``#`` and ``%`` in it are read as characters, never
as the query, fragment or escapes of the URI that philont's read-only connections use."""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont import migrate
from philont.cli.inspect import layer_counts
from philont.db.engine import connect_read_only
from philont.store import Store
from philont.testing.schema import normalized_schema

URI_CHARACTERS = "?#%&=:;+ 41aé字"
NAMES = st.text(alphabet=URI_CHARACTERS, min_size=1, max_size=12).map(lambda s: s + ".sqlite")


@settings(max_examples=60, deadline=None)
@given(name=NAMES)
def test_a_read_only_connection_opens_the_named_file_and_creates_nothing(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        with closing(sqlite3.connect(str(path))) as conn, conn:  # no URI: the name as given
            conn.execute("CREATE TABLE marker (x)")
        with closing(connect_read_only(path)) as ro:
            tables = [r[0] for r in ro.execute("SELECT name FROM sqlite_master")]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                ro.execute("INSERT INTO marker VALUES (1)")
        assert tables == ["marker"]
        assert sorted(p.name for p in Path(tmp).iterdir()) == [name]


@pytest.mark.parametrize(
    "name", ["a#1.sqlite", "b?mode=rwc.sqlite", "c%41.sqlite", "d 100%.sqlite"]
)
def test_a_store_on_a_file_with_uri_characters_in_its_name(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with Store.open(path) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")

    assert migrate.status(path).at_head
    assert layer_counts(path)["facts"] == 1
    assert "memory_facts" in normalized_schema(path)["tables"]
    left = {p.name for p in tmp_path.iterdir()} - {f"{name}-wal", f"{name}-shm"}
    assert left == {name, "backups"}  # nothing made under a truncated name

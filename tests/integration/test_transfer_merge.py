"""Merge mode never drops a row: a key the target holds is skipped only for the same row; a
different row under it (colliding autoincrement ids, an edited note) refuses the whole import."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from philont import Store, migrate
from philont.db.bootstrap import GLOBAL_SESSION_ID
from philont.db.schema import metadata
from philont.transfer import (
    ImportFactConflictError,
    ImportMergeConflictError,
    export,
    export_tables,
    import_,
)
from philont.transfer.format import BOOTSTRAP_ROWS

CopyFixture = Callable[[str], Path]


def _dump(path: Path) -> list[str]:
    with closing(sqlite3.connect(str(path))) as conn:
        return list(conn.iterdump())


def _store_with(path: Path, session: str, *texts: str) -> Path:
    with Store.open(path) as store, store.begin() as mem:
        if session != GLOBAL_SESSION_ID:
            mem.timeline.start_session(session)
        for text in texts:
            mem.timeline.append(text, session_id=session)
        mem.actions.record(
            "note_saved", params={"text": texts[0]}, success=True, session_id=session
        )
    return path


def test_a_message_whose_id_is_taken_by_another_message_refuses_the_merge_and_writes_nothing(
    tmp_path: Path,
) -> None:
    a = _store_with(tmp_path / "a.sqlite", GLOBAL_SESSION_ID, "Alice: my cat is called Miso")
    b = _store_with(tmp_path / "b.sqlite", "laptop", "Bob: my dog is called Rex")
    out = tmp_path / "b.jsonl"
    export(b, out)
    before = _dump(a)

    with pytest.raises(ImportMergeConflictError) as caught:
        import_(a, out, mode="merge")

    assert caught.value.code == "import_merge_conflict"
    assert caught.value.counts == {"memory_actions": 1, "memory_raw_messages": 1}
    assert {(t, key) for t, key, _ in caught.value.first} == {
        ("memory_actions", 1),
        ("memory_raw_messages", 1),
    }
    assert "new database" in str(caught.value)
    assert _dump(a) == before  # not even the session "laptop"


def test_merging_the_same_export_again_skips_every_row_and_changes_nothing(
    tmp_path: Path,
) -> None:
    b = _store_with(tmp_path / "b.sqlite", "laptop", "Bob: my dog is called Rex", "Bob: hi")
    out = tmp_path / "b.jsonl"
    exported = export(b, out)
    target = tmp_path / "target.sqlite"
    migrate.upgrade(target)
    first = import_(target, out, mode="merge")
    after_first = _dump(target)

    again = import_(target, out, mode="merge")

    assert first.inserted["memory_raw_messages"] == 2
    assert again.inserted == {}
    rows = sum(exported.rows.values())
    assert again.totals() == {
        "file_rows": rows,
        "inserted": 0,
        "replaced": 0,
        "skipped": rows - 3,  # every row is already there: the same row
        "kept": 2,  # the target's own bootstrap rows (made by its upgrade, not by the file)
        "not_imported": 1,  # memory_meta
    }
    assert _dump(target) == after_first


def _kept_as_the_targets(table: str, key: tuple[object, ...]) -> bool:
    """Rows every database carries (its ``memory_meta``, the bootstrap rows): a merge keeps
    the target's own versions of them."""
    return table == "memory_meta" or (table, key) in BOOTSTRAP_ROWS


def _edit_one_row(conn: sqlite3.Connection, table: str) -> tuple[object, ...] | None:
    """Change one text column of the first row of ``table`` a merge does not keep as the
    target's (the first column the table's constraints accept changed); the row's key, or None
    when nothing could be changed."""
    t = metadata.tables[table]
    pk = [c.name for c in t.primary_key.columns]
    keys = ", ".join(f'"{c}"' for c in pk)
    rows = conn.execute(f'SELECT {keys} FROM "{table}" ORDER BY {keys}').fetchall()
    found = next((r for r in rows if not _kept_as_the_targets(table, tuple(r))), None)
    if found is None:
        return None
    where = " AND ".join(f'"{c}" = ?' for c in pk)
    for column in t.c:
        if column.primary_key or column.foreign_keys or column.unique:
            continue
        try:
            changed = conn.execute(
                f'UPDATE "{table}" SET "{column.name}" = "{column.name}" || \' (edited)\' '
                f"WHERE {where} AND typeof(\"{column.name}\") = 'text'",
                found,
            ).rowcount
        except sqlite3.IntegrityError:
            continue  # a CHECK on this column: try the next one
        if changed:
            return tuple(found)
    return None


def test_a_different_row_under_an_existing_key_is_refused_in_every_table_and_named(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = copy_fixture("v31")
    migrate.upgrade(source)
    out = tmp_path / "export.jsonl"
    export(source, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    target = tmp_path / "target.sqlite"
    target.write_bytes(source.read_bytes())
    edited: dict[str, tuple[object, ...]] = {}
    with closing(sqlite3.connect(str(target))) as conn, conn:
        for table in export_tables():
            key = _edit_one_row(conn, table.name)
            if key is not None:
                edited[table.name] = key
    assert {"memory_raw_messages", "memory_actions", "memory_notes"} <= set(edited)
    before = _dump(target)

    with pytest.raises(ImportMergeConflictError) as caught:
        import_(target, out, mode="merge")

    assert caught.value.counts == dict.fromkeys(edited, 1)
    for table, key, line_number in caught.value.first:
        row = json.loads(lines[line_number - 1])
        assert row["table"] == table
        pk = [c.name for c in metadata.tables[table].primary_key.columns]
        assert tuple(row["row"][c] for c in pk) == edited[table]
        assert key == edited[table][0]
    assert _dump(target) == before


def _facts(path: Path, *values: str) -> Path:
    """A store where user.city took each of ``values`` in turn (the last one current)."""
    with Store.open(path) as store, store.begin() as mem:
        for value in values:
            mem.facts.store("user", "city", value)
        mem.facts.store("user", "pet", "Miso")
    return path


def test_a_key_current_in_the_file_and_in_the_target_refuses_the_merge_and_writes_nothing(
    tmp_path: Path,
) -> None:
    a = _facts(tmp_path / "a.sqlite", "Berlin")
    b = _facts(tmp_path / "b.sqlite", "Rome", "Paris")
    out = tmp_path / "b.jsonl"
    export(b, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    before = _dump(a)

    with pytest.raises(ImportFactConflictError) as caught:
        import_(a, out, mode="merge")

    # user.city (Paris) and user.pet are current in both: two conflicts, Rome is history
    assert caught.value.code == "import_merge_conflict"
    assert [(ns, key) for _, ns, key, _ in caught.value.found] == [
        ("user", "city"),
        ("user", "pet"),
    ]
    number = caught.value.line_number
    assert number is not None and json.loads(lines[number - 1])["row"]["value_json"] == '"Paris"'
    assert f"line {number}: user.city" in str(caught.value)
    assert _dump(a) == before
    with Store.open(a) as store, store.begin() as mem:
        assert [f.value for f in mem.facts.history("user", "city")] == ["Berlin"]


def test_a_file_whose_source_held_two_current_versions_of_a_key_still_merges(
    tmp_path: Path,
) -> None:
    """A legacy database may hold two current versions of a key (the original's Q-S1): the
    file is imported as its source was; only a conflict with the target refuses it."""
    b = _facts(tmp_path / "b.sqlite", "Rome", "Paris")
    with closing(sqlite3.connect(str(b))) as conn, conn:
        conn.execute("UPDATE memory_facts SET superseded_by = NULL, supersedes = NULL")
    out = tmp_path / "b.jsonl"
    export(b, out)
    target = tmp_path / "target.sqlite"
    migrate.upgrade(target)

    report = import_(target, out, mode="merge")
    again = import_(target, out, mode="merge")

    assert report.inserted["memory_facts"] == 3
    assert again.inserted == {}

"""A refused import into a database of an older schema leaves it exactly as it was: the same
bytes (no upgrade, no switch to WAL), the same ``schema_version``, no pre-upgrade copy left in
``backups/``, whatever the refusal: the file's format, header, rows, trailer, values, repeated
keys (found before the target is opened), or what only the target can tell (it holds memory, a
row whose id it uses for another one, a second current version of a fact, a skill name it
gives another skill, a parent neither has), found after the upgrade, which the import runs in
its own transaction. The import upgraded the original's files first and kept the upgrade when
it then refused the file. On PostgreSQL: a database without the layout, or at an older
revision, stays so."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

import pytest
from alembic import command
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import URL

from philont import migrate, transfer
from philont.db.engine import create_engine
from philont.errors import ConflictError, PhilontError
from philont.transfer import (
    ImportFactConflictError,
    ImportForeignKeyError,
    ImportFormatError,
    ImportMergeConflictError,
)
from tests.pg_support import _admin, in_schema, server_url
from tests.support import examples, refused, written

Lines = list[str]
Mode = Literal["refuse", "merge"]
Damage = Callable[[Lines, st.DataObject], tuple[str, int | None]]
"""The damaged file's text and the line its refusal must name (None: the target as a whole)."""


# --- the file and its damages ---------------------------------------------------------------


def _rows(lines: Lines, table: str | None = None) -> list[int]:
    """Indexes of the row lines (of ``table``)."""
    prefix = '{"table":' + ("" if table is None else json.dumps(table) + ",")
    return [i for i, line in enumerate(lines[1:-1], 1) if line.startswith(prefix)]


def _row_at(data: st.DataObject, lines: Lines, table: str | None = None) -> int:
    found = _rows(lines, table)
    if table is not None and not found:
        pytest.skip(f"no {table} rows in this file")
    return data.draw(st.sampled_from(found), label="line index")


def _replace(lines: Lines, i: int, *new: str) -> str:
    return "".join([*lines[:i], *new, *lines[i + 1 :]])


def _edit_row(lines: Lines, i: int, **values: Any) -> str:
    obj = json.loads(lines[i])
    obj["row"].update(values)
    for name in [k for k, v in values.items() if v is _DROP]:
        del obj["row"][name]
    return _replace(lines, i, json.dumps(obj) + "\n")


_DROP = object()


def _edit_header(lines: Lines, **values: Any) -> tuple[str, int]:
    header = json.loads(lines[0]) | values
    return _replace(lines, 0, json.dumps(header) + "\n"), 1


def _cut_json(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    return _replace(lines, i, lines[i][: len(lines[i]) // 2] + "\n"), i + 1


def _empty_line(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    return _replace(lines, i, "\n", lines[i]), i + 1


def _not_an_object(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    return _replace(lines, i, "[1, 2]\n"), i + 1


def _shape(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    obj = json.loads(lines[i]) | {"extra": 1}
    return _replace(lines, i, json.dumps(obj) + "\n"), i + 1


def _unknown_table(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    obj = json.loads(lines[i]) | {"table": "customers"}
    return _replace(lines, i, json.dumps(obj) + "\n"), i + 1


def _unknown_column(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    return _edit_row(lines, i, no_such_column=1), i + 1


def _missing_key(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_notes")
    return _edit_row(lines, i, id=_DROP), i + 1


def _rowid_not_an_integer(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_notes")
    return _edit_row(lines, i, _rowid="seven"), i + 1


def _bad_base64(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_notes")
    return _edit_row(lines, i, content={"$b64": "!!!"}), i + 1


def _a_list_for_a_value(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines)
    obj = json.loads(lines[i])
    column = data.draw(st.sampled_from(sorted(obj["row"])), label="column")
    return _edit_row(lines, i, **{column: [1]}), i + 1


def _text_for_a_number(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_notes")
    return _edit_row(lines, i, importance="very"), i + 1


def _out_of_range(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_facts")
    value = data.draw(st.floats(min_value=1.0, exclude_min=True, allow_infinity=False))
    return _edit_row(lines, i, confidence=value), i + 1


def _not_finite(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_facts")
    value = data.draw(st.sampled_from(["Infinity", "-Infinity", "NaN"]))
    return _edit_row(lines, i, confidence={"$real": value}), i + 1


def _a_fact_superseding_itself(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_facts")
    return _edit_row(lines, i, superseded_by=json.loads(lines[i])["row"]["id"]), i + 1


def _missing_required_column(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_raw_messages")
    return _edit_row(lines, i, content=_DROP), i + 1


def _a_repeated_key(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_notes")
    return _replace(lines, i, lines[i], lines[i]), i + 2


def _trailer_count(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    trailer = json.loads(lines[-1])
    table = data.draw(st.sampled_from(sorted(trailer["rows"])), label="table")
    trailer["rows"][table] += 1
    return _replace(lines, len(lines) - 1, json.dumps(trailer) + "\n"), len(lines)


def _no_trailer(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    return "".join(lines[:-1]), len(lines)


def _after_the_trailer(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    return "".join([*lines, lines[1]]), len(lines) + 1


def _header(**values: Any) -> Damage:
    return lambda lines, data: _edit_header(lines, **values)


# What only the target can tell, after the upgrade: in merge mode (the target holds the file's
# rows, identical: the undamaged file imports, every row skipped) but "_holds_memory".


def _holds_memory(lines: Lines, data: st.DataObject) -> tuple[str, None]:
    return "".join(lines), None  # imported in refuse mode (see REFUSE_MODE)


def _a_different_row_under_its_id(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_notes")
    return _edit_row(lines, i, content="edited since"), i + 1


def _a_second_current_fact(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    current = [
        i
        for i in _rows(lines, "memory_facts")
        if json.loads(lines[i])["row"]["superseded_by"] is None
        and json.loads(lines[i])["row"]["forgotten_at"] is None
    ]
    i = data.draw(st.sampled_from(current), label="line index")
    return _edit_row(lines, i, id="a-new-fact-id", value_json='"another value"'), i + 1


def _a_taken_skill_name(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_skills")
    return _edit_row(lines, i, id="a-new-skill-id"), i + 1


def _a_missing_parent(lines: Lines, data: st.DataObject) -> tuple[str, int]:
    i = _row_at(data, lines, "memory_raw_messages")
    ids = [json.loads(lines[j])["row"]["id"] for j in _rows(lines, "memory_raw_messages")]
    return _edit_row(lines, i, id=max(ids) + 1000, session_id="no-such-session"), i + 1


DAMAGES: dict[str, tuple[Damage, type[PhilontError]]] = {
    # the format (philont.transfer.reader)
    "invalid JSON": (_cut_json, ImportFormatError),
    "empty line": (_empty_line, ImportFormatError),
    "not an object": (_not_an_object, ImportFormatError),
    "another format": (_header(format="csv"), ImportFormatError),
    "a newer format_version": (_header(format_version=2), ImportFormatError),
    "an unknown schema_revision": (_header(schema_revision="v999"), ImportFormatError),
    "header tables not a list": (_header(tables="memory_notes"), ImportFormatError),
    "an unknown table in the header": (_header(tables=["customers"]), ImportFormatError),
    "sequences past 64 bits": (
        _header(sequences={"memory_raw_messages": 2**63}),
        ImportFormatError,
    ),
    "a row of another shape": (_shape, ImportFormatError),
    "an unknown table": (_unknown_table, ImportFormatError),
    "an unknown column": (_unknown_column, ImportFormatError),
    "a missing primary key": (_missing_key, ImportFormatError),
    "a _rowid not an integer": (_rowid_not_an_integer, ImportFormatError),
    "bad base64": (_bad_base64, ImportFormatError),
    "a list for a value": (_a_list_for_a_value, ImportFormatError),
    "trailer counts": (_trailer_count, ImportFormatError),
    "no trailer": (_no_trailer, ImportFormatError),
    "data after the trailer": (_after_the_trailer, ImportFormatError),
    # the values (philont.transfer.gate) and the keys (philont.transfer.keys)
    "text for a number": (_text_for_a_number, ImportFormatError),
    "a confidence past 1": (_out_of_range, ImportFormatError),
    "a confidence not finite": (_not_finite, ImportFormatError),
    "a fact superseding itself": (_a_fact_superseding_itself, ImportFormatError),
    "a required column missing": (_missing_required_column, ImportFormatError),
    "a repeated key": (_a_repeated_key, ImportFormatError),
    # the target (philont.transfer.merge, philont.transfer.load), after the upgrade
    "the target holds memory": (_holds_memory, ConflictError),
    "a different row under its id": (_a_different_row_under_its_id, ImportMergeConflictError),
    "a second current fact": (_a_second_current_fact, ImportFactConflictError),
    "a taken skill name": (_a_taken_skill_name, ConflictError),
    "a missing parent": (_a_missing_parent, ImportForeignKeyError),
}
REFUSE_MODE = {"the target holds memory"}


def test_every_kind_of_refusal_the_import_raises_is_a_damage_here() -> None:
    """The refusals the import raises, by type: each is generated here."""
    raised = {
        ImportFormatError,
        ImportForeignKeyError,
        ImportMergeConflictError,
        ImportFactConflictError,
        ConflictError,
    }
    assert {kind for _damage, kind in DAMAGES.values()} == raised


# --- the old fixtures ------------------------------------------------------------------------

OLD = ["v2", "v27", "v31"]
"""The original's populated files, each imported into with its own export (merge mode: every
row the same, so the undamaged file imports and changes nothing but the upgrade)."""


class Exports(dict[str, Lines]):
    def __repr__(self) -> str:  # not the files' text, in every report of an example
        return f"Exports({sorted(self)})"


@pytest.fixture(scope="module")
def exports(philont_fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> Exports:
    """Each old fixture's export, from an upgraded copy."""
    made = Exports()
    for name in OLD:
        copy = tmp_path_factory.mktemp(name) / "memory.sqlite"
        copy.write_bytes((philont_fixtures / f"{name}.sqlite").read_bytes())
        copy.chmod(0o600)
        migrate.upgrade(copy, backup=False)
        out = copy.with_suffix(".jsonl")
        transfer.export(copy, out)
        made[name] = out.read_text(encoding="utf-8").splitlines(keepends=True)
    return made


def _line(error: PhilontError) -> object:
    return getattr(error, "line_number", None) or error.details.get("line_number")


def _state(path: Path) -> tuple[str, str, list[str]]:
    """The file's bytes (a digest), its schema_version, and the files of its directory."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        version = conn.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'")
        recorded = str(version.fetchone()[0])
    files = sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*"))
    return hashlib.sha256(path.read_bytes()).hexdigest(), recorded, files


@pytest.mark.parametrize("fixture", [*OLD, "empty-v31"])
@pytest.mark.parametrize("kind", sorted(DAMAGES))
@examples(3)
@given(data=st.data())
def test_a_refused_import_leaves_an_old_file_byte_for_byte_as_it_was(
    data: st.DataObject,
    kind: str,
    fixture: str,
    exports: Exports,
    philont_fixtures: Path,
    tmp_path: Path,
) -> None:
    """An old file (the original's, never upgraded) and a file refused for ``kind``: the error
    names the line, and the file is as it was (bytes, schema_version, no backup beside it)."""
    damage, error = DAMAGES[kind]
    # empty-v31 holds nothing: v31's export goes in whole (refuse mode), not row by row
    lines = exports["v31" if fixture == "empty-v31" else fixture]
    mode: Mode = "refuse" if kind in REFUSE_MODE or fixture == "empty-v31" else "merge"
    if fixture == "empty-v31" and error in (ImportMergeConflictError, ImportFactConflictError):
        return  # an empty target holds no row to differ from
    if fixture == "empty-v31" and kind in ("the target holds memory", "a taken skill name"):
        return
    target = Path(tempfile.mkdtemp(dir=tmp_path)) / "memory.sqlite"  # a new one per example
    shutil.copyfile(philont_fixtures / f"{fixture}.sqlite", target)
    target.chmod(0o600)
    content, line_number = damage(lines, data)
    file = written(target.parent.with_suffix(".jsonl"), content)

    caught = refused(
        error, lambda: transfer.import_(target, file, mode=mode), lambda: _state(target)
    )

    if line_number is not None:
        assert _line(caught) == line_number, caught
        assert f"line {line_number}" in str(caught)


@pytest.mark.parametrize("fixture", OLD)
def test_the_undamaged_file_imports_and_keeps_the_pre_upgrade_copy(
    fixture: str, exports: Exports, copy_fixture: Callable[[str], Path], tmp_path: Path
) -> None:
    """The control: the damages start from a file that imports into its old target (which is
    upgraded, in the import's transaction, with its pre-upgrade copy kept)."""
    target = copy_fixture(fixture)
    file = tmp_path / "file.jsonl"
    file.write_text("".join(exports[fixture]), encoding="utf-8")
    report = transfer.import_(target, file, mode="merge")
    assert report.upgrade is not None and report.upgrade.applied
    assert report.upgrade.backup is not None and report.upgrade.backup.exists()
    assert migrate.status(target).at_head


# --- PostgreSQL: a database without the layout, or at an older revision ------------------------


@pytest.fixture
def old_schema(worker_tag: str) -> Iterator[Callable[[str | None], URL]]:
    """Factory of schemas at a revision (None: empty), dropped afterwards."""
    made: list[str] = []

    def new(revision: str | None) -> URL:
        name = f"old{len(made)}_{worker_tag}"
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE; CREATE SCHEMA "{name}"')
        made.append(name)
        url = in_schema(server_url(), name)
        if revision is not None:
            command.upgrade(migrate.alembic_config(url), revision)
        return url

    yield new
    for name in made:
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _pg_state(url: URL) -> tuple[str | None, list[str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema() ORDER BY 1"
                )
            ).scalars()
            return migrate.status(conn).revision, list(tables)
    finally:
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("revision", [None, "v036"], ids=["no layout", "v036"])
@pytest.mark.parametrize("kind", ["a missing parent", "invalid JSON", "a confidence not finite"])
@examples(2)
@given(data=st.data())
def test_a_refused_import_leaves_an_old_postgresql_database_as_it_was(
    data: st.DataObject,
    kind: str,
    revision: str | None,
    exports: Exports,
    old_schema: Callable[[str | None], URL],
    tmp_path: Path,
) -> None:
    """Into a new agent: a file with a row whose parent is missing (PostgreSQL refuses it as
    it is inserted, after the upgrade), or refused before; the database keeps its revision and
    its tables: the import did not make the layout, nor upgrade it."""
    url = old_schema(revision)
    damage, error = DAMAGES[kind]
    content, line_number = damage(exports["v31"], data)
    file = written(tmp_path / "file.jsonl", content)

    caught = refused(
        error, lambda: transfer.import_(url, file, agent="newcomer"), lambda: _pg_state(url)
    )

    assert _line(caught) == line_number, caught

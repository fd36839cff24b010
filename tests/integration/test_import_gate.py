"""Import is a gate: every value of a file passes the types and rules of a service write, a key
is in the file once, a missing parent names its line, and a failed import leaves nothing behind.
The fuzzer mutates values of a real export: each file is refused with a line number, or imported
and every layer still reads."""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from philont import migrate, tools
from philont.cli import app
from philont.cli.inspect import layer_counts
from philont.errors import ConflictError, PhilontError
from philont.settings import AGENT_ENV
from philont.store import Store
from philont.transfer import ImportForeignKeyError, ImportFormatError, export, import_

CopyFixture = Callable[[str], Path]
HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
ANCHOR = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)  # the fixtures' "now"


# --- shared material: a real export and an empty target at head ------------------------------


@pytest.fixture(scope="module")
def export_lines(tmp_path_factory: pytest.TempPathFactory, philont_fixtures: Path) -> list[str]:
    source = tmp_path_factory.mktemp("source") / "memory.sqlite"
    shutil.copyfile(philont_fixtures / "v31.sqlite", source)
    source.chmod(0o600)
    migrate.upgrade(source, backup=False)
    buf = io.StringIO()
    export(source, buf)
    return buf.getvalue().splitlines(keepends=True)


@pytest.fixture(scope="module")
def empty_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("empty") / "memory.sqlite"
    migrate.upgrade(path)
    return path


_TARGETS = itertools.count()


def _target(template: Path, base: Path) -> Path:
    directory = base / f"t{next(_TARGETS)}"
    directory.mkdir(parents=True)
    path = directory / "memory.sqlite"
    shutil.copyfile(template, path)
    path.chmod(0o600)
    return path


def _file(base: Path, lines: list[str]) -> Path:
    path = base / f"import{next(_TARGETS)}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _dump(path: Path) -> list[str]:
    with closing(sqlite3.connect(str(path))) as conn:
        return list(conn.iterdump())


def _line_of(lines: list[str], table: str, predicate: Callable[[dict[str, Any]], bool]) -> int:
    for number, line in enumerate(lines, start=1):
        obj = json.loads(line)
        if obj.get("table") == table and predicate(obj["row"]):
            return number
    raise AssertionError(f"no {table} row matches")


def _edit(lines: list[str], number: int, **values: Any) -> list[str]:
    edited = list(lines)
    obj = json.loads(edited[number - 1])
    obj["row"].update(values)
    edited[number - 1] = json.dumps(obj) + "\n"  # ASCII escapes: lone surrogates survive
    return edited


def _first(lines: list[str], table: str) -> int:
    return _line_of(lines, table, lambda row: True)


# --- the examples, one by one --------------------------------------------------------

IMPOSSIBLE: list[tuple[str, str, Any]] = [
    ("memory_facts", "created_at", "yesterday"),
    ("memory_facts", "created_at", -(10**15) * 1000),
    ("memory_facts", "created_at", 2**70),
    ("memory_facts", "created_at", 1.5e12),
    ("memory_facts", "confidence", "high"),
    ("memory_facts", "confidence", 1.5),
    ("memory_facts", "value_json", "{not json"),
    ("memory_facts", "value_json", "NaN"),
    ("memory_facts", "value_json", "null"),
    ("memory_facts", "fact_kind", "maybe"),
    ("memory_facts", "decay_tau_days", 0),
    ("memory_facts", "namespace", "   "),
    ("memory_notes", "content", ""),
    ("memory_notes", "importance", float("inf")),
    ("memory_notes", "content", "\ud800 lone surrogate"),
    ("memory_raw_messages", "role", "narrator"),
    ("memory_raw_messages", "timestamp", None),
    ("memory_skills", "trigger_keywords", '{"a": 1}'),
    ("memory_skills", "use_count", -1),
    ("memory_calendar", "timezone", "Mars/Olympus"),
    ("memory_calendar", "rrule", "FREQ=NEVER"),
    ("memory_calendar", "rrule", "FREQ=DAILY;INTERVAL=99999999"),
    ("memory_calendar", "ends_at", 0),
    ("memory_schedules", "cron_expr", "interval:-5"),
    ("memory_schedules", "payload_json", "[1, 2]"),
    ("memory_schedules", "enabled", 2),
    ("memory_access_log", "target_type", "secret"),
    ("memory_actions", "success", True),
]


@pytest.mark.parametrize(("table", "column", "value"), IMPOSSIBLE)
def test_an_impossible_value_is_refused_with_its_line_and_nothing_is_written(
    table: str,
    column: str,
    value: Any,
    export_lines: list[str],
    empty_target: Path,
    tmp_path: Path,
) -> None:
    number = _first(export_lines, table)
    lines = _edit(export_lines, number, **{column: value})
    target = _target(empty_target, tmp_path)
    before = _dump(target)

    with pytest.raises(ImportFormatError) as err:
        import_(target, _file(tmp_path, lines))

    assert err.value.line_number == number
    assert f"{table}.{column}" in str(err.value) or table in str(err.value)
    assert _dump(target) == before


# The REAL column of the export's rows that takes any positive number (confidence and
# importance stop at 1, a negative decay_tau_days is refused for its sign)
_BEYOND_A_DOUBLE = st.integers(min_value=2**53 + 1, max_value=10**400)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_BEYOND_A_DOUBLE)
def test_a_whole_number_a_real_column_would_round_is_refused_with_its_line(
    value: int,
    export_lines: list[str],
    empty_target: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A whole number beyond 2**53 in a REAL column was imported rounded (2**53 + 1 became
    2**53, on SQLite and PostgreSQL) or, beyond 64 bits, failed on SQLite with Python's
    untyped OverflowError and a traceback. It is refused naming its line, nothing written."""
    table, column = "memory_facts", "decay_tau_days"
    base = tmp_path_factory.mktemp("real")
    number = _first(export_lines, table)
    target = _target(empty_target, base)
    before = _dump(target)

    with pytest.raises(ImportFormatError) as err:
        import_(target, _file(base, _edit(export_lines, number, **{column: value})))

    assert err.value.line_number == number
    assert f"{table}.{column}: a whole number beyond 2**53" in str(err.value)
    assert _dump(target) == before


@pytest.mark.postgres
@pytest.mark.parametrize("value", [2**53 + 1, 2**60 + 1, 2**63, 10**30])
def test_on_postgresql_a_whole_number_a_double_would_round_is_refused(
    value: int, export_lines: list[str], pg_agent: Callable[[], Any], tmp_path: Path
) -> None:
    url = pg_agent()
    number = _first(export_lines, "memory_facts")
    lines = _edit(export_lines, number, decay_tau_days=value)
    with pytest.raises(ImportFormatError) as err:
        import_(url, _file(tmp_path, lines))
    assert err.value.line_number == number
    assert not _agent_exists(url)


def test_a_whole_number_a_double_holds_and_a_float_beyond_it_are_kept_exactly(
    export_lines: list[str], empty_target: Path, tmp_path: Path
) -> None:
    """The control: 2**53 and 1e30 (a float in the file) are imported as they are."""
    facts = [
        n for n, line in enumerate(export_lines, 1) if line.startswith('{"table":"memory_facts"')
    ]
    lines = _edit(export_lines, facts[0], decay_tau_days=2**53)
    lines = _edit(lines, facts[1], decay_tau_days=1e30)
    target = _target(empty_target, tmp_path)
    import_(target, _file(tmp_path, lines))
    with closing(sqlite3.connect(str(target))) as conn:
        kept = {
            row[0]
            for row in conn.execute("SELECT decay_tau_days FROM memory_facts")
            if row[0] is not None
        }
    assert {float(2**53), 1e30} <= kept


def test_a_fact_superseded_by_itself_is_refused(
    export_lines: list[str], empty_target: Path, tmp_path: Path
) -> None:
    number = _first(export_lines, "memory_facts")
    own = json.loads(export_lines[number - 1])["row"]["id"]
    for column in ("superseded_by", "supersedes"):
        lines = _edit(export_lines, number, **{column: own})
        with pytest.raises(ImportFormatError, match="names itself") as err:
            import_(_target(empty_target, tmp_path), _file(tmp_path, lines))
        assert err.value.line_number == number


def test_the_same_id_twice_in_a_file_names_both_lines(
    export_lines: list[str], empty_target: Path, tmp_path: Path
) -> None:
    first = _first(export_lines, "memory_notes")
    row = json.loads(export_lines[first - 1])["row"]
    copy = dict(row, content="the same id, other content", _rowid=10_000)
    trailer = json.loads(export_lines[-1])
    trailer["rows"]["memory_notes"] += 1
    lines = [
        *export_lines[:first],
        json.dumps({"table": "memory_notes", "row": copy}) + "\n",
        *export_lines[first:-1],
        json.dumps(trailer) + "\n",
    ]

    with pytest.raises(ImportFormatError) as err:
        import_(_target(empty_target, tmp_path), _file(tmp_path, lines))

    assert err.value.line_number == first + 1
    assert f"already on line {first}" in str(err.value)


def test_a_repeated_unique_name_or_rowid_names_both_lines(
    export_lines: list[str], empty_target: Path, tmp_path: Path
) -> None:
    skills = [n for n, line in enumerate(export_lines, 1) if '"table":"memory_skills"' in line]
    first, second = skills[0], skills[1]
    name = json.loads(export_lines[first - 1])["row"]["name"]
    rowid = json.loads(export_lines[first - 1])["row"]["_rowid"]
    for change in ({"name": name}, {"_rowid": rowid}):
        lines = _edit(export_lines, second, **change)
        with pytest.raises(ImportFormatError) as err:
            import_(_target(empty_target, tmp_path), _file(tmp_path, lines))
        assert err.value.line_number == second and f"line {first}" in str(err.value)


def test_a_row_whose_parent_is_missing_names_its_line(
    export_lines: list[str], empty_target: Path, tmp_path: Path
) -> None:
    number = _line_of(
        export_lines, "memory_raw_messages", lambda row: row["session_id"] != "global"
    )
    lines = _edit(export_lines, number, session_id="no-such-session")
    target = _target(empty_target, tmp_path)
    before = _dump(target)

    with pytest.raises(ImportForeignKeyError) as err:
        import_(target, _file(tmp_path, lines))

    assert err.value.line_number == number and f"line {number}" in str(err.value)
    assert _dump(target) == before


def test_a_failed_import_leaves_no_new_file_behind(export_lines: list[str], tmp_path: Path) -> None:
    number = _line_of(export_lines, "memory_raw_messages", lambda row: True)
    lines = _edit(export_lines, number, session_id="no-such-session")  # fails after loading
    target = tmp_path / "new" / "deeper" / "memory.sqlite"

    with pytest.raises(ImportForeignKeyError):
        import_(target, _file(tmp_path, lines))

    assert not (tmp_path / "new").exists()
    import_(target, _file(tmp_path, export_lines))  # the same path works afterwards
    assert migrate.status(target).at_head


def test_a_failed_import_into_an_empty_file_leaves_it_empty(
    export_lines: list[str], tmp_path: Path
) -> None:
    target = tmp_path / "memory.sqlite"
    target.touch(mode=0o600)
    lines = _edit(export_lines, _first(export_lines, "memory_raw_messages"), session_id="x")
    with pytest.raises(ImportForeignKeyError):
        import_(target, _file(tmp_path, lines))
    assert target.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("memory")) == [
        "memory.sqlite"
    ]


# --- the fuzzer ------------------------------------------------------------------------------

SPECIAL = [
    "",
    " ",
    "yesterday",
    "high",
    "{",
    "[1,2]",
    '{"a":1}',
    '"x"',
    "null",
    "NaN",
    '["a",1]',
    "Europe/Berlin",
    "localtime",
    "right/UTC",
    "Mars/Olympus",
    "FREQ=DAILY",
    "FREQ=YEARLY;INTERVAL=99999999",
    "FREQ=DAILY;INTERVAL=99999999",
    "FREQ=WEEKLY;COUNT=3",
    "interval:0",
    "interval:60000",
    "cron:0 9 * * *@Europe/Berlin",
    "cron:bad",
    "once@Europe/Berlin",
    "once@Mars/Olympus",
    "state",
    "event",
    "assistant",
    "global",
    "default",
    "self",
    "\ud800",
    "a\x00b",
    "$own_id",
    "$other_id",
]
EDGES = [
    -1,
    0,
    1,
    2**31,
    2**53,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**70,
    -(10**15),
    253402300799999,
    253402300800000,
    -62135596800000,
    -62135596800001,
    1781409600000,
]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(EDGES),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(SPECIAL),
)


def _mutate(lines: list[str], data: st.DataObject) -> tuple[list[str], int]:
    """One value of one row changed (or its column dropped); the table is drawn first, so the
    few calendar and schedule rows are hit as often as the many messages."""
    by_table: dict[str, list[int]] = {}
    for number, line in enumerate(lines[1:-1], start=2):
        by_table.setdefault(json.loads(line)["table"], []).append(number)
    table = data.draw(st.sampled_from(sorted(by_table)), label="table")
    number = data.draw(st.sampled_from(by_table[table]), label="line")
    obj = json.loads(lines[number - 1])
    row = obj["row"]
    column = data.draw(st.sampled_from(sorted(row)), label="column")
    if data.draw(st.integers(0, 9), label="drop?") == 0:
        del row[column]
    else:
        value = data.draw(VALUES, label="value")
        if value == "$own_id":
            value = row.get("id")
        elif value == "$other_id":
            other = json.loads(lines[data.draw(st.integers(2, len(lines) - 1))])
            value = other.get("row", {}).get("id")
        row[column] = value
    edited = list(lines)
    edited[number - 1] = json.dumps(obj) + "\n"
    return edited, number


def _read_every_layer(db: Path) -> None:
    """Every layer read through the services, the model tools and the CLI; none may fail."""
    with Store.open(db, upgrade=False) as store:
        with store.begin(write=False) as mem:
            facts = mem.facts.list(None, ranked=True, now=ANCHOR)
            for fact in facts:
                mem.facts.history(fact.namespace, fact.key)
                fact.time_tag()
            mem.notes.list(limit=100, include_forgotten=True)
            for skill in mem.skills.list(200, include_deprecated=True):
                mem.skills.revisions(skill.name)
            mem.timeline.query(limit=1000)
            mem.timeline.list_sessions()
            mem.actions.query(limit=1000)
            mem.calendar.between(ANCHOR - timedelta(days=400), ANCHOR + timedelta(days=400))
            mem.schedules.list()
            mem.schedules.due_between(ANCHOR - timedelta(days=400), ANCHOR)
            mem.prefix.build(now=ANCHOR)
            mem.search.notes("Berlin rent")
            mem.retriever.retrieve("What did we decide about the Berlin apartment?")
        calls: list[tuple[str, dict[str, Any]]] = [
            ("list_facts", {}),
            ("list_upcoming", {}),
            ("search_notes", {"query": "Kaution"}),
            ("search_skills", {"query": "backup"}),
            ("recall_sessions", {"query": "Berlin"}),
        ]
        calls += [("get_fact", {"namespace": f.namespace, "key": f.key}) for f in facts[:40]]
        for name, args in calls:
            result = tools.call(name, args, db=store)
            assert result.error_code != "internal_error", (name, args, result.text)
    cli = CliRunner().invoke(app, ["facts", "list", "--db", str(db)])
    assert cli.exit_code == 0, cli.output


def _fuzz_once(data: st.DataObject, lines: list[str], template: Path, base: Path) -> None:
    mutated, number = _mutate(lines, data)
    target = _target(template, base)
    before = _dump(target)
    try:
        import_(target, _file(base, mutated))
    except (ImportFormatError, ImportForeignKeyError, ConflictError) as exc:
        line = getattr(exc, "line_number", None) or exc.details.get("line_number")
        assert isinstance(line, int) and 1 <= line <= len(mutated), exc
        assert _dump(target) == before
        event(f"refused: {exc.code}")
        return
    except PhilontError as exc:  # any other refusal must still name the line
        raise AssertionError(f"refused without a line number: {exc!r} (line {number})") from exc
    _read_every_layer(target)
    event("imported and read")


@given(data=st.data())
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_a_mutated_export_is_refused_with_a_line_or_imported_and_readable(
    data: st.DataObject,
    export_lines: list[str],
    empty_target: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _fuzz_once(data, export_lines, empty_target, tmp_path_factory.mktemp("fuzz"))


@pytest.mark.reliability
@pytest.mark.skipif(not HEAVY, reason="the long run: make reliability (PHILONT_HEAVY=1)")
@given(data=st.data())
@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_many_mutated_exports_are_refused_with_a_line_or_imported_and_readable(
    data: st.DataObject,
    export_lines: list[str],
    empty_target: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _fuzz_once(data, export_lines, empty_target, tmp_path_factory.mktemp("fuzz"))


# --- the same gate on PostgreSQL -------------------------------------------------------------


def _agent_exists(url: Any) -> bool:
    """Whether the default agent ($PHILONT_AGENT) is in the layout's registry."""
    from philont import agents

    name = os.environ[AGENT_ENV]
    with Store.open(url) as store:
        return any(agent.name == name for agent in agents.list_agents(store, prefix=name))


@pytest.mark.postgres
@pytest.mark.parametrize(("table", "column", "value"), IMPOSSIBLE[::3])
def test_on_postgresql_an_impossible_value_is_refused_before_the_agent_exists(
    table: str,
    column: str,
    value: Any,
    export_lines: list[str],
    pg_agent: Callable[[], Any],
    tmp_path: Path,
) -> None:
    url = pg_agent()
    number = _first(export_lines, table)
    lines = _edit(export_lines, number, **{column: value})
    with pytest.raises(ImportFormatError) as err:
        import_(url, _file(tmp_path, lines))
    assert err.value.line_number == number
    assert not _agent_exists(url)


@pytest.mark.postgres
def test_on_postgresql_a_missing_parent_and_a_repeated_key_name_their_lines(
    export_lines: list[str], pg_agent: Callable[[], Any], tmp_path: Path
) -> None:
    url = pg_agent()
    number = _line_of(
        export_lines, "memory_raw_messages", lambda row: row["session_id"] != "global"
    )
    orphan = _edit(export_lines, number, session_id="no-such-session")
    with pytest.raises(ImportForeignKeyError) as err:
        import_(url, _file(tmp_path, orphan))
    assert err.value.line_number == number

    skills = [n for n, line in enumerate(export_lines, 1) if '"table":"memory_skills"' in line]
    name = json.loads(export_lines[skills[0] - 1])["row"]["name"]
    repeated = _edit(export_lines, skills[1], name=name)
    with pytest.raises(ImportFormatError) as dup:
        import_(url, _file(tmp_path, repeated))
    assert dup.value.line_number == skills[1] and f"line {skills[0]}" in str(dup.value)

    import_(url, _file(tmp_path, export_lines))  # and the file itself goes in
    with Store.open(url) as store, store.begin(write=False) as mem:
        assert len(mem.facts.list(None)) > 0


# --- a failed import never removes what others made of the same new path ----------------------


def _others_imported(path: Path) -> Callable[[], None]:
    with Store.open(path) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")  # memory another process wrote (and closed)
    return lambda: None


def _a_store_has_it_open(path: Path) -> Callable[[], None]:
    store = Store.open(path)  # created it (schema only) and keeps it open
    with store.begin() as mem:
        mem.facts.list("user")
    return store.close


def _another_applications_table(path: Path) -> Callable[[], None]:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    return lambda: None


def _another_import_upgraded_it(path: Path) -> Callable[[], None]:
    migrate.upgrade(path)  # a concurrent import of the same path, about to load its rows
    return lambda: None


MEANWHILE: dict[str, Callable[[Path], Callable[[], None]]] = {
    "another import succeeded": _others_imported,
    "another import made its schema": _another_import_upgraded_it,
    "a Store has it open": _a_store_has_it_open,
    "another application's table": _another_applications_table,
}


@pytest.mark.parametrize("meanwhile", sorted(MEANWHILE))
@pytest.mark.parametrize("existed", [False, True], ids=["new path", "empty file"])
def test_a_failed_import_leaves_a_file_that_others_use_alone(
    tmp_path: Path, meanwhile: str, existed: bool
) -> None:
    """The import made the file, or found it empty; before it failed, someone else used it. The
    clean-up removed (or emptied) it anyway: a second import of the same new path that had
    succeeded lost everything, a Store writing to it wrote to an unlinked file, and one that
    had upgraded the file and was about to load it found it gone (both imports failed)."""
    from philont.transfer.files import removed_on_failure

    path = tmp_path / "memory.sqlite"
    if existed:
        path.touch(mode=0o600)
    release: Callable[[], None] = lambda: None  # noqa: E731
    with pytest.raises(RuntimeError), removed_on_failure(path):
        release = MEANWHILE[meanwhile](path)
        raise RuntimeError("the import failed")
    try:
        assert path.stat().st_size > 0
        with closing(sqlite3.connect(path)) as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "memory_facts" in names or "customers" in names
    finally:
        release()
    if meanwhile == "another import succeeded":
        with Store.open(path) as store, store.begin() as mem:
            assert mem.facts.get("user", "city") is not None


def test_two_imports_of_one_new_path_at_once_keep_the_one_that_succeeded(
    export_lines: list[str], tmp_path: Path
) -> None:
    import subprocess
    import sys

    source = _file(tmp_path, export_lines)
    target = tmp_path / "race" / "memory.sqlite"
    command = [sys.executable, "-m", "philont", "import", str(source), "--db", str(target)]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in "ab"]
    errors = [run.communicate(timeout=300)[1].decode() for run in runs]
    ended = [(run.returncode, error) for run, error in zip(runs, errors, strict=True)]
    codes = sorted(code for code, _err in ended)

    alone = tmp_path / "alone" / "memory.sqlite"
    import_(alone, source)

    assert codes == [0, 5], ended  # one imported, the other found it holding memory
    assert layer_counts(target) == layer_counts(alone)

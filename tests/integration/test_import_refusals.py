"""An import file that is damaged, of another version, or not ours at all: a typed error that
names the line, and the target database exactly as it was (a digest of everything in it,
before and after), on SQLite and on a PostgreSQL agent that already holds memory. A line of
any length is refused after at most ``MAX_LINE_CHARS`` characters are read (a 1 GB line, a
binary file without line breaks), never read whole."""

from __future__ import annotations

import gzip
import hashlib
import importlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont import agents, migrate, transfer
from philont.db.schema import metadata
from philont.errors import PhilontError
from philont.store import Store
from philont.transfer import reader
from philont.transfer.format import MAX_LINE_CHARS
from tests.pg_support import Layout, _admin
from tests.support import examples, refused, written

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
REPO = Path(__file__).resolve().parents[2]


def _fill(store: Store, tag: str, *, counted: bool = True) -> None:
    """Some memory of every kind; ``counted=False``: none of the rows with counter ids
    (messages, actions), which two databases number alike (a merge of those is refused)."""
    with store.begin() as mem:
        mem.timeline.start_session(f"{tag}-laptop")
        mem.facts.store("user", f"{tag}_city", "Berlin")
        mem.notes.add(f"{tag}: the rent is warm")
        mem.skills.create(f"{tag}-unzip", "Unpack a zip", ["zip"], "unzip {file}")
        if counted:
            for i in range(3):
                mem.timeline.append(f"{tag} message {i} 🐱", session_id=f"{tag}-laptop")
            mem.actions.record("unzip", params={"file": "a.zip"}, success=True)


@pytest.fixture(scope="module")
def export_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A small memory, written through the services, as export lines (each ending in "\\n")."""
    path = tmp_path_factory.mktemp("source") / "memory.sqlite"
    with Store.open(path) as store:
        _fill(store, "src")
    buf = io.StringIO()
    transfer.export(path, buf)
    return buf.getvalue().splitlines(keepends=True)


@dataclass
class Target:
    """A database that already holds memory: how to import into it and a digest of it."""

    import_: Callable[..., object]
    """``import_(file, **keywords of transfer.import_)``"""
    digest: Callable[[], str]
    refuse: Callable[[str, str, str, bool], None]
    """``refuse(table, column, text, updates_only)``: add a host's rule to the target that
    refuses a row of ``table`` whose ``column`` holds ``text`` (triggers on SQLite; on
    PostgreSQL a CHECK constraint, or a trigger for updates only): a refusal the gate cannot
    foresee."""


def _sqlite_digest(path: Path) -> str:
    with closing(sqlite3.connect(str(path))) as conn:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    """A target that holds memory, imported into with ``--merge``."""
    return _target(request, tmp_path, filled=True)


@pytest.fixture(params=BACKENDS)
def empty_target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    """A target that holds nothing but its bootstrap rows, imported into without ``--merge``
    (the file's bootstrap rows replace the target's)."""
    return _target(request, tmp_path, filled=False)


def _target(request: pytest.FixtureRequest, tmp_path: Path, *, filled: bool) -> Target:
    mode: Literal["merge", "refuse"] = "merge" if filled else "refuse"
    if request.param == "sqlite":
        path = tmp_path / "target" / "memory.sqlite"
        with Store.open(path) as store:
            if filled:
                _fill(store, "tgt", counted=False)

        def refuse_sqlite(table: str, column: str, text: str, updates_only: bool = False) -> None:
            with closing(sqlite3.connect(str(path))) as conn:
                for event in ("UPDATE",) if updates_only else ("INSERT", "UPDATE"):
                    conn.execute(
                        f"CREATE TRIGGER host_refuses_{event} BEFORE {event} ON {table}"
                        f" WHEN instr(NEW.{column}, '{text}') BEGIN SELECT RAISE(ABORT, 'no'); END"
                    )

        return Target(
            import_=lambda file, **kw: transfer.import_(path, file, mode=mode, **kw),
            digest=lambda: _sqlite_digest(path),
            refuse=refuse_sqlite,
        )
    layout: Layout = request.getfixturevalue("pg_layout")
    agent = layout.new_agent()
    with Store.open(layout.url, agent=agent, upgrade=False) as store:
        if filled:
            _fill(store, "tgt", counted=False)
        else:
            agents.create(store, agent)  # with its bootstrap rows

    def digest() -> str:
        """Every row of the agent (its export, but the moment) and every agent's name."""
        buf = io.StringIO()
        transfer.export(layout.url, buf, agent=agent)
        lines = buf.getvalue().splitlines()
        header = json.loads(lines[0])
        header.pop("exported_at")
        with Store.open(layout.url, upgrade=False) as store:
            names = [a.name for a in agents.list_agents(store)]
        text = json.dumps([header, lines[1:], names])
        return hashlib.sha256(text.encode()).hexdigest()

    def refuse_pg(table: str, column: str, text: str, updates_only: bool = False) -> None:
        # the run's layout, shared by the tests of this process: the rule goes with the test
        qualified = f'"{layout.schema}".{table}'
        if not updates_only:  # PostgreSQL checks a CHECK before ON CONFLICT: an insert's
            drop = f"ALTER TABLE {qualified} DROP CONSTRAINT host_refuses"
            request.addfinalizer(lambda: _admin(drop))
            _admin(
                f"ALTER TABLE {qualified} ADD CONSTRAINT host_refuses"
                f" CHECK (strpos({column}, '{text}') = 0)"
            )
            return
        function = f'"{layout.schema}".host_refuses'
        request.addfinalizer(lambda: _admin(f"DROP FUNCTION {function} CASCADE"))
        _admin(
            f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" IF strpos(NEW.{column}, '{text}') > 0 THEN"
            " RAISE EXCEPTION 'no' USING ERRCODE = 'check_violation'; END IF;"
            f" RETURN NEW; END $$; CREATE TRIGGER host_refuses BEFORE UPDATE ON {qualified}"
            f" FOR EACH ROW EXECUTE FUNCTION {function}()"
        )

    return Target(
        import_=lambda file, **kw: transfer.import_(layout.url, file, mode=mode, agent=agent, **kw),
        digest=digest,
        refuse=refuse_pg,
    )


# --- damage: each returns the file's text (or bytes) and the line the error must name ----------

Damage = Callable[[list[str]], tuple[str | bytes, int]]


def _text(lines: list[str]) -> str:
    return "".join(lines)


def _index(lines: list[str], table: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(f'{{"table":"{table}"'))


def _set(lines: list[str], table: str, **values: object) -> tuple[str, int]:
    i = _index(lines, table)
    obj = json.loads(lines[i])
    obj["row"].update(values)
    edited = [*lines[:i], json.dumps(obj) + "\n", *lines[i + 1 :]]
    return _text(edited), i + 1


def truncated_mid_line(lines: list[str]) -> tuple[str, int]:
    cut = len(lines) // 2
    return _text(lines[:cut]) + lines[cut][: len(lines[cut]) // 2], cut + 1


def truncated_at_a_line(lines: list[str]) -> tuple[str, int]:
    return _text(lines[:-3]), len(lines) - 2  # no trailer: named after the last line


def empty_file(lines: list[str]) -> tuple[str, int]:
    return "", 1


def newer_format_version(lines: list[str]) -> tuple[str, int]:
    header = json.loads(lines[0])
    header["format_version"] = 2
    return _text([json.dumps(header) + "\n", *lines[1:]]), 1


def unknown_schema_revision(lines: list[str]) -> tuple[str, int]:
    header = json.loads(lines[0])
    header["schema_revision"] = "v999"
    return _text([json.dumps(header) + "\n", *lines[1:]]), 1


def duplicate_id(lines: list[str]) -> tuple[str, int]:
    i = _index(lines, "memory_notes")
    edited = [*lines[: i + 1], lines[i], *lines[i + 1 :]]
    return _text(edited), i + 2


def missing_parent(lines: list[str]) -> tuple[str, int]:
    return _set(lines, "memory_raw_messages", session_id="no-such-session")


def text_for_a_number(lines: list[str]) -> tuple[str, int]:
    return _set(lines, "memory_notes", importance="very")


def number_for_a_text(lines: list[str]) -> tuple[str, int]:
    return _set(lines, "memory_raw_messages", content=42)


def list_for_a_value(lines: list[str]) -> tuple[str, int]:
    return _set(lines, "memory_facts", confidence=[1])


def a_binary_file(lines: list[str]) -> tuple[bytes, int]:
    return gzip.compress(_text(lines).encode()), 1


def a_sqlite_database(lines: list[str]) -> tuple[bytes, int]:
    return b"SQLite format 3\x00" + bytes(range(256)) * 64, 1


def utf16_text(lines: list[str]) -> tuple[bytes, int]:
    return _text(lines).encode("utf-16"), 1


def a_csv_file(lines: list[str]) -> tuple[str, int]:
    return "id,content\n1,hello\n", 1


def another_json_lines_file(lines: list[str]) -> tuple[str, int]:
    return '{"event": "login", "user": "ana"}\n{"event": "logout"}\n', 1


def a_json_array(lines: list[str]) -> tuple[str, int]:
    return json.dumps([json.loads(line) for line in lines]) + "\n", 1


DAMAGES: list[Damage] = [
    truncated_mid_line,
    truncated_at_a_line,
    empty_file,
    newer_format_version,
    unknown_schema_revision,
    duplicate_id,
    missing_parent,
    text_for_a_number,
    number_for_a_text,
    list_for_a_value,
    a_binary_file,
    a_sqlite_database,
    utf16_text,
    a_csv_file,
    another_json_lines_file,
    a_json_array,
]


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.__name__)
def test_a_bad_file_is_a_typed_error_naming_its_line_and_changes_nothing(
    damage: Damage, export_lines: list[str], target: Target, tmp_path: Path
) -> None:
    content, line_number = damage(export_lines)
    file = written(tmp_path / "import.jsonl", content)

    error = refused(PhilontError, lambda: target.import_(file), target.digest)

    assert error.code.startswith("import_"), (error.code, error)
    assert getattr(error, "line_number", None) == line_number, error
    assert f"line {line_number}" in str(error)


def test_the_same_file_undamaged_imports(
    export_lines: list[str], target: Target, tmp_path: Path
) -> None:
    """The control: what the damages start from is a good file for this target."""
    file = written(tmp_path / "import.jsonl", _text(export_lines))
    before = target.digest()
    target.import_(file)
    assert target.digest() != before


# --- a file another process writes while it is imported ---------------------------------------

CHANGES: dict[str, Callable[[list[str]], str]] = {
    "rewritten in place, a value the check would refuse": lambda lines: _set(
        lines, "memory_notes", importance=5
    )[0],
    "a row appended after the trailer": lambda lines: _text(lines) + lines[1],
    "cut short": lambda lines: _text(lines[:-3]),
}


@pytest.mark.parametrize("checkpoint", [1, 3, 1000])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_file_written_between_the_check_and_the_load_is_refused(
    change: str,
    checkpoint: int,
    export_lines: list[str],
    target: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The load reads the file again after the check: a file another process wrote meanwhile
    went in unchecked (a note's importance of 5 was stored) or was refused for what the
    writer left half done. Now the load compares what it reads with what the check read
    (every ``CHECKPOINT_LINES`` lines and at the end) and refuses the changed file as such,
    the target as it was."""
    monkeypatch.setattr(reader, "CHECKPOINT_LINES", checkpoint, raising=False)  # none before
    file = written(tmp_path / "import.jsonl", _text(export_lines))

    def write_when_checked(table: str, done: int, total: int) -> None:
        if table == transfer.CHECKING and done == total:
            file.write_text(CHANGES[change](export_lines), encoding="utf-8")  # same inode

    error = refused(
        transfer.ImportFormatError,
        lambda: target.import_(file, progress=write_when_checked),
        target.digest,
    )
    assert "the file changed after it was checked" in str(error), error


class _LoadFailed(Exception):
    """A load's own error (a database's refusal, say) after the check."""


@pytest.mark.parametrize("later", ["unchanged", "bytes no longer UTF-8 far after"])
def test_a_load_stopped_by_its_own_error_reads_on_to_its_next_checkpoint_only(
    later: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later read stopped by an error read on to the file's end before the error went on
    (H116's review): the whole file once more for every failed load, and bytes that no longer
    decode anywhere after the next checkpoint replaced the load's own error by an untyped
    UnicodeDecodeError. It reads to the next checkpoint only, where the error stands."""
    monkeypatch.setattr(reader, "CHECKPOINT_LINES", 10)
    lines = [json.dumps({"n": i, "pad": "x" * 200}) + "\n" for i in range(2000)]
    file = written(tmp_path / "import.jsonl", "".join(lines))
    with reader.reopenable(file) as reopen:
        with reopen() as check:
            while check.readline():
                pass
        if later != "unchanged":
            with file.open("r+b") as raw:  # in place, the same file the import holds open
                raw.seek(len("".join(lines[:1500]).encode()))
                raw.write(b"\xff\xfe")
        with pytest.raises(_LoadFailed), reopen() as load:
            load.readline()
            load.readline()
            raise _LoadFailed
    assert vars(load)["_lines"] == 10  # read on from line 2 to the checkpoint at 10


def test_a_file_renamed_over_the_path_after_the_check_is_not_read(
    export_lines: list[str], target: Target, tmp_path: Path
) -> None:
    """The check's file is the one loaded (opened once): a file renamed over its path
    meanwhile (an export being written there) is not read unchecked."""
    file = written(tmp_path / "import.jsonl", _text(export_lines))
    other = written(tmp_path / "other.jsonl", _set(export_lines, "memory_notes", importance=5)[0])

    def rename_when_checked(table: str, done: int, total: int) -> None:
        if table == transfer.CHECKING and done == total and other.exists():
            other.replace(file)

    report = target.import_(file, progress=rename_when_checked)
    assert isinstance(report, transfer.ImportReport)
    assert not other.exists()
    again = target.digest()
    control = written(tmp_path / "checked.jsonl", _text(export_lines))
    target.import_(control)  # the checked file, merged again: nothing new
    assert target.digest() == again


# --- values Python's JSON parser cannot take, or a header the database cannot hold ------------

_DIGITS = sys.get_int_max_str_digits()
_PLACE = "<the value>"


@st.composite
def _unparsable(draw: st.DrawFn) -> str:
    """JSON text no stored value needs and Python's parser refuses with another error than a
    syntax error: a number of more digits than Python converts (ValueError), nesting deeper
    than its recursion limit (RecursionError)."""
    if draw(st.booleans()):
        sign = draw(st.sampled_from(["", "-"]))
        return sign + "9" * draw(st.integers(_DIGITS + 1, 4 * _DIGITS))
    depth = draw(st.integers(10_000, 100_000))  # past any recursion limit a test runs under
    opening, closing = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    return opening * depth + "0" + closing * depth


@st.composite
def _beyond_parsing(draw: st.DrawFn, lines: list[str]) -> tuple[str, int]:
    """An export whose one line holds such a value: as a row's column, an extra member of the
    header or of the trailer."""
    raw = draw(_unparsable())
    where = draw(st.integers(0, len(lines) - 1))
    obj = json.loads(lines[where])
    holder = obj.get("row", obj)
    column = draw(st.sampled_from(sorted(holder))) if "row" in obj else "extra"
    holder[column] = _PLACE
    line = json.dumps(obj).replace(json.dumps(_PLACE), raw, 1) + "\n"
    return _text([*lines[:where], line, *lines[where + 1 :]]), where + 1


@st.composite
def _sequence_beyond_64_bits(draw: st.DrawFn, lines: list[str]) -> tuple[str, int]:
    """An export whose header carries an id high-water mark past what a 64-bit counter holds."""
    header = json.loads(lines[0])
    table = draw(st.sampled_from(sorted(header["sequences"])))
    header["sequences"][table] = draw(
        st.integers(min_value=2**63) | st.integers(max_value=-(2**63) - 1)
    )
    return _text([json.dumps(header) + "\n", *lines[1:]]), 1


@examples(20)
@given(data=st.data())
def test_a_value_beyond_parsing_or_64_bits_is_a_typed_error_naming_its_line(
    data: st.DataObject, export_lines: list[str], target: Target, tmp_path: Path
) -> None:
    """A hand-edited or damaged line with a 5,000-digit number or 100,000 nested brackets failed
    with Python's ValueError or RecursionError, no line named; a header's ``sequences`` past
    64 bits passed the check and failed the load (an OverflowError on SQLite, a storage error
    on PostgreSQL). Each is refused while the file is checked, naming its line."""
    assert export_lines[0].count('"sequences":{"')  # the file carries some
    content, line_number = data.draw(
        _beyond_parsing(export_lines) | _sequence_beyond_64_bits(export_lines)
    )
    file = written(tmp_path / "import.jsonl", content)

    error = refused(transfer.ImportFormatError, lambda: target.import_(file), target.digest)

    assert error.line_number == line_number, error


# --- a row the database refuses: named by kind and line, never by the row's values -----------

REFUSED = "host-refuses-this"


def _edited(lines: list[str], table: str, **values: object) -> tuple[str, int, dict[str, object]]:
    text, number = _set(lines, table, **values)
    return text, number, json.loads(text.splitlines()[number - 1])["row"]


def a_taken_skill_name(lines: list[str]) -> tuple[str, int, dict[str, object]]:
    """A new skill (its own id) under a name the target's skill has: the unique name."""
    return _edited(lines, "memory_skills", name="tgt-unzip", description="a secret recipe")


def a_missing_parent(lines: list[str]) -> tuple[str, int, dict[str, object]]:
    return _edited(lines, "memory_raw_messages", session_id="the-secret-session")


def a_note_the_host_refuses(lines: list[str]) -> tuple[str, int, dict[str, object]]:
    return _edited(lines, "memory_notes", content=f"my secret pin, {REFUSED}")


Refused = Callable[[list[str]], tuple[str, int, dict[str, object]]]


@pytest.mark.parametrize(
    ("refused", "kind"),
    [
        (a_taken_skill_name, "unique"),
        (a_missing_parent, "memory_raw_sessions"),
        (a_note_the_host_refuses, "trigger|check"),
    ],
    ids=["unique", "foreign_key", "host_rule"],
)
def test_a_row_the_database_refuses_is_named_by_kind_never_by_its_values(
    refused: Refused, kind: str, export_lines: list[str], target: Target, tmp_path: Path
) -> None:
    """The gate lets these rows pass (their values are good); the target's database refuses
    them. The error names the line, the table and what was violated; the row's values (a
    skill's description, a message's session, a note's text) appear nowhere in it: PostgreSQL's
    DETAIL ("Key (agent_id, name)=(3, tgt-unzip) already exists", "Failing row contains
    (...)") was its message."""
    target.refuse("memory_notes", "content", REFUSED, False)
    error = _refused_without_its_values(target, tmp_path, *refused(export_lines))
    assert any(k in str(error) for k in kind.split("|")), error


def test_a_bootstrap_row_the_database_refuses_is_named_by_kind_never_by_its_values(
    export_lines: list[str], empty_target: Target, tmp_path: Path
) -> None:
    """Into an empty target the file's bootstrap rows replace the target's (an UPDATE, not an
    insert): a refusal of that was the database's error as it was, values and all."""
    empty_target.refuse("memory_pursuits", "intent", REFUSED, True)
    edited = _edited(export_lines, "memory_pursuits", intent=f"my secret plan, {REFUSED}")
    error = _refused_without_its_values(empty_target, tmp_path, *edited)
    assert error.code == "import_format", error
    assert "memory_pursuits row rejected by the database" in str(error), error


def _refused_without_its_values(
    target: Target, tmp_path: Path, content: str, line_number: int, row: dict[str, object]
) -> PhilontError:
    """The error importing ``content`` into ``target`` raised: it names ``line_number`` and
    no text of ``row`` but its key; the target is as it was."""
    file = written(tmp_path / "import.jsonl", content)

    error = refused(PhilontError, lambda: target.import_(file), target.digest)

    said = f"{error} {error.details}"
    assert error.details.get("line_number") == line_number, said
    assert f"line {line_number}" in str(error), said
    pk = {c.name for c in metadata.tables[_table(content, line_number)].primary_key.columns}
    values = [str(v) for k, v in row.items() if k not in pk and isinstance(v, str) and len(v) > 3]
    assert values
    for value in values:
        assert value not in said, (value, said)
    return error


def _table(content: str, line_number: int) -> str:
    return str(json.loads(content.splitlines()[line_number - 1])["table"])


# --- a line of any length --------------------------------------------------------------------


def _long_line_file(path: Path, lines: list[str], chars: int) -> Path:
    """The export with a note whose content is ``chars`` characters, on line 2, written in
    pieces (the test holds no such string itself)."""
    head = lines[0]
    with path.open("w", encoding="utf-8") as fh:
        fh.write(head)
        fh.write('{"table":"memory_notes","row":{"id":"n","content":"')
        piece = "x" * (1 << 20)
        for _ in range(chars // len(piece)):
            fh.write(piece)
        fh.write('","importance":0.5}}\n')
        fh.writelines(lines[1:])
    return path


def test_a_line_longer_than_any_row_is_refused_without_reading_it_whole(
    export_lines: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 1 << 20
    monkeypatch.setattr(reader, "MAX_LINE_CHARS", cap, raising=False)
    file = _long_line_file(tmp_path / "long.jsonl", export_lines, 64 * cap)
    target = tmp_path / "memory.sqlite"
    migrate.upgrade(target, backup=False)
    before = _sqlite_digest(target)

    tracemalloc.start()
    try:
        with pytest.raises(transfer.ImportFormatError) as caught:
            transfer.import_(target, file)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert caught.value.line_number == 2
    assert f"longer than {cap:,} characters" in str(caught.value)
    assert peak < 16 * cap, peak  # the 64 MiB line was never held
    assert _sqlite_digest(target) == before


def test_a_line_as_long_as_the_limit_still_imports(
    export_lines: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 1 << 20
    monkeypatch.setattr(reader, "MAX_LINE_CHARS", cap)
    i = _index(export_lines, "memory_notes")
    obj = json.loads(export_lines[i])
    obj["row"]["content"] = ""
    short = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    obj["row"]["content"] = "y" * (cap - len(short))
    line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert len(line) == cap + 1
    file = tmp_path / "edge.jsonl"
    file.write_text("".join([*export_lines[:i], line, *export_lines[i + 1 :]]), "utf-8")
    target = tmp_path / "memory.sqlite"

    transfer.import_(target, file)

    with Store.open(target) as store, store.begin() as mem:
        assert mem.notes.get(obj["row"]["id"]).content == obj["row"]["content"]  # type: ignore[union-attr]


def test_an_export_refuses_a_row_no_import_could_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export_module = importlib.import_module("philont.transfer.export")

    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store, store.begin() as mem:
        mem.notes.add("z" * 5000, id="big")
    monkeypatch.setattr(export_module, "MAX_LINE_CHARS", 4000)
    out = tmp_path / "out.jsonl"

    with pytest.raises(transfer.ExportRowTooLongError) as caught:
        transfer.export(path, out)

    assert "memory_notes" in str(caught.value) and "'big'" in str(caught.value)
    assert not out.exists() and list(tmp_path.glob(".out.jsonl.*")) == []


@pytest.mark.skipif(not HEAVY, reason="writes a 1 GB file (PHILONT_HEAVY=1)")
def test_a_one_gigabyte_line_is_refused_in_bounded_memory(
    export_lines: list[str], tmp_path: Path
) -> None:
    """The real limit, a real 1 GB line, in a process of its own: its peak memory is the
    limit's worth of text, not the line's."""
    file = _long_line_file(tmp_path / "huge.jsonl", export_lines, 1 << 30)
    target = tmp_path / "memory.sqlite"
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from philont import transfer\n"
        "try:\n"
        "    transfer.import_(sys.argv[1], Path(sys.argv[2]))\n"
        "except transfer.ImportFormatError as exc:\n"
        "    print(exc.line_number, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(target), str(file)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    line, peak_kib = map(int, done.stdout.split())
    assert line == 2
    assert peak_kib * 1024 < 4 * MAX_LINE_CHARS, peak_kib


NOT_UTF8 = [b"a\xffb", b"\xed\xa0\x80", b"\xc3", b"ok \x80\x80 then more"]
"""Stored text no UTF-8 decoder reads: a stray byte, an encoded surrogate (CESU-8), a cut
sequence, continuation bytes alone."""


@pytest.mark.parametrize("raw", NOT_UTF8, ids=repr)
@pytest.mark.parametrize(
    ("table", "column", "key"),
    [
        ("memory_notes", "content", "id"),
        ("memory_facts", "value_json", "id"),
        ("memory_raw_messages", "content", "id"),
    ],
)
def test_an_export_names_stored_text_that_is_not_utf8_and_writes_nothing(
    tmp_path: Path, table: str, column: str, key: str, raw: bytes
) -> None:
    """Text another program wrote as bytes that are not UTF-8 failed the export with sqlite3's
    bare OperationalError (a traceback from `philont export`): now the typed refusal names the
    table, the row and the column, and no file is written."""
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store:
        _fill(store, "x")
    with closing(sqlite3.connect(path)) as conn, conn:
        row_key = conn.execute(f"SELECT {key} FROM {table} ORDER BY rowid LIMIT 1").fetchone()[0]
        conn.execute(
            f"UPDATE {table} SET {column} = CAST(? AS TEXT) WHERE {key} = ?", (raw, row_key)
        )
    out = tmp_path / "out.jsonl"

    with pytest.raises(transfer.ExportTextNotUtf8Error) as caught:
        transfer.export(path, out)

    assert caught.value.details["table"] == table
    assert caught.value.details["key"] == {key: row_key}
    assert caught.value.details["column"] == column
    assert not out.exists() and [p.name for p in tmp_path.glob(".out*")] == []

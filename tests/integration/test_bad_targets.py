"""Every way in (Store.open, Memory.open, shared(), tools.call, the CLI's --db) refuses a target
that cannot be a memory database with the same typed error, and creates nothing."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy.engine import URL
from typer.testing import CliRunner

from philont import tools
from philont.cli import app
from philont.errors import DatabasePathError, InvalidDatabaseError, PhilontError
from philont.memory import Memory
from philont.store import Store, close_shared, shared

LONG_NAME = "x" * 5000
BAD_TARGETS: dict[str, tuple[object, type[PhilontError], str]] = {
    # id: (target, error, words the message must hold)
    "empty": ("", DatabasePathError, "the path is empty"),
    "blank": ("   ", DatabasePathError, "the path is empty"),
    "nul": ("a\x00b.sqlite", DatabasePathError, "NUL character"),
    "nul in a sqlite url": ("sqlite:////tmp/a\x00b", DatabasePathError, "NUL character"),
    "nul in a url object": (
        URL.create("sqlite+pysqlite", database="/tmp/a\x00b"),
        DatabasePathError,
        "NUL character",
    ),
    "nul in a postgres url": ("postgresql+psycopg://u@h/d\x00b", DatabasePathError, "NUL"),
    "in memory": (":memory:", DatabasePathError, "needs a database file"),
    "in-memory url": ("sqlite://", DatabasePathError, "needs a database file"),
    "in-memory url by name": ("sqlite:///:memory:", DatabasePathError, "needs a database file"),
    "name too long": (LONG_NAME, DatabasePathError, "too long"),
    "url with a name too long": (f"sqlite:////tmp/{LONG_NAME}", DatabasePathError, "too long"),
    "unknown user": ("~no-such-user-philont/memory.sqlite", DatabasePathError, "'~'"),
    # a lone surrogate no file name can hold: was UnicodeEncodeError from the path's resolve()
    "a surrogate": ("\ud800.sqlite", DatabasePathError, "cannot be a file name"),
    "unparsable url": ("://nothing", InvalidDatabaseError, "not a database URL"),
    # make_url raises a plain ValueError for a port that is no number (was raised as it was)
    "url with a port that is no number": (
        "postgresql+psycopg://app:s3cret@host:abc/db",
        InvalidDatabaseError,
        "not a database URL",
    ),
    "url with an unclosed ipv6 host": ("postgresql+psycopg://[::1", InvalidDatabaseError, "URL"),
    # neither SQLite nor PostgreSQL: was invalid_input from Store.open, and from `philont stats
    # --db` schema_error ("status() needs ...") after the command began, not a bad --db value
    "another database's url": ("mysql://app:s3cret@host/db", InvalidDatabaseError, "SQLite or"),
    "postgres without psycopg 3": ("postgresql+asyncpg://h/db", InvalidDatabaseError, "psycopg"),
    "sqlite url with a host": ("sqlite://relative.db", InvalidDatabaseError, "names a host"),
    # SQLite's own URI form: was taken as a path (made a folder 'file:' and a file 'x.db?mode=ro')
    "sqlite file uri": ("file:sub/x.db?mode=ro", DatabasePathError, "'file:' URI"),
    "sqlite file uri, no folder": ("file:x.db", DatabasePathError, "'file:' URI"),
}
IDS = list(BAD_TARGETS)


@pytest.fixture
def in_empty_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run in an empty working directory and check that nothing was created in it (an empty
    path once became the working directory; a bad one must not become a file)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    close_shared()
    assert os.listdir(tmp_path) == []


def _store_open(target: Any) -> object:
    return Store.open(target)


def _memory_open(target: Any) -> object:
    return Memory.open(target)


def _shared(target: Any) -> object:
    return shared(target)


OPENERS: dict[str, Callable[[Any], object]] = {
    "Store.open": _store_open,
    "Memory.open": _memory_open,
    "shared": _shared,
}


@pytest.mark.parametrize("opener", list(OPENERS))
@pytest.mark.parametrize("case", IDS)
def test_a_target_that_cannot_be_a_database_is_refused_by_name(
    case: str, opener: str, in_empty_dir: Path
) -> None:
    target, error, words = BAD_TARGETS[case]
    with pytest.raises(error) as raised:
        OPENERS[opener](target)
    assert type(raised.value) is error  # not a subclass, not the built-in ValueError
    assert words in str(raised.value)
    assert "s3cret" not in str(raised.value)  # a URL's password is never shown


@pytest.mark.parametrize("case", IDS)
def test_a_tool_call_on_such_a_target_is_a_result_naming_the_problem(
    case: str, in_empty_dir: Path
) -> None:
    target, error, words = BAD_TARGETS[case]
    result = tools.call("get_fact", {"namespace": "user", "key": "x"}, db=target)  # type: ignore[arg-type]
    assert not result.ok
    assert result.error_code == error.code
    assert words in (result.error or "")
    assert "s3cret" not in result.text


@pytest.mark.parametrize("case", [c for c in IDS if isinstance(BAD_TARGETS[c][0], str)])
@pytest.mark.parametrize("command", [["stats"], ["db", "current"], ["db", "upgrade"], ["demo"]])
def test_the_command_line_refuses_such_a_db_with_its_code(
    case: str, command: list[str], in_empty_dir: Path
) -> None:
    """A ``--db`` that cannot name a database is a bad value on the command line: bad usage
    (exit 2), naming the option and the reason, before anything is opened or created."""
    target, _error, words = BAD_TARGETS[case]
    result = CliRunner().invoke(app, [*command, "--db", str(target)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error (usage): Invalid value for '--db': "), result.output
    assert words in result.output and len(result.output.splitlines()) == 1, result.output
    assert "s3cret" not in result.output
    assert list(in_empty_dir.iterdir()) == []


def test_a_store_over_an_in_memory_engine_is_refused_before_any_schema_work() -> None:
    engine = sa_create_engine("sqlite://")
    try:
        with pytest.raises(DatabasePathError, match="needs a database file"):
            Store.from_engine(engine, upgrade=True)
    finally:
        engine.dispose()


KERNEL_FILES = (
    "/proc/self/status",
    "/proc/sys/kernel/hostname",
    "/sys/kernel/mm/transparent_hugepage/enabled",
)
"""Files of /proc and /sys (those this system has are tried)."""


@pytest.mark.parametrize("opener", list(OPENERS))
def test_a_file_that_is_no_regular_file_is_refused_before_sqlite_opens_it(
    opener: str, tmp_path: Path
) -> None:
    """A device (``/dev/null``: SQLite answered "disk I/O error", a storage error), a named
    pipe (SQLite's open would wait for a writer) or a file the kernel makes up
    (``/proc/self/status``, of size 0 and mode 0444, was "database_read_only", and read-only
    "schema_out_of_date"; a ``/sys`` file) is a path that cannot hold a database."""
    fifo = tmp_path / "pipe.sqlite"
    os.mkfifo(fifo)
    kernel = [p for p in KERNEL_FILES if Path(p).is_file()]
    for target in ("/dev/null", str(fifo), *kernel):
        with pytest.raises(DatabasePathError, match="not a regular file"):
            OPENERS[opener](target)
        if target in kernel:
            with pytest.raises(DatabasePathError, match="the kernel makes it up"):
                Store.open(target, read_only=True)
        result = tools.call("get_fact", {"namespace": "user", "key": "x"}, db=target)
        assert result.error_code == DatabasePathError.code, result.text


def test_a_loop_of_links_is_named_as_such(tmp_path: Path) -> None:
    """Was "'~' cannot be expanded (Symlink loop ...)": resolve()'s RuntimeError for a loop was
    taken for expanduser()'s."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for target in (tmp_path / "a", tmp_path / "a" / "memory.sqlite"):
        with pytest.raises(DatabasePathError, match="symbolic links") as raised:
            Store.open(target)
        assert "'~'" not in str(raised.value)


TEXTS = ["memory.sqlite", "/no/such/dir/m.sqlite", "~/m.sqlite", "sqlite:///rel/m.sqlite"]


@pytest.mark.parametrize("text", TEXTS)
def test_the_db_option_reads_its_text_and_asks_the_file_system_nothing(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--db`` is checked by its text alone (``resolve_url(text_only=True)``): where the path
    leads (a folder without permission, a loop of links) is the command's to find out, and
    its ``file_path`` refusal (exit 1), not a usage error."""
    from philont.cli.parsers import DB

    asked: list[object] = []

    def ask(*args: object, **kwargs: object) -> None:
        asked.append(args)
        raise OSError("the file system was asked")

    with monkeypatch.context() as patched:  # only around the parser: pytest stats files too
        for name in ("stat", "lstat", "readlink", "getcwd", "access", "scandir"):
            patched.setattr(os, name, ask)
        try:
            read = DB(text)
            # a name of 300 bytes: the file system's to refuse (macOS's takes 255 characters)
            refused = [DB.refuses(t) for t in ("x" * 300, "a/" * 2100, "\ud800")]
        except Exception as exc:  # shown below, once the file system is back
            read, refused = repr(exc), []
    assert asked == []
    assert read == text
    assert refused == [False, True, True]

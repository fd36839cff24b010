"""Shared pieces of the command line: options, output, errors and exit codes."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape

# typer (0.26+) vendors click as the private typer._click and exports none of these names (only
# BadParameter, Context, Exit, Abort); the `click` package, not a dependency of ours, has other
# classes and another context stack, which typer's parser never raises nor pushes.
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from philont import interrupts
from philont.cli.parsers import DB
from philont.errors import (
    ConflictError,
    DatabasePathError,
    FilePathError,
    NotFoundError,
    PhilontError,
    SchemaOutOfDateError,
)
from philont.log import get_logger

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn
    from sqlalchemy.engine import URL

    from philont.memory import Memory
    from philont.store import Store

log = get_logger(__name__)

# Output that is not a terminal is at most this wide: a table at its natural width, never cut.
PIPED_WIDTH = 10_000


class PlainConsole(Console):
    """A rich Console that, on a stream that is not a terminal (a pipe, a file, a test's
    capture), writes plain lines: no color (rich's own rule), no wrapping of long lines, and
    tables at their natural width instead of squeezed into 80 columns with cut cells. On a
    terminal it is an ordinary Console. Asked at every print: the stream may change (a test
    runner swaps ``sys.stdout``)."""

    @property
    def soft_wrap(self) -> bool:
        return self._soft_wrap or not self.is_terminal

    @soft_wrap.setter
    def soft_wrap(self, value: bool) -> None:
        self._soft_wrap = value

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


# emoji=False: a user's text such as ':a:' is printed as given, never as an emoji
out = PlainConsole(highlight=False, emoji=False)
err = PlainConsole(stderr=True, highlight=False, emoji=False)

# Exit codes: 0 ok · 1 error · 2 bad usage · 3 database not at head · 4 not found ·
# 5 refused (a conflict) · 130 interrupted (Ctrl-C: 128 + SIGINT, as a shell says it)
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_OUT_OF_DATE = 3
EXIT_NOT_FOUND = 4
EXIT_CONFLICT = 5
EXIT_INTERRUPTED = 130

_DB_KEY = "philont_db"
"""``click.Context.meta`` key (shared by a command's nested contexts): the ``--db`` given."""


def _remember_db(ctx: typer.Context, value: str | None) -> str | None:
    ctx.meta[_DB_KEY] = value
    return value


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database path or URL (default: $MEMORY_DB_PATH or ~/.philont/memory/...)",
        callback=_remember_db,
        parser=DB,
        metavar="PATH|URL",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def emit(data: Any) -> None:
    """Print JSON on stdout (one document)."""
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def fail(exc: PhilontError, *, code: int | None = None) -> typer.Exit:
    """Report a typed error on stderr and return the Exit to raise: ``code``, else the
    error's documented one (:func:`exit_code`)."""
    # Messages quote user text, paths and hints like `pip install 'philont[postgres]'`: they
    # are never read as rich markup.
    err.print(f"[red]error[/red] ({exc.code}): {escape(str(exc))}", markup=True)
    return typer.Exit(exit_code(exc) if code is None else code)


def exit_code(exc: PhilontError) -> int:
    """The documented exit code of a typed error (README, "Command line")."""
    if isinstance(exc, SchemaOutOfDateError):
        return EXIT_OUT_OF_DATE
    if isinstance(exc, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(exc, ConflictError):
        return EXIT_CONFLICT
    return EXIT_ERROR


def interrupted(what: str | None = None) -> typer.Exit:
    """Report a Ctrl-C (SIGINT) as one line, ``interrupted`` (with ``what`` was left as it
    was, when the command knows), and return the Exit to raise: 130."""
    err.print("interrupted" + (f": {what}" if what else ""), markup=False, soft_wrap=True)
    return typer.Exit(EXIT_INTERRUPTED)


def fail_usage(exc: UsageError) -> typer.Exit:
    """Report a command line click refused (an unknown option or command, a missing argument, a
    value out of range) as one line, ``error (usage): ...``, and return the Exit to raise."""
    where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
    message = " ".join(exc.format_message().split())
    err.print(f"error (usage): {message}{where}", markup=False)
    return typer.Exit(EXIT_USAGE)


def fail_os(exc: OSError) -> typer.Exit:
    """Report an operating-system error as one line, and return the Exit to raise (1). One
    about a path (missing, a directory, unreadable, on a full disk, ...) is what every typed
    refusal of a path you named is: ``file_path`` naming the path and the reason
    (:class:`~philont.errors.FilePathError`); one without a path is named by its errno."""
    reason = exc.strerror or str(exc)
    if exc.filename:
        return fail(FilePathError(os.fsdecode(exc.filename), reason))
    name = errno.errorcode.get(exc.errno or 0, "os_error")
    err.print(f"error ({name}): {reason}", markup=False)
    return typer.Exit(EXIT_ERROR)


class Commands(TyperGroup):
    """The group every ``philont`` command runs in: the one place where a user error becomes a
    message and an exit code. A :class:`PhilontError` (typed, with a stable code), an
    ``OSError`` (a path the user gave), a usage error (an unknown option, a value click
    refuses: exit 2) and the file's own state met by SQLite on the way (damaged pages, a lock
    held past the wait, a read-only file: typed by :func:`philont.db.retry.file_error`) are
    one line on stderr, never a traceback; anything else is a bug and keeps its traceback. A
    closed pipe (``philont ... | head``) ends the command quietly; Ctrl-C is ``interrupted``
    and exit 130 (a command that knows what it left as it was says so itself)."""

    def make_context(self, info_name: str | None, args: list[str], *a: Any, **kw: Any) -> Any:
        try:  # the options of ``philont`` itself (``--agent``) are parsed here
            return super().make_context(info_name, args, *a, **kw)
        except UsageError as exc:
            raise fail_usage(exc) from exc
        except KeyboardInterrupt:
            raise interrupted() from None
        except typer.Exit:
            raise  # said already (its context may be the Ctrl-C it reports)
        except Exception as exc:  # a value's parser importing a module as Ctrl-C came
            if interrupts.caused(exc):
                raise interrupted() from None
            raise

    def invoke(self, ctx: Any) -> Any:  # typer vendors its own click.Context
        try:
            done = super().invoke(ctx)
            interrupts.check()  # a Ctrl-C Python dropped on the way (an import's): as any other
            return done
        except NoArgsIsHelpError:
            raise  # a group given no command shows its help
        except KeyboardInterrupt:
            raise interrupted() from None
        except UsageError as exc:
            raise fail_usage(exc) from exc
        except PhilontError as exc:
            raise fail(exc, code=exit_code(exc)) from exc
        except BrokenPipeError:
            raise  # typer's main silences stdout and exits 1
        except typer.Exit:
            raise  # said already (its context may be the Ctrl-C it reports)
        except OSError as exc:
            raise fail_os(exc) from exc
        except Exception as exc:
            if interrupts.caused(exc):  # a Ctrl-C the interpreter wrapped (interrupts.caused)
                raise interrupted() from None
            typed = _file_error(exc, ctx.meta.get(_DB_KEY))
            if typed is None:
                raise  # not the file's state: a bug, with its traceback
            raise fail(typed, code=exit_code(typed)) from exc


def _file_error(exc: Exception, db: str | None) -> PhilontError | None:
    """The state of the database file that ``exc`` (a driver's error, raised bare or wrapped by
    SQLAlchemy) reports, typed; any other statement the database refused as a
    ``storage_error`` naming its kind and the database, never its text (which holds the
    statement's parameters: users' text; logged, its traceback at debug); None for anything
    else (a bug)."""
    dbapi = sys.modules.get("sqlalchemy.exc")  # not loaded: nothing raised a DBAPIError
    if not isinstance(exc, sqlite3.Error) and not (
        dbapi is not None and isinstance(exc, dbapi.DBAPIError)
    ):
        return None
    from philont.db.retry import database_failure, file_error

    where = _db_named(db)
    typed = file_error(exc, path=where)
    if typed is not None:
        return typed
    log.failure("cli.storage_error", exc)
    return database_failure(exc, where=where)


def _db_named(db: str | None) -> str:
    """The database a command was given (or the default one), as the error names it."""
    from philont.db.engine import database_name, resolve_url

    try:
        url = resolve_url(db)
    except PhilontError:
        return db or "the memory database"
    return database_name(url)


def resolve_existing(db: str | None) -> URL:
    """The database URL, refusing (``file_path``, exit 1) an SQLite file that does not exist
    yet, as ``philont db current`` and the Store do."""
    from philont.db.engine import missing_reason, resolve_url, sqlite_path

    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        reason = missing_reason(path)
        if reason == "no such file":  # `philont db upgrade` can create it (not under a file)
            reason += "; create it with `philont db upgrade`"
        raise DatabasePathError(str(path), reason)
    return url


PHASES = (
    "importing:checking",
    "importing:rows",
    "importing:indexing",
    "importing:done",
    "exporting:rows",
    "exporting:done",
    "upgrade:revisions",
    "embed:batches",
)
"""The phases of the long commands (``done``: the work returned, the command not yet ended),
each a moment where Ctrl-C must end the command as documented (tests/cli/test_ctrl_c.py)."""

HOLD_ENV = "PHILONT_TEST_HOLD"
"""Tests only: ``PHASE=FILE`` makes a command that reaches PHASE (:func:`reached`) create FILE
and wait there for a signal, so a test interrupts it inside that phase, not after it."""
HOLD_LIMIT_S = 60.0


def reached(phase: str) -> None:
    """A long command is inside ``phase`` (one of :data:`PHASES`) with work left. Unless a test
    holds it there (:data:`HOLD_ENV`), nothing happens."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}")
    interrupts.check()  # a Ctrl-C whose KeyboardInterrupt was lost stops the work here
    wanted, _, marker = os.environ.get(HOLD_ENV, "").partition("=")
    if wanted != phase or not marker or Path(marker).exists():
        return
    Path(marker).touch()
    deadline = time.monotonic() + HOLD_LIMIT_S
    # a SIGINT raises here (the eval loop runs at every tick) or is held (philont.interrupts)
    while time.monotonic() < deadline and not interrupts.held():
        time.sleep(0.01)


def progress(*columns: str | ProgressColumn) -> Progress:
    """A progress display on stderr, gone when done; none at all when stderr is not a terminal
    (a log file or a pipe gets no stray line)."""
    from rich.progress import Progress

    return Progress(*columns, console=err, transient=True, disable=not err.is_terminal)


def open_store(url: URL, *, read_only: bool = False) -> Store:
    """This command's Store on a database already at head (``read_only``: opened so, see
    ``Store.open``). On PostgreSQL the agent it serves (``--agent``, ``$PHILONT_AGENT``) must
    exist: looking at memory never creates an agent (a misspelt name is ``agent_not_found``,
    exit 4, as for ``export``); ``import`` makes its own."""
    from philont import agents
    from philont.store import Store

    store = Store.open(url, upgrade=False, read_only=read_only)
    try:  # a bad $PHILONT_AGENT is refused here too: the Store is closed either way
        name = store._agent(None)
        if store.backend.name == "postgresql" and name is not None:
            agents.require(store, name)
    except BaseException:
        store.close()
        raise
    return store


T = TypeVar("T")


def read_memory(db: str | None, work: Callable[[Memory], T]) -> T:
    """``work(mem)`` in one unit of work on this command's Store (a database not at head is
    refused), run again when the database was busy or the transaction conflicted with a
    concurrent one (:meth:`Store.run <philont.store.Store.run>`): ``work`` only reads and
    returns what the command prints. A file this process may not write (a read-only file
    or file system, a WAL-mode file in a read-only folder) is read through a read-only Store
    (``Store.open(read_only=True)``: reads then refresh no access times)."""
    from philont import migrate
    from philont.db.engine import is_postgres
    from philont.errors import DatabaseReadOnlyError

    url = resolve_existing(db)
    migrate.check(url)
    try:
        with open_store(url) as store:
            return store.run(work)
    except DatabaseReadOnlyError:
        if is_postgres(url):
            raise
    with open_store(url, read_only=True) as store:
        return store.run(work, write=False)

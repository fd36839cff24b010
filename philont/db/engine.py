"""Opening a memory database: path rules, file modes, PRAGMAs, transactional BEGIN, FTS5 check."""

from __future__ import annotations

import errno
import functools
import os
import re
import sqlite3
import stat
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from pydantic import PlainValidator
from sqlalchemy import Connection, Engine, event
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import StaticPool

from philont import filewrite, settings
from philont.arguments import checked
from philont.db import connections, cursors, fork, write_gate
from philont.db.backend import FOLD_FUNCTION, fold_stored
from philont.db.checkpoint import SAFETY_PAGES, Checkpointer
from philont.db.listen import listen_once, made_from
from philont.db.retry import (
    cannot_open,
    is_busy,
    mark_busy,
    shm_cannot_be_made,
    translate,
)
from philont.errors import (
    BackendError,
    DatabasePathError,
    DatabaseReadOnlyError,
    Fts5UnavailableError,
    InvalidDatabaseError,
    InvalidInputError,
    NotADatabaseError,
)
from philont.log import get_logger
from philont.schemas.inputs import BusyTimeoutMs

log = get_logger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
DIR_MODE = 0o700
FILE_MODE = 0o600


def target_kind(value: object) -> object:
    """A database: a path (text or ``os.PathLike``), a SQLAlchemy ``URL``, or None (the
    default database). What the text says is :func:`resolve_url`'s to check."""
    if value is None or isinstance(value, str | URL):
        return value
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return value
    kind = type(value).__name__
    raise ValueError(f"must be a path (text or pathlib.Path), a URL or None, got {kind}")


Target = Annotated[str | os.PathLike[str] | URL, PlainValidator(target_kind)]
"""What names a database (:func:`target_kind`): an argument declared so is checked on entry
(:mod:`philont.arguments`)."""


@checked
def resolve_url(target: Target | None = None, *, text_only: bool = False) -> URL:
    """A SQLAlchemy URL from an explicit URL or path, else ``$MEMORY_DB_PATH``, else the
    default ``~/.philont/memory/memory.sqlite``.

    A PostgreSQL URL names a database that holds any number of agents in one set of tables
    (the schema is the connection's, as its ``search_path`` says); the agent is chosen per unit
    of work (``philont.store``), never by the URL.

    This is the one gate every target passes (Store.open, shared(), tools.call, the CLI's
    ``--db``, migrations): what cannot name a database (an empty path, a NUL character, a
    ``~user`` without such a user, a name too long, a character no file name can hold) is
    refused with :class:`~philont.errors.DatabasePathError` before anything is opened; what
    is no path, URL or None (a number, a Session) with
    :class:`~philont.errors.InvalidInputError` naming ``target`` (:data:`Target`, checked on
    entry: never str() of anything else). A file's path is then made absolute, its links
    resolved: what the file system says on the way (a folder it may not search, a loop of
    links, a name too long for it) is a :class:`~philont.errors.DatabasePathError` too.

    ``text_only``: the text alone is checked, the file system never asked (the command line's
    ``--db``, whose "where" is the command's to find out); a file's URL then names the path as
    written, ``~`` expanded, neither made absolute nor resolved.
    """
    if isinstance(target, URL):
        url = target
    else:
        if target is None:
            target = settings.default_db_path()
        text_ = str(target)
        _check_text(text_)
        if "://" in text_:
            url = _parsed(text_)
        elif text_ == ":memory:":
            return URL.create("sqlite+pysqlite", database=":memory:")
        elif text_.startswith("file:"):
            raise DatabasePathError(text_, _SQLITE_URI)
        else:
            return URL.create("sqlite+pysqlite", database=str(_file_path(text_, text_only)))
    _check_url(url, text_only)
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise InvalidDatabaseError(
            f"unsupported database {url.drivername} ({url.render_as_string()!r}): "
            "use SQLite or PostgreSQL"
        )
    if url.get_backend_name() == "postgresql" and url.get_driver_name() != "psycopg":
        raise InvalidDatabaseError(
            f"PostgreSQL is supported through psycopg 3: use postgresql+psycopg://, "
            f"not {url.drivername}://"
        )
    return url


def _check_text(text_: str) -> None:
    """Refuse a target no database can have: empty or blank, or holding a NUL character
    (which the operating system, SQLite and libpq all take as the end of the name)."""
    if not text_.strip():
        raise DatabasePathError(text_, "the path is empty")
    if "\x00" in text_:
        raise DatabasePathError(text_, "it contains a NUL character (U+0000)")


_PASSWORD = re.compile(r"(://[^:/@]*:)[^@/]*@")


def _parsed(text_: str) -> URL:
    """``text_`` as a URL, or :class:`~philont.errors.InvalidDatabaseError` (SQLAlchemy says
    ArgumentError for most text and a plain ValueError for a port that is no number); the
    message shows the text with its password hidden, as the URL of any other refusal."""
    try:
        return make_url(text_)
    except (ArgumentError, ValueError) as exc:
        shown = _PASSWORD.sub(r"\1***@", text_)
        raise InvalidDatabaseError(f"{shown!r} is not a database URL ({exc})") from exc


_SQLITE_URI = (
    "an SQLite 'file:' URI is not read as a URI here (it would name a file or folder 'file:...'):"
    " give the file's path or a sqlite:/// URL (for mode=ro: Store.open(path, read_only=True))"
)
PATH_MAX = 4096
"""The longest path the operating system takes, in bytes (Linux's)."""


def _file_path(text_: str, text_only: bool = False) -> Path:
    """The path ``text_`` names, by its text: a ``~user`` without such a user, a character no
    file name can hold (a lone surrogate), a name longer than any file system's
    (:data:`PATH_MAX`; how long one name may be is the file system's to say: 255 bytes on
    Linux's, 255 characters on macOS's) are refused by name. Then (unless ``text_only``) the
    absolute path, once the file system has been asked about it: what it says (a folder it
    may not search, a loop of links, a name too long for this one) is refused here by name,
    not by the first ``stat`` somewhere later."""
    try:
        path = Path(text_).expanduser()
    except RuntimeError as exc:  # no such user, or no home directory
        raise DatabasePathError(text_, f"'~' cannot be expanded ({exc})") from exc
    try:
        name = os.fsencode(path)
    except UnicodeEncodeError as exc:
        raise DatabasePathError(text_, f"it cannot be a file name ({exc.reason})") from exc
    if len(name) >= PATH_MAX:
        raise DatabasePathError(text_, os.strerror(errno.ENAMETOOLONG))
    if text_only:
        return path
    try:
        path = path.resolve()
        path.exists()
    except RuntimeError as exc:  # resolve: a loop of symbolic links
        raise DatabasePathError(text_, f"{os.strerror(errno.ELOOP)} ({exc})") from exc
    except OSError as exc:
        raise DatabasePathError(text_, exc.strerror or str(exc)) from exc
    return path


def _check_url(url: URL, text_only: bool = False) -> None:
    """A URL given as such passes the same checks as a path (its parts, and its SQLite file)."""
    for part in (url.database, url.host, url.username, url.password):
        if isinstance(part, str) and "\x00" in part:
            raise DatabasePathError(url.render_as_string(), "it contains a NUL character (U+0000)")
    if url.get_backend_name() == "sqlite" and url.host:
        raise InvalidDatabaseError(
            f"{url.render_as_string()!r} names a host; an SQLite URL names a file: "
            "sqlite:///relative/path or sqlite:////absolute/path"
        )
    path = sqlite_path(url)
    if path is not None:
        _file_path(str(path), text_only)


def is_postgres(url: URL) -> bool:
    return url.get_backend_name() == "postgresql"


def sqlite_path(url: URL) -> Path | None:
    """The file behind an SQLite URL, or None for in-memory and non-SQLite URLs."""
    if url.get_backend_name() != "sqlite":
        return None
    db = url.database
    if not db or db == ":memory:" or db.startswith("file::memory:"):
        return None
    return Path(db)


def database_name(url: URL) -> str:
    """A database as messages name it, the same whatever the driver (a sync Store and an
    AsyncStore of one database say the same): the file of an SQLite URL, else the URL without
    its password and driver (``postgresql://app:***@host/db``)."""
    path = sqlite_path(url)
    if path is not None:
        return str(path)
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)


def require_file(url: URL, what: str = "a Store") -> None:
    """Refuse an in-memory SQLite database where a file is needed: it lives and dies with one
    connection, and a Store's units of work (and its schema upgrade) each use their own."""
    if url.get_backend_name() == "sqlite" and sqlite_path(url) is None:
        raise DatabasePathError(
            url.database or url.render_as_string(),
            f"{what} needs a database file, not an in-memory database (it would be empty on "
            "every connection); for a throwaway memory use a file in a temporary directory, "
            "e.g. Path(tempfile.mkdtemp()) / 'memory.sqlite'",
        )


def _mkdir_private(path: Path) -> None:
    """Create a directory (and missing parents) with mode 0700; existing ones keep theirs."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue  # another process made it meanwhile: it keeps its mode
        os.chmod(d, DIR_MODE)  # mkdir's mode is masked by the umask


def create_file(path: Path) -> bool:
    """Create ``path`` empty with mode 0600 unless it exists; whether this call created it
    (of two processes creating one path at once, exactly one did)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    os.chmod(path, FILE_MODE)
    return True


def missing_reason(path: Path) -> str:
    """Why ``path``, which does not exist, cannot be used as it is: a plain file where one of
    its directories belongs (nothing can create it there), else it is not there."""
    nearest = next((p for p in path.parents if p.exists()), None)
    if nearest is not None and not nearest.is_dir():
        return f"a parent is not a directory ({nearest})"
    return "no such file"


def check_file(path: Path, *, create: bool, writable: bool = True) -> bool:
    """Refuse, with a typed error and before SQLite touches anything, a path that cannot hold
    a memory database. With ``create`` the parent and ``backups/`` directories are made
    (0700) and a missing file is created empty with mode 0600; whether this call created the
    file (:func:`create_file`). ``writable=False``: the caller only reads (through
    :func:`connect_read_only`), so a read-only file is fine."""
    filewrite.regular(path, DatabasePathError)
    if path.exists():
        if not filewrite.may(path, os.R_OK):
            raise DatabasePathError(str(path), "permission denied: this process may not read it")
        if writable and not os.stat(path).st_mode & 0o222:
            raise DatabaseReadOnlyError(str(path))
        if writable and not filewrite.may(path, os.W_OK):
            raise DatabaseReadOnlyError(str(path), _not_writable(path))
        if file_kind(path) == "other":
            raise NotADatabaseError(str(path))
        unlinked_companions(path)
        if writable:
            writable_companions(path, refuse=True)
        else:
            readable_companions(path)
        return False
    if not create:
        raise DatabasePathError(str(path), missing_reason(path))
    unlinked_companions(path)  # a link left beside a file not made yet: SQLite would use it
    try:
        _mkdir_private(path.parent)
        _mkdir_private(settings.backup_dir_for(path))
        return create_file(path)
    except NotADirectoryError as exc:
        raise DatabasePathError(str(path), "a parent is not a directory") from exc
    except PermissionError as exc:
        raise DatabaseReadOnlyError(str(path), "the directory is not writable") from exc
    except OSError as exc:  # a parent that cannot be created (/proc/x/...), a full disk, ...
        raise DatabasePathError(str(path), exc.strerror or str(exc)) from exc


def unlinked_companions(path: Path) -> None:
    """Refuse, with a :class:`DatabasePathError` naming it and the fix, a ``-wal`` or ``-shm``
    beside ``path`` that is a link: a symbolic one (to a file, a directory or nothing),
    which SQLite refuses to open ("unable to open database file"), or a file with other
    names (a hard link), into which SQLite would write the database's pages and locks,
    overwriting whatever file those other names are."""
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        linked = _linked(companion)
        if linked is not None:
            raise DatabasePathError(
                str(path),
                f"the {suffix} file beside it ({companion}) is {linked}: {_UNLINK[linked]}",
            )


_SYMLINK = "a symbolic link"
_HARD_LINK = "a hard link (the file has other names)"
_UNLINK = {
    _SYMLINK: "SQLite does not open one; remove the link while no program has the database open",
    _HARD_LINK: "SQLite would write into the other file; remove this name, or the other ones, "
    "while no program has the database open",
}


def _linked(companion: Path) -> str | None:
    """What link ``companion`` is (:data:`_SYMLINK`, :data:`_HARD_LINK`), or None: a file of
    its own, or none at all."""
    try:
        found = os.lstat(companion)
    except OSError:  # none (the usual case), or nothing to judge it by
        return None
    if stat.S_ISLNK(found.st_mode):
        return _SYMLINK
    if found.st_nlink > 1:
        return _HARD_LINK
    return None


def writable_companions(path: Path, *, refuse: bool) -> None:
    """Give a read-only ``-wal`` or ``-shm`` beside ``path``, a file this process may write,
    the file's mode, as SQLite gives them when it makes them. A read-only open of a read-only
    file (``chmod 444``; a read-only Store) makes them so, with the file's mode, and cannot
    remove them; once the file is writable again SQLite opens a read-only ``-shm`` read-only
    and refuses every write of every connection ("attempt to write a readonly database")
    until something removes it (a read-only ``-wal`` fails the first connection, whose close
    replaces it). Ours are given the file's mode (logged), one of mode 000 too (opened by path
    only, which needs no permission); another user's ``-shm`` is refused (``refuse``: a
    :class:`DatabaseReadOnlyError` naming it and the fix), and another user's ``-wal`` or
    ``-shm`` this process may not read (mode 000) is a :class:`DatabasePathError` naming it;
    another user's readable ``-wal`` is left to SQLite. Called before SQLite opens them: at the
    check of the file and
    when a writing engine makes a connection (``refuse=False``: SQLite's refusal says it).

    Only a regular file with no other name is changed, never what a link names (a
    ``-shm`` linked to a private key would make the key readable by everyone):
    :func:`unlinked_companions` refuses links at the check of the file, and a link made
    since is left to SQLite."""
    if not filewrite.may(path, os.W_OK):
        return
    mode = stat.S_IMODE(os.stat(path).st_mode)
    for suffix, companion, found in _companion_files(path):
        ours = found.st_uid == os.geteuid()
        owner_may = found.st_mode & 0o600 == 0o600  # read and write
        if filewrite.may(companion, os.W_OK) and (owner_may or not ours):
            continue
        if ours:  # read-only or mode 000 (nothing but its owner may chmod it): the file's mode
            with suppress(OSError):  # gone meanwhile: SQLite makes it anew
                _chmod_unlinked(companion, found, mode)
        elif refuse and not filewrite.may(companion, os.R_OK):
            raise _unreadable(path, companion, found)
        elif refuse and suffix == "-shm":
            raise DatabaseReadOnlyError(
                str(path),
                f"the {suffix} file beside it ({companion}) is read-only to this process "
                f"(another user's, mode {oct(stat.S_IMODE(found.st_mode))}; a read-only open "
                "of the database leaves it so) and SQLite would open it read-only: make it "
                "writable by this user, or remove it while no program has the database open",
            )


def readable_companions(path: Path) -> None:
    """A read-only open's check of the ``-wal`` and ``-shm`` beside ``path``: one this process
    may not read (mode 000, ours or another user's) is a :class:`DatabasePathError` naming it
    and the fix (SQLite said only "unable to open database file"). A read-only open changes no
    file, so ours keeps its mode (a writable open gives it the file's:
    :func:`writable_companions`)."""
    for _, companion, found in _companion_files(path):
        if not filewrite.may(companion, os.R_OK):
            raise _unreadable(path, companion, found)


def _companion_files(path: Path) -> Iterator[tuple[str, Path, os.stat_result]]:
    """The ``-wal`` and ``-shm`` beside ``path`` that are regular files of one name: suffix,
    path and :func:`os.lstat`. None (the usual case), a link (refused at the file's check) and
    one gone or not to be judged are left out."""
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        try:
            found = os.lstat(companion)
        except OSError:
            continue
        if stat.S_ISREG(found.st_mode) and found.st_nlink == 1:
            yield suffix, companion, found


def _unreadable(path: Path, companion: Path, found: os.stat_result) -> DatabasePathError:
    """The refusal of a ``-wal`` or ``-shm`` (``companion``, :func:`os.lstat`'s ``found``)
    beside ``path`` that this process may not read."""
    ours = found.st_uid == os.geteuid()
    return DatabasePathError(
        str(path),
        f"the {companion.name.removeprefix(path.name)} file beside it ({companion}) is "
        f"{'this' if ours else 'another'} user's, mode {oct(stat.S_IMODE(found.st_mode))}, "
        "which this process may not read: make it readable and writable by this user"
        + (" (a writable open does)" if ours else "")
        + ", or (once no program has the database open) remove it",
    )


def _chmod_unlinked(companion: Path, found: os.stat_result, mode: int) -> None:
    """Give ``companion`` the permission bits ``mode`` if it is still the file ``found``
    (:func:`os.lstat`'s): opened without following a link, so a link put in its place
    meanwhile is never followed; nothing if it has other names by now."""
    o_path = getattr(os, "O_PATH", None)  # Linux: opens a file of mode 000 too
    access = os.O_RDONLY | os.O_NONBLOCK if o_path is None else o_path
    fd = os.open(companion, access | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (found.st_dev, found.st_ino) or now.st_nlink > 1:
            return
        if o_path is None:
            os.fchmod(fd, mode)
        else:  # a path-only descriptor takes no fchmod; its /proc name is that file itself
            os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)
    log.info("store.companion_made_writable", file=str(companion), mode=oct(mode))


def _not_writable(path: Path) -> str:
    """Why this process may not write the file ``path``, which it may read."""
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        return "it is on a read-only file system"
    return "permission denied: this process may not write it"


def connect_read_only(
    path: str | Path,
    *,
    immutable: bool = False,
    timeout: float = 5.0,
    factory: type[connections.Connection] = connections.Connection,
    check_same_thread: bool = True,
) -> sqlite3.Connection:
    """A read-only sqlite3 connection to the file ``path`` (``immutable``: without locks or
    the WAL, for a look at the file itself). Its name is quoted into SQLite's URI form:
    ``?``, ``#`` and ``%`` in a file name are part of the name, never a query (which would
    drop ``mode=ro`` and create a stray file), a fragment or an escape. ``timeout``: seconds
    to wait for another connection's lock; ``factory``: the connection's class;
    ``check_same_thread``: as ``sqlite3.connect``'s (False under aiosqlite).

    A WAL-mode file is read through its ``-shm`` file, which SQLite creates beside it when
    missing; where it cannot (the directory is not writable: a read-only mount, another
    user's folder) :func:`_without_shm` reads it as it is or refuses it by name, never as
    "unable to open database file" (which was reported as a damaged database)."""
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    name = f"file:{quote(os.fspath(path))}?{flags}"
    conn = connections.connect(
        name, uri=True, timeout=timeout, factory=factory, check_same_thread=check_same_thread
    )
    if immutable:
        return conn
    try:
        conn.execute("PRAGMA schema_version").fetchone()  # the first read opens the WAL's index
    except sqlite3.Error as exc:
        conn.close()
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_CANTOPEN:
            raise
        return _without_shm(Path(path), exc, timeout, factory, check_same_thread)
    return conn


def _without_shm(
    path: Path,
    exc: sqlite3.Error,
    timeout: float,
    factory: type[connections.Connection],
    check_same_thread: bool,
) -> sqlite3.Connection:
    """``path`` exists but SQLite cannot open what it needs beside it to read it (``exc``):
    with no ``-shm`` in a directory that is not writable, a WAL-mode file whose ``-wal`` holds
    nothing is read as it is (``immutable``: everything committed is in the file). One whose
    ``-wal`` holds changes cannot be read without creating ``-shm`` (``immutable`` would
    silently read it without them), nor can anything else SQLite cannot open: the typed
    refusal of :func:`~philont.db.retry.cannot_open`."""
    wal = Path(f"{path}-wal")
    empty_wal = not wal.exists() or wal.stat().st_size == 0
    if empty_wal and shm_cannot_be_made(path):
        return connect_read_only(
            path,
            immutable=True,
            timeout=timeout,
            factory=factory,
            check_same_thread=check_same_thread,
        )
    raise cannot_open(path, str(exc)) from exc


def file_kind(path: Path) -> str:
    """What the file ``path`` holds: ``'sqlite'`` (a database SQLite reads; an empty file is a
    new one), ``'damaged'`` (SQLite's header, but SQLite cannot read it: later checks name
    what is wrong) or ``'other'`` (not an SQLite database).

    Read through SQLite, never with ``open()``: closing any descriptor of a file drops every
    POSIX lock this process holds on it, SQLite's included, and a process whose connections
    lost their lock can have the WAL deleted under them by another process's last close
    (sqlite.org/howtocorrupt.html, 2.2): its later commits go to an unlinked file. Opened
    ``immutable``: it takes no lock and leaves no ``-wal``/``-shm`` beside the file."""
    try:
        with closing(connect_read_only(path, immutable=True)) as conn:
            conn.execute("PRAGMA journal_mode").fetchone()
            return "sqlite"
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_CANTOPEN:
            raise DatabasePathError(str(path), "it cannot be opened") from exc
    # SQLite cannot use this file (not a database, or damaged): nothing here has a lock to lose.
    with path.open("rb") as fh:
        return "damaged" if fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER else "other"


@functools.cache
def ensure_fts5() -> None:
    """Fail clearly when this Python's SQLite lacks FTS5 or its trigram tokenizer."""
    conn = connections.connect(":memory:")
    try:
        options = {r[0] for r in conn.execute("PRAGMA compile_options")}
        if "ENABLE_FTS5" not in options:
            raise Fts5UnavailableError(sqlite3.sqlite_version)
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='trigram')")
    except sqlite3.OperationalError as exc:
        raise Fts5UnavailableError(sqlite3.sqlite_version) from exc
    finally:
        conn.close()


BEGIN_OPTION = "philont_begin"
"""Execution option naming how a transaction begins: "DEFERRED" (default) or "IMMEDIATE"."""
BEGIN_MODES = ("DEFERRED", "IMMEDIATE")


_WITH_HOOKS: weakref.WeakSet[Engine] = weakref.WeakSet()


def has_sqlite_hooks(engine: Engine) -> bool:
    """Whether ``engine`` runs philont's SQLite set-up: transactional BEGIN (so SAVEPOINTs and
    DDL are transactional), WAL, busy timeout, foreign keys."""
    return made_from(engine) in _WITH_HOOKS


def require_sqlite_hooks(engine: Engine, what: str = "Store.from_engine") -> None:
    """Refuse a SQLite engine without philont's set-up: under pysqlite's own transaction
    handling a SAVEPOINT issued before the first write is not inside any transaction, so its
    release commits, and a host's rollback would leave philont's writes in place."""
    if engine.dialect.name == "sqlite" and not has_sqlite_hooks(engine):
        raise InvalidDatabaseError(
            f"{what}: this SQLite engine runs pysqlite's own transaction handling, under which "
            "a rolled-back host transaction can keep philont's writes; make the engine with "
            "philont.db.engine.create_engine(path) (a plain SQLAlchemy Engine with "
            "transactional BEGIN, WAL and foreign keys; philont.aio.create_async_engine for "
            "async), or use Store.open(path)"
        )


def switch_to_wal(cursor: Any, timeout_ms: int) -> None:
    """``PRAGMA journal_mode = WAL`` on ``cursor``'s connection, waiting up to ``timeout_ms``
    for another connection's lock. SQLite never calls the busy handler for this switch (it
    asks for the exclusive lock while holding a read lock), so a rollback-journal file that
    another connection is writing failed at once with "database is locked", whatever the busy
    timeout: the switch is retried here until the timeout, as every other lock is waited on."""
    deadline = time.monotonic() + timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:
            left = deadline - time.monotonic()
            if left <= 0 or not is_busy(exc):
                raise
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.1)


def install_sqlite_hooks(
    engine: Engine,
    *,
    foreign_keys: bool,
    busy_timeout_ms: int | None = None,
    read_only: bool = False,
    wal: bool = True,
) -> None:
    """philont's set-up of ``engine``'s connections (see :func:`has_sqlite_hooks`).
    ``read_only`` (:func:`sqlite_read_only_engine`): connections that never write, so no
    WAL switch, checkpoints or write gate, and every transaction begins DEFERRED.
    ``wal=False``: the file keeps its journal mode (an import switches it once it has
    committed: a refused one changes no byte of the file)."""
    _WITH_HOOKS.add(engine)
    path = sqlite_path(engine.url)
    writes = path is not None and not read_only
    checkpointer = _start_checkpoints(engine, path) if writes and path is not None else None
    timeout = settings.BUSY_TIMEOUT_MS if busy_timeout_ms is None else int(busy_timeout_ms)
    _BUSY_TIMEOUTS[engine] = timeout
    gate = write_gate.gate_for(path) if writes and path is not None else None
    if gate is not None and path is not None:
        write_gate.install(engine)
        cursors.install(engine)
        # before the first read (_on_connect's) opens them
        event.listen(engine, "connect", _companions_made_writable(path), insert=True)
    event.listen(engine, "before_cursor_execute", cursors.refuse_undecoded_keys)
    event.listen(engine, "after_cursor_execute", cursors.refuse_unmatched_undecoded)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # pysqlite's own transaction handling would make DDL and SAVEPOINT non-transactional;
        # take BEGIN into our hands (SQLAlchemy's documented recipe).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        # busy_timeout first, so a locked file is waited on instead of failing the WAL switch
        # (the original's order could treat a busy database as corrupt, spec Q-D1).
        cur.execute(f"PRAGMA busy_timeout = {timeout}")
        _record.info[_BUSY_MS] = timeout
        try:
            if wal and not read_only:  # a read-only file is read in the journal mode it has
                switch_to_wal(cur, timeout)
        except sqlite3.Error as exc:  # the first read: SQLite opens what it needs beside the file
            if (
                path is None
                or getattr(exc, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_CANTOPEN
            ):
                raise
            raise cannot_open(path, str(exc)) from exc
        if not read_only:
            cur.execute("PRAGMA synchronous = NORMAL")
        if checkpointer is not None:
            cur.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_PAGES}")
        cur.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        cur.close()
        dbapi_conn.create_function(FOLD_FUNCTION, 1, fold_stored, deterministic=True)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # BEGIN IMMEDIATE (execution option ``philont_begin``) takes the write lock up front,
        # waiting up to busy_timeout; a DEFERRED transaction that reads and then writes can
        # instead fail at once with SQLITE_BUSY_SNAPSHOT when another writer committed between.
        mode = conn.get_execution_options().get(BEGIN_OPTION, "DEFERRED")
        if mode not in BEGIN_MODES:
            raise ValueError(f"{BEGIN_OPTION} must be one of {BEGIN_MODES}, got {mode!r}")
        if read_only:  # SQLite refuses BEGIN IMMEDIATE on a read-only connection
            mode = "DEFERRED"
        _begin_as(conn, mode, gate, timeout)

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        _on_sqlite_error(context, timeout)

    if not read_only:
        event.listen(engine, "checkin", _drop_if_opened_read_only)


def _companions_made_writable(path: Path) -> Callable[[Any, Any], None]:
    """A writing engine's connect hook: :func:`writable_companions` of its file."""

    def on_connect(_dbapi: Any, _record: Any) -> None:
        writable_companions(path, refuse=False)

    return on_connect


def _on_sqlite_error(context: ExceptionContext, timeout_ms: int) -> None:
    """Mark a failed statement's error with the busy timeout its connection waited
    (RetryPolicy), and its connection when SQLite refused a write as read-only where no
    cursor of ours saw it (a COMMIT: :func:`_drop_if_opened_read_only`). (A read-only Store's
    refusal of a write is typed where SQLite refuses it: :class:`ReadOnlyConnection`.)"""
    exc = context.original_exception
    if isinstance(exc, sqlite3.Error):
        mark_busy(exc, timeout_s=timeout_ms / 1000)
    pooled = getattr(context.connection, "connection", None)
    if pooled is not None and isinstance(translate(exc), DatabaseReadOnlyError):
        cursors.mark_refused(pooled.dbapi_connection)


def _drop_if_opened_read_only(dbapi: Any, record: Any) -> None:
    """The pool's checkin of a writing engine's connection: one SQLite refused a write on as
    read-only (:func:`philont.db.cursors.refused_read_only`: whatever ran the statement, the
    ORM, Core, a lean write, a host's DB-API call, a BEGIN) is dropped, not pooled, when SQLite
    opened it read-only (:func:`_opened_read_only`), so that a file writable again is written
    again by the next unit of work. The other connections are kept (they may write)."""
    if dbapi is None:  # invalidated already
        return
    tracked = cursors.refused_read_only(dbapi)
    if tracked is not None and _opened_read_only(tracked):
        record.invalidate()


def _opened_read_only(dbapi: sqlite3.Connection) -> bool:
    """Whether ``dbapi``, refused a write as read-only, is a connection SQLite opened
    read-only (the file was not writable then; while it is open, the ``-wal``/``-shm`` it
    made keep every connection of this process to the file read-only), which stays so for
    its life: not one a host made read-only itself (``PRAGMA query_only``)."""
    try:
        return not sqlite3.Connection.execute(dbapi, "PRAGMA query_only").fetchone()[0]
    except sqlite3.Error:  # no connection to ask (closed meanwhile): leave it to the pool
        return False


def _begin_as(conn: Any, mode: str, gate: write_gate.WriteGate | None, timeout_ms: int) -> None:
    """Begin ``conn``'s transaction in ``mode`` (:data:`BEGIN_MODES`): an IMMEDIATE one behind
    ``gate`` (the file's, None: no gate); a DEFERRED one does not wait for a write lock this
    thread holds itself (in an open unit of work): its first write is refused at once, a wait
    would never end."""
    if mode == "IMMEDIATE":
        _begin(conn, "BEGIN IMMEDIATE", gate, timeout_ms)
    else:
        _begin(conn, "BEGIN", None, 0 if gate is not None and gate.held_here() else timeout_ms)


def _begin(conn: Any, statement: str, gate: write_gate.WriteGate | None, timeout_ms: int) -> None:
    """Run ``statement`` (a BEGIN) on ``conn``, a writing one behind ``gate`` (sync SQLite).

    Straight on the DB-API connection: a statement through SQLAlchemy's execution machinery
    costs more than the BEGIN itself, on every transaction. A failure (BEGIN IMMEDIATE on a
    locked file) is raised as SQLAlchemy would have wrapped it, with how long it waited."""
    dbapi = conn.connection.dbapi_connection
    info = conn.connection.info
    started = time.monotonic()
    sync = isinstance(dbapi, sqlite3.Connection)
    try:
        if gate is not None and sync:
            _queue_for_the_lock(dbapi, info, gate, timeout_ms)
        elif sync:
            _set_busy_timeout(dbapi, info, timeout_ms)  # back from a queued BEGIN's shorter one
        if sync:
            dbapi.execute(statement)
        else:  # the async driver's adapter (aiosqlite): a cursor, awaited for us
            dbapi.cursor().execute(statement)
    except BaseException as exc:
        # a BEGIN that failed holds no lock, so no gate either (and the queue did not move)
        write_gate.give_back(info, moved=False)
        if not isinstance(exc, sqlite3.Error):
            raise
        # how long it waited: a lock waited out is given up, not retried (RetryPolicy)
        mark_busy(exc, timeout_s=timeout_ms / 1000, waited_s=time.monotonic() - started)
        raise DBAPIError.instance(statement, (), exc, sqlite3.Error) from exc


_BUSY_TIMEOUTS: weakref.WeakKeyDictionary[Engine, int] = weakref.WeakKeyDictionary()


def busy_timeout_s(engine: Engine) -> float:
    """How long a connection of ``engine`` waits for another's lock, in seconds (the engine's
    ``busy_timeout_ms``; ``settings.BUSY_TIMEOUT_MS`` for an engine not set up here)."""
    return _BUSY_TIMEOUTS.get(made_from(engine), settings.BUSY_TIMEOUT_MS) / 1000


_BUSY_MS = "philont_busy_timeout_ms"
"""The busy timeout a pooled connection has now (its pool record's ``info``)."""


def _set_busy_timeout(dbapi: sqlite3.Connection, info: dict[Any, Any], ms: int) -> None:
    if info.get(_BUSY_MS) != ms:
        dbapi.execute(f"PRAGMA busy_timeout = {ms}")
        info[_BUSY_MS] = ms


def _queue_for_the_lock(
    dbapi: sqlite3.Connection, info: dict[Any, Any], gate: write_gate.WriteGate, timeout_ms: int
) -> None:
    """Take the file's write gate for a writing unit of work (philont.db.write_gate): wait
    behind this process's other writers, first come first served, while they finish
    transactions; SQLite's own wait for this BEGIN is what is left of the busy timeout since
    the last one finished. Nothing finished for the busy timeout: busy, as SQLite would say,
    having waited it all."""
    since = write_gate.take(info, gate, timeout_ms / 1000)
    if since is None:
        raise write_gate.too_long(timeout_ms / 1000)
    left = timeout_ms - int(since * 1000)
    _set_busy_timeout(dbapi, info, timeout_ms if left > timeout_ms * 0.9 else max(0, left))


_CHECKPOINTERS: weakref.WeakKeyDictionary[Engine, Checkpointer] = weakref.WeakKeyDictionary()


def _start_checkpoints(engine: Engine, path: Path) -> Checkpointer:
    """WAL checkpoints of ``engine``'s commits in a background thread (philont.db.checkpoint)."""
    checkpointer = _CHECKPOINTERS[engine] = Checkpointer(path)

    def committed(conn: Connection) -> None:
        if _changed_rows(conn):
            checkpointer.committed()

    event.listen(engine, "commit", committed)
    event.listen(engine, "engine_disposed", lambda _engine: checkpointer.stop())
    return checkpointer


_CHANGES = "philont_total_changes"
"""How many rows a pooled connection had changed at its last commit that changed any
(sqlite3's ``total_changes``; its pool record's ``info``)."""


def _changed_rows(conn: Connection) -> bool:
    """Whether the transaction ``conn`` is committing changed rows (an INSERT, UPDATE or DELETE
    since its connection's last such commit), so that the checkpointer has pages to copy: a
    unit of work that only read (a context turn, every turn) wakes no thread. A commit of DDL
    alone changes no row: its pages wait for the next commit that does, or for the writers'
    own ``SAFETY_PAGES`` checkpoint. True when the driver does not say (an async adapter)."""
    pooled = conn.connection
    total = getattr(pooled.dbapi_connection, "total_changes", None)
    if total is None:
        return True
    if pooled.info.get(_CHANGES, 0) == total:
        return False
    pooled.info[_CHANGES] = total
    return True


def checkpointer_of(engine: Engine) -> Checkpointer | None:
    """The background checkpointer of a SQLite file engine made here (None otherwise)."""
    return _CHECKPOINTERS.get(made_from(engine))


@checked
def create_engine(
    target: Target | None = None,
    *,
    foreign_keys: bool = True,
    create: bool = True,
    echo: bool = False,
    busy_timeout_ms: BusyTimeoutMs | None = None,
) -> Engine:
    """An Engine on a memory database (default: ``$MEMORY_DB_PATH`` or the default path).

    SQLite files get mode 0600 in a 0700 directory with a 0700 ``backups/`` beside them, WAL,
    ``synchronous=NORMAL``, ``busy_timeout``, foreign keys (unless ``foreign_keys=False``, as
    migrations need) and transactional DDL. ``busy_timeout_ms`` overrides how long a connection
    waits for another one's lock (default ``settings.BUSY_TIMEOUT_MS``). Transactions begin
    DEFERRED unless the execution option ``philont_begin="IMMEDIATE"`` is set.
    """
    url = resolve_url(target)
    if is_postgres(url):
        return _create_pg_engine(url, create=create, echo=echo)
    if url.get_backend_name() != "sqlite":
        raise InvalidDatabaseError(
            f"unsupported database {url.drivername}: use SQLite or PostgreSQL"
        )
    ensure_fts5()
    path = sqlite_path(url)
    if path is not None:
        check_file(path, create=create)
    return sqlite_engine(url, foreign_keys=foreign_keys, echo=echo, busy_timeout_ms=busy_timeout_ms)


def sqlite_engine(
    url: URL,
    *,
    foreign_keys: bool = True,
    echo: bool = False,
    busy_timeout_ms: int | None = None,
    wal: bool = True,
) -> Engine:
    """The engine :func:`create_engine` makes on the SQLite ``url`` (resolved), without its
    look at the file: for a caller that has just checked it (:func:`check_file`), as
    ``Store.open``'s schema check and an upgrade do, so that opening a database looks at its
    file once. ``wal=False``: see :func:`install_sqlite_hooks`."""
    ensure_fts5()
    path = sqlite_path(url)
    if path is None:
        engine = sa_create_engine(
            url,
            echo=echo,
            poolclass=StaticPool,
            connect_args={"check_same_thread": False, "factory": cursors.TrackedConnection},
        )
    else:
        engine = sa_create_engine(
            url, echo=echo, connect_args={"factory": cursors.TrackedConnection}
        )
        fork.renew_after_fork(engine)
    install_sqlite_hooks(
        engine, foreign_keys=foreign_keys, busy_timeout_ms=busy_timeout_ms, wal=wal
    )
    return engine


def refused_write(path: Path | None) -> DatabaseReadOnlyError:
    """The error of a write on a read-only Store's connection (SQLite refused it)."""
    reason = "the Store was opened read-only (Store.open(..., read_only=True))"
    return DatabaseReadOnlyError(str(path), reason)


class _ReadOnlyCursor(cursors.Cursor):
    """A cursor of a :class:`ReadOnlyConnection`: SQLite's refusal of a write is raised as
    :func:`refused_write` where it happens, whoever ran the statement (the ORM, Core, the lean
    writes of :class:`~philont.db.backend.Raw`, a host on the DB-API connection, with
    ``execute``, ``executemany`` or ``executescript``) and whenever (a flush at commit too):
    one place, so every path says it alike."""

    def refused(self, exc: sqlite3.Error) -> BaseException:
        return refused_write(getattr(self.connection, "path", None))


class ReadOnlyConnection(cursors.TrackedConnection):
    """A connection of a read-only Store (:func:`sqlite_read_only_engine`; its file's
    ``path`` set once it is made): its cursors are :class:`_ReadOnlyCursor`."""

    path: Path | None = None

    def cursor(self, factory: Any = _ReadOnlyCursor) -> Any:
        return super().cursor(factory)


def read_only_connection(
    path: Path, timeout_ms: int, *, check_same_thread: bool = True
) -> ReadOnlyConnection:
    """A connection of a read-only Store on the file ``path`` (:func:`connect_read_only`'s,
    a :class:`ReadOnlyConnection` knowing its file)."""
    conn = connect_read_only(
        path,
        timeout=timeout_ms / 1000,
        factory=ReadOnlyConnection,
        check_same_thread=check_same_thread,
    )
    assert isinstance(conn, ReadOnlyConnection)
    conn.path = path
    return conn


def sqlite_read_only_engine(url: URL, *, busy_timeout_ms: int | None = None) -> Engine:
    """An engine that only reads the SQLite file ``url`` names (``Store.open(...,
    read_only=True)``): each connection is :func:`connect_read_only`'s (``mode=ro``;
    ``immutable`` for a WAL-mode file whose ``-shm`` cannot be made and whose ``-wal`` holds
    nothing), so SQLite refuses every write and creates nothing beside the file but the
    ``-wal`` and ``-shm`` a WAL-mode file is read through, with the file's mode (read-only
    beside a read-only file: a writable open later makes them writable again,
    :func:`writable_companions`)."""
    connect, timeout = read_only_connector(url, busy_timeout_ms)
    engine = sa_create_engine(url, creator=connect)
    set_up_read_only(engine, timeout)
    return engine


def read_only_connector(
    url: URL, busy_timeout_ms: int | None
) -> tuple[Callable[[], sqlite3.Connection], int]:
    """What a read-only engine on the SQLite file ``url`` names opens its connections with
    (:func:`read_only_connection`), and their busy timeout in ms (``busy_timeout_ms``, else
    ``settings.BUSY_TIMEOUT_MS``): the sync engine's (:func:`sqlite_read_only_engine`) and the
    async one's (``philont.aio``) alike. An in-memory database is refused: a read-only Store
    reads a file. As SQLAlchemy makes a file's connections for its pool (a ``creator`` gets
    none of its arguments), they are not bound to the thread that made them: the pool hands
    them to any thread and closes them from any (the MCP server's worker threads, its exit;
    aiosqlite's thread)."""
    ensure_fts5()
    path = sqlite_path(url)
    if path is None:
        raise DatabasePathError(str(url.database), "a read-only Store needs a database file")
    timeout = settings.BUSY_TIMEOUT_MS if busy_timeout_ms is None else int(busy_timeout_ms)

    def connect() -> sqlite3.Connection:
        return read_only_connection(path, timeout, check_same_thread=False)

    return connect, timeout


def set_up_read_only(engine: Engine, timeout_ms: int) -> None:
    """philont's set-up of a read-only engine made on :func:`read_only_connector` (the sync
    engine, or an async engine's ``sync_engine``): leftover cursors closed at checkin, the
    read-only SQLite hooks, new connections after a fork."""
    fork.renew_after_fork(engine)
    cursors.install(engine)
    install_sqlite_hooks(engine, foreign_keys=True, busy_timeout_ms=timeout_ms, read_only=True)


def _create_pg_engine(url: URL, *, create: bool, echo: bool) -> Engine:
    """An Engine whose pool serves every agent of the database (the agent is set per
    transaction). psycopg's server-side prepared statements are off: they are bound to one
    server connection, which PgBouncer in transaction mode does not keep."""
    del create  # the layout comes from the migrations (revision v036), nothing per agent
    try:
        engine = sa_create_engine(
            url, echo=echo, pool_pre_ping=True, connect_args={"prepare_threshold": None}
        )
    except ModuleNotFoundError as exc:
        raise BackendError("PostgreSQL needs psycopg: pip install 'philont[postgres]'") from exc
    guard_pg(engine)
    event.listen(engine, "handle_error", refuse_unreachable)
    fork.renew_after_fork(engine)
    return engine


def refuse_unreachable(context: ExceptionContext) -> None:
    """A PostgreSQL server that cannot be reached (down, a wrong host, port, password or
    database name) is a typed :class:`BackendError` naming the URL (password hidden), not a
    driver error: raised while connecting, before any statement."""
    if context.connection is not None or context.is_pre_ping or context.engine is None:
        return
    where = database_name(context.engine.url)
    reason = " ".join(str(context.original_exception).split())
    raise BackendError(f"cannot connect to {where}: {reason}", url=where)


def guard_pg(engine: Engine) -> None:
    """Install :func:`refuse_nul` and :func:`refuse_non_utf8` on a PostgreSQL engine (once; a
    host's engine given to ``Store.from_engine`` too, or its text with U+0000 failed inside the
    driver)."""
    listen_once(engine, "before_cursor_execute", refuse_nul)
    listen_once(engine, "connect", refuse_non_utf8, pool=True, insert=True)  # before the
    # dialect's first statement reads text


def refuse_non_utf8(dbapi_connection: Any, _record: Any = None) -> None:
    """A database whose encoding is not UTF8, or a connection whose client encoding is not, is
    refused with a typed :class:`BackendError` saying what to change: philont stores any
    Unicode text and its word indexes compose it (``normalize``, UTF8 only). Runs when a
    connection is made, before any statement (:func:`guard_pg`); every migrate path runs
    :func:`check_utf8` on a caller's connection (a host's engine may have connected before).
    Before, a SQL_ASCII database (or client encoding) failed its upgrade with a TypeError
    (text came back as bytes) and a LATIN1 one took facts, then failed on the first text
    outside Latin-1."""

    def asked(name: str) -> Any:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"SHOW {name}")
            return cursor.fetchone()[0]
        finally:
            cursor.close()
            dbapi_connection.rollback()  # a new connection: SHOW began its only transaction

    _refuse_encodings(dbapi_connection, asked)


def check_utf8(conn: Connection) -> None:
    """:func:`refuse_non_utf8` on a caller's connection, inside its transaction (a setting
    the driver does not keep is asked with SHOW there, nothing rolled back)."""
    _refuse_encodings(
        conn.connection.dbapi_connection,
        lambda name: conn.exec_driver_sql(f"SHOW {name}").scalar(),
    )


def _refuse_encodings(dbapi_connection: Any, asked: Callable[[str], Any]) -> None:
    server = _pg_setting(dbapi_connection, "server_encoding", asked)
    client = _pg_setting(dbapi_connection, "client_encoding", asked)
    if server != "UTF8":
        raise BackendError(
            f"the database is encoded {server}; philont needs a UTF8 database"
            " (CREATE DATABASE name ENCODING 'UTF8' TEMPLATE template0)",
            encoding=server,
        )
    if client != "UTF8":
        raise BackendError(
            f"the connection's client encoding is {client}; philont needs UTF8 (leave"
            " client_encoding unset in the URL, PGCLIENTENCODING and the role's settings)",
            encoding=client,
        )


def _pg_setting(dbapi_connection: Any, name: str, asked: Callable[[str], Any]) -> str:
    """A connection's setting: the value the server reported (psycopg keeps it), else
    ``asked(name)`` (another driver, or a pooler that does not pass it on)."""
    info = getattr(dbapi_connection, "info", None)
    value = getattr(info, "parameter_status", lambda _n: None)(name)
    if value is None:
        value = asked(name)
    return value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)


def refuse_nul(
    _conn: Any, _cursor: Any, _statement: str, parameters: Any, _context: Any, executemany: bool
) -> None:
    """PostgreSQL text cannot hold U+0000 (SQLite can): refuse it with a typed error before the
    statement runs, instead of a driver error halfway through a transaction."""
    batches = parameters if executemany else [parameters]
    for params in batches:
        values = params.values() if isinstance(params, dict) else params or ()
        for value in values:
            if isinstance(value, str) and "\x00" in value:
                raise InvalidInputError(
                    "text with a NUL character (U+0000) cannot be stored in PostgreSQL"
                )


def tighten_permissions(path: Path) -> None:
    """chmod 0600 the database and its -wal/-shm companions (as Philont does after opening)."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.exists():
            os.chmod(p, FILE_MODE)

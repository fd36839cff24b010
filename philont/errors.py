"""The one exception hierarchy of philont; no SQLAlchemy imports here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from philont.domain.shown import short


class PhilontError(Exception):
    """Base class of every error philont raises on purpose.

    ``code`` is a stable machine-readable identifier (tools report it to the model).
    """

    code: str = "philont_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


# --- storage -------------------------------------------------------------------------------


class StorageError(PhilontError):
    """The database file cannot be used as asked."""

    code = "storage_error"


class DatabasePathError(StorageError):
    """The path cannot hold a database (it is a directory, or its parent cannot be created).
    Its code is :class:`FilePathError`'s: a path the caller named that cannot be used is one
    code, whatever the file was for."""

    code = "file_path"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot use {path!r} as a memory database: {reason}", path=path)
        self.path = path
        self.reason = reason


class NotADatabaseError(StorageError):
    """The file exists but is not an SQLite database."""

    code = "not_a_database"

    def __init__(self, path: str) -> None:
        super().__init__(f"{path!r} is not an SQLite database", path=path)
        self.path = path


class DatabaseReadOnlyError(StorageError):
    """The database (or its directory) cannot be written."""

    code = "database_read_only"

    def __init__(self, path: str, reason: str = "the file is read-only") -> None:
        super().__init__(f"cannot write to {path!r}: {reason}", path=path)
        self.path = path


class DatabaseBusyError(StorageError):
    """The database stayed locked by another connection past the busy timeout and retries."""

    code = "database_busy"


class PoolTimeoutError(DatabaseBusyError):
    """Every connection of the Store's pool stayed in use by other units of work of this
    process for the pool's whole timeout (SQLAlchemy's ``pool_timeout``, 30 s): more units of
    work at once than the pool holds, each held long. Not run again by philont's retries (a
    retry would wait as long again). ``details``: ``pool`` (SQLAlchemy's account of it)."""


class TransactionConflictError(DatabaseBusyError):
    """PostgreSQL ended this transaction because of a concurrent one: a deadlock (SQLSTATE
    40P01: two transactions waited for each other's locks), a serialization failure (40001,
    under REPEATABLE READ or SERIALIZABLE) or a lock not granted within ``lock_timeout``
    (55P03). The unit of work was rolled back and nothing of it was kept; running it again can
    succeed. philont's own units of work (``tools.call`` on a Store or path, the MCP server,
    ``Store.run``, the consolidator, the command line) do so a bounded number of times; a
    host's ``store.begin()`` block gets this error (its code cannot be replayed by philont).
    ``details``: ``sqlstate`` and ``reason``."""

    code = "transaction_conflict"


class DatabaseFullError(StorageError):
    """The disk (or the configured page limit) is full; nothing of this write was kept."""

    code = "database_full"


class DatabaseCorruptError(StorageError):
    """The database file is damaged (SQLite's ``quick_check`` fails, or its pages cannot be
    read); nothing was written to it."""

    code = "database_corrupt"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"{path!r} is damaged ({reason}); nothing was written. Restore a backup "
            "(`philont restore`) or recover it with `sqlite3 FILE .recover`",
            path=path,
            reason=reason,
        )
        self.path = path
        self.reason = reason


class BackendError(StorageError):
    """The database backend is missing something philont needs (driver, extension)."""

    code = "backend_unavailable"


class Fts5UnavailableError(StorageError):
    """The SQLite library in use was built without FTS5 (or without the trigram tokenizer)."""

    code = "fts5_unavailable"

    def __init__(self, sqlite_version: str) -> None:
        super().__init__(
            f"SQLite {sqlite_version} lacks FTS5 with the trigram tokenizer (needs ENABLE_FTS5 and"
            " SQLite >= 3.34); install a Python whose sqlite3 module has it",
            sqlite_version=sqlite_version,
        )


class UnreadableRowError(StorageError):
    """A stored row holds values no layer can read (written by another program or by hand).
    Listings skip and count such rows; asking for the row itself raises this."""

    code = "unreadable_row"


class StoreClosedError(StorageError):
    """The Store was closed; open a new one."""

    code = "store_closed"


class DatabaseGoneError(StorageError):
    """The SQLite file a Store opened was deleted or replaced behind its back: its
    connections still hold the old file, which nothing reads, so nothing more is written
    through them. Open a new Store (restart the server) on the file now at that path."""

    code = "database_gone"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"the memory database {path!r} {reason} after it was opened; nothing was written "
            "(it would have gone to the old file, which nothing reads). Open it again (restart "
            "the server): a deleted file is created afresh, a replaced one is used",
            path=path,
        )
        self.path = path


class EventLoopError(PhilontError):
    """An :class:`~philont.aio.AsyncStore` used from an event loop other than its own: its
    pool and connections belong to the loop it was opened in."""

    code = "wrong_event_loop"


class UnitOfWorkError(PhilontError):
    """A unit of work was used outside its ``with`` block: before it began, after it ended, or
    entered twice; or its block went on (and ended) after a failed write had rolled its
    transaction back, so nothing of it was written (a read-only Store's refusal:
    :class:`DatabaseReadOnlyError`). Begin a new one (``with store.begin() as mem:``)."""

    code = "unit_of_work_ended"


class NestedWriteError(UnitOfWorkError):
    """A writing unit of work was begun on an SQLite file while this thread's own writing unit
    of work on it is still open: a ``store.begin()`` inside another's block, or a Store, a path
    or ``Memory.open`` given to ``tools.call`` inside one, or, in an event loop's thread, while
    an AsyncStore's writing unit of work on the file is open in that loop. It would wait for a
    lock only this thread can give back. Use the open unit of work (its services,
    ``tools.call(..., db=mem)``) or end it first. Nothing was begun. On PostgreSQL the nested
    unit begins, and a statement of either that waits for a lock the other holds is cancelled
    instead (:mod:`philont.db.nesting`): that unit of work was rolled back."""

    code = "nested_write"

    def __init__(self) -> None:
        super().__init__(
            "this thread already writes to this database in a unit of work that is still open; "
            "a second one would wait for it forever: use the open one (its services, or "
            "tools.call(..., db=mem)), or end it first"
        )


class InvalidDatabaseError(PhilontError):
    """What was passed as the database is none of the accepted kinds."""

    code = "invalid_database"


# --- schema / migrations ---------------------------------------------------------------------


class SchemaError(PhilontError):
    """The database schema is not one philont can adopt or use."""

    code = "schema_error"


class UnknownSchemaVersionError(SchemaError):
    """A recorded schema version this release does not know: ``memory_meta.schema_version``
    (Philont's) or the revision in our version table (``column`` names which one)."""

    code = "unknown_schema_version"

    def __init__(self, found: str | None, *, column: str = "memory_meta.schema_version") -> None:
        known = (
            "versions 1..31"
            if column == "memory_meta.schema_version"
            else "only the revisions it ships (a newer philont wrote this one?)"
        )
        super().__init__(
            f"{column} is {found!r}; this release knows {known} and refuses to touch the database",
            found=found,
            column=column,
        )
        self.found = found
        self.column = column


class UnrecognizedSchemaError(SchemaError):
    """Memory tables exist but their shape matches no known schema version."""

    code = "unrecognized_schema"


class TableNameConflictError(UnrecognizedSchemaError):
    """Tables of another application have the names of philont's own tables, so philont can
    neither build its schema beside them nor adopt them."""

    code = "table_name_conflict"

    def __init__(self, tables: list[str]) -> None:
        super().__init__(
            f"table(s) {', '.join(tables)} have the names of philont's tables, but this file "
            "holds no philont schema (no philont_alembic_version, no memory_meta.schema_version); "
            "rename them or give philont its own file",
            tables=tables,
        )
        self.tables = tables


class SchemaOutOfDateError(SchemaError):
    """The database is not at the head revision."""

    code = "schema_out_of_date"


class MigrationError(SchemaError):
    """A migration step failed; the database was left as it was before the upgrade."""

    code = "migration_failed"


class UnsupportedMigrationError(SchemaError):
    """An Alembic command philont's history does not do (a downgrade, offline ``--sql``):
    refused before the database is opened."""

    code = "migration_unsupported"


# --- input -----------------------------------------------------------------------------------


class InvalidInputError(PhilontError):
    """A caller passed a value philont refuses; nothing was written.

    A refusal of one argument says which: its message starts with ``"<argument>: "`` and its
    ``argument`` detail names it (:meth:`of`). A refusal of how several arguments go together
    names them all, in the message (``"since, until: "``) and in the ``arguments`` detail
    (:meth:`of_together`)."""

    code = "invalid_input"

    @classmethod
    def of(cls, argument: str, what: str, **details: Any) -> InvalidInputError:
        """The refusal of the argument ``argument``: ``"<argument>: <what>"``."""
        return cls(f"{argument}: {what}", argument=argument, **details)

    @classmethod
    def of_together(
        cls, arguments: tuple[str, ...], what: str, **details: Any
    ) -> InvalidInputError:
        """The refusal of the arguments ``arguments`` together (none of them is wrong alone)."""
        return cls(f"{', '.join(arguments)}: {what}", arguments=arguments, **details)


class FilePathError(InvalidInputError):
    """A file the caller named, to read or to write (an export, an import, a backup to
    restore), cannot be used: it is a directory, it is missing, or its directory is, or it
    cannot be read or written. The same code as :class:`DatabasePathError` (the database's
    path)."""

    code = "file_path"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot use {path!r}: {reason}", path=path, reason=reason)
        self.path = path
        self.reason = reason


class InvalidTimeRangeError(InvalidInputError):
    """A time window whose end lies before its start: a refusal of the two arguments together,
    named in the message (``"since, until: ..."``) and in ``details["arguments"]``."""

    code = "invalid_time_range"

    def __init__(
        self, start: object, end: object, *, names: tuple[str, str], what: str = "time window"
    ) -> None:
        first, second = names
        super().__init__(
            f"{first}, {second}: the {what} ends before it starts ({second} {_shown(end)} is "
            f"earlier than {first} {_shown(start)})",
            arguments=names,
        )
        self.start = start
        self.end = end


def _shown(value: object) -> str:
    iso = getattr(value, "isoformat", None)
    return str(iso()) if callable(iso) else short(value)


class TimeOutOfRangeError(InvalidInputError):
    """A time outside what philont stores and shows in every zone (see
    :mod:`philont.domain.timepolicy`), or one whose conversion to UTC overflows."""

    code = "time_out_of_range"


class ReservedNamespaceError(InvalidInputError):
    """The ``self`` namespace is written only by the self-reflector; the model's tool does not
    write ``system`` (the runtime's own state)."""

    code = "reserved_namespace"

    def __init__(self, namespace: str, owner: str = "the self-reflector") -> None:
        super().__init__(f"namespace {namespace!r} is reserved for {owner}; store facts elsewhere")
        self.namespace = namespace


# --- lookups ---------------------------------------------------------------------------------


class NotFoundError(PhilontError):
    """The thing asked for does not exist.

    A key asked for that holds U+FFFD (in ``details``) may have been read, in an earlier call,
    from a key SQLite stored as bytes that are not UTF-8 (another program wrote them): philont
    reads those with U+FFFD in place of the bad bytes, so what was read finds no row. Such a
    report from an SQLite database says so and how to reach the row (:meth:`from_sqlite`, also
    ``details["hint"]``); its type and code stay. Whoever raised it knows the database and
    decides, once: a service's method, a tool's handler, the first unit of work it leaves
    (:meth:`philont.db.backend.Backend.explain`, which marks it :attr:`explained`). On
    PostgreSQL U+FFFD is a character like any other: no hint."""

    code = "not_found"
    explained: bool = False
    """Whether the database it was raised on has said what it means there: an outer unit of
    work on another database (a PostgreSQL unit nested in an SQLite one) leaves it alone."""
    table: ClassVar[str | None] = None
    """The table of ours whose row was not found, named in that hint."""
    keyed: ClassVar[bool] = True
    """Whether the error says a key named no row (False: the row was found; something of it
    was not, as a skill's recipe)."""

    def from_sqlite(self) -> None:
        """Add the hint about keys read from bytes that are not UTF-8 (once), when a key this
        error names holds U+FFFD: the error comes from an SQLite database."""
        hint = None if "hint" in self.details else _undecoded_hint(self)
        if hint is not None:
            self.message = f"{self.message}. {hint}"
            self.args = (self.message,)
            self.details["hint"] = hint


_KEY_COLUMNS = {"fact_id": "id", "session_id": "id"}
"""The column a detail of a not-found error names, where it is not the detail's name."""


def _undecoded_hint(error: NotFoundError) -> str | None:
    """What a not-found error from SQLite adds when a key it names holds U+FFFD, or None."""
    if not error.keyed:
        return None
    for name, value in error.details.items():
        if isinstance(value, str) and "\ufffd" in value:
            column = _KEY_COLUMNS.get(name, name)
            reach = (
                f": SELECT rowid, hex(CAST({column} AS BLOB)) FROM {error.table}"
                if error.table is not None
                else ""
            )
            return (
                f"The {name} holds U+FFFD, which is what philont reads in place of bytes that "
                "are not UTF-8 in text another program stored in an SQLite database: a row "
                f"whose stored {column} is such text is not found, changed or removed by what "
                "it was read as (its bytes cannot be sent back as text). Reach it with sqlite3 "
                f"by its rowid{reach} (docs/stored-values.md)"
            )
    return None


class FactNotFoundError(NotFoundError):
    code = "fact_not_found"
    table = "memory_facts"

    def __init__(
        self, namespace: str, key: str, *, active: bool = True, near: Sequence[str] = ()
    ) -> None:
        """``near``: up to three facts (``namespace.key``) that may have been meant."""
        from philont.domain.names import did_you_mean

        super().__init__(
            f"no {'active ' if active else ''}fact {namespace}.{key}{did_you_mean(near)}",
            namespace=namespace,
            key=key,
            **({"near": list(near)} if near else {}),
        )
        self.namespace = namespace
        self.key = key


class ConflictError(PhilontError):
    """The write conflicts with existing data (a duplicate name, an occupied id)."""

    code = "conflict"


class SkillNotUsableError(PhilontError):
    """The skill exists but its grade forbids using it."""

    code = "skill_not_usable"


class NoteNotFoundError(NotFoundError):
    code = "note_not_found"
    table = "memory_notes"


class SkillNotFoundError(NotFoundError):
    code = "skill_not_found"
    table = "memory_skills"


class SessionNotFoundError(NotFoundError):
    code = "session_not_found"
    table = "memory_raw_sessions"


class ScheduleNotFoundError(NotFoundError):
    code = "schedule_not_found"
    table = "memory_schedules"


class CalendarEventNotFoundError(NotFoundError):
    code = "calendar_event_not_found"
    table = "memory_calendar"

    def __init__(self, event_id: str) -> None:
        super().__init__(f"no calendar event with id {event_id!r}", id=event_id)
        self.id = event_id


# --- language models (the self-learning loop) --------------------------------------------------


class ModelError(PhilontError):
    """A call to a language model failed; nothing was written because of it."""

    code = "model_error"


class ModelTimeoutError(ModelError):
    """The model did not answer within the time-out."""

    code = "model_timeout"


class ModelHTTPError(ModelError):
    """The model's server answered with an HTTP error status (``status``)."""

    code = "model_http_error"

    def __init__(self, message: str, *, status: int, **details: object) -> None:
        super().__init__(message, status=status, **details)
        self.status = status

    @property
    def retryable(self) -> bool:
        """Whether trying again later may help (rate limits, overload, server errors)."""
        return self.status in (408, 409, 425, 429) or self.status >= 500


class ModelUnavailableError(ModelError):
    """The model cannot be reached or used (connection refused, SDK not installed, script
    exhausted)."""

    code = "model_unavailable"


class ModelEmptyAnswerError(ModelError):
    """The model answered, but with no text."""

    code = "model_empty_answer"


class ModelAnswerError(ModelError):
    """The model answered, but what the task asked for could not be read from it (no JSON
    array). The consolidator asks such a batch again until its ``answer_attempts``-th unreadable
    answer (outages not counted)."""

    code = "model_unreadable_answer"


class AgentRequiredError(InvalidInputError):
    """A unit of work on PostgreSQL was begun without naming the agent it serves."""

    code = "agent_required"


class AgentNotFoundError(NotFoundError):
    """No agent of that name in a PostgreSQL database's agents registry."""

    code = "agent_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"no agent named {name!r} in this database")
        self.name = name


# --- embeddings (optional semantic recall) -----------------------------------------------------


class EmbedderError(PhilontError):
    """An embedder failed or broke its contract (count, dimension, finite values); nothing
    was written because of it."""

    code = "embedder_error"


class EmbedderUnavailableError(EmbedderError):
    """The embedder cannot be used here: its package is not installed, its model is not on
    this machine (models are never downloaded implicitly), or its server cannot be reached."""

    code = "embedder_unavailable"


class EmbedderMismatchError(PhilontError):
    """The stored vectors were built by another model or dimension than the embedder given:
    vectors are never mixed. Rebuild the index (``rebuild=True``, ``philont embed --rebuild``)
    or configure the embedder that built it (``details``: ``stored`` and ``given``)."""

    code = "embedder_mismatch"

    def __init__(self, message: str, *, stored: str, given: str) -> None:
        super().__init__(message, stored=stored, given=given)
        self.stored = stored
        self.given = given

"""``call(name, arguments)``: validate, run one tool in one unit of work, log it, never raise."""

from __future__ import annotations

import functools
import json
import reprlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from philont.db.engine import database_name, resolve_url
from philont.db.retry import (
    database_error_of,
    database_failure,
    is_busy,
    run_with_retry,
    translate,
    unlogged,
)
from philont.db.stored_values import MAX_JSON_DEPTH
from philont.domain.attribution import failure_text
from philont.domain.names import did_you_mean, meant
from philont.errors import (
    DatabaseBusyError,
    InvalidDatabaseError,
    InvalidInputError,
    PhilontError,
)
from philont.log import get_logger
from philont.memory import Memory
from philont.schemas.inputs import (
    MAX_ARGUMENT_BYTES,
    RepeatedKeyError,
    describe,
    loads_unique,
)
from philont.services.actions import ObjectJson, object_json
from philont.store import Store, shared
from philont.tools.args import ToolArgs
from philont.tools.registry import (
    REGISTRY,
    Tool,
    ToolContext,
    ToolOutput,
    capped,
)

log = get_logger(__name__)

T = TypeVar("T")

RESULT_LOG_CHARS = 500


class ToolResult(BaseModel):
    """The outcome of one tool call. ``text`` is what the model sees."""

    model_config = ConfigDict(frozen=True)

    name: str
    ok: bool
    text: str
    data: Any = None
    error_code: str | None = None
    error: str | None = None


class _Failure(Exception):
    """Why a call failed: its code, and the message the model reads, held to the size
    policy of every text it reads back (:func:`capped`)."""

    def __init__(self, code: str, message: str) -> None:
        message = capped(message)
        super().__init__(message)
        self.code = code
        self.message = message


_NO_ARGUMENTS = object_json({})


def _parse_arguments(
    arguments: Mapping[str, Any] | str | bytes | None,
) -> tuple[dict[str, Any], ObjectJson | None]:
    """The arguments as an object, and as the action log stores them (:func:`_logged_json`):
    encoded once, here, for the size check and the log row alike."""
    if arguments is None:
        return {}, _NO_ARGUMENTS
    if isinstance(arguments, bytes | bytearray):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Failure("invalid_json", "arguments are not UTF-8 text") from exc
    if isinstance(arguments, str):
        _check_size(len(arguments.encode("utf-8", "surrogatepass")))
        try:
            arguments = loads_unique(arguments) if arguments.strip() else {}
        except RepeatedKeyError as exc:
            raise _Failure("invalid_arguments", f"arguments: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise _Failure("invalid_json", f"arguments are not valid JSON: {exc}") from exc
        except RecursionError as exc:  # JSON nested deeper than Python's parser recurses
            raise _Failure(
                "invalid_arguments",
                "arguments: nest lists and objects too deep to read; a value nests at most "
                f"{MAX_JSON_DEPTH} levels (store a flatter value)",
            ) from exc
    elif isinstance(arguments, Mapping):
        raw = dict(arguments)
        logged = _logged_json(raw)
        # the size of the JSON the log stores, or (what it cannot store as given) of a
        # rendering that never fails
        _check_size(_json_size(arguments) if logged is None else len(logged.encode("utf-8")))
        return raw, logged
    if not isinstance(arguments, Mapping):
        raise _Failure(
            "invalid_arguments", f"arguments must be a JSON object, {not_an_object(arguments)}"
        )
    raw = dict(arguments)
    return raw, _logged_json(raw)


_JSON_TYPES = {str: "a JSON string", list: "a JSON array", bool: "true or false", int: "a number",
               float: "a number", type(None): "null"}  # fmt: skip


def not_an_object(value: object) -> str:
    """What was given instead of an object, and, for text that holds one, that the arguments
    were encoded twice (a host that serialized the model's JSON once more)."""
    got = f"got {_JSON_TYPES.get(type(value), type(value).__name__)}"
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except (ValueError, RecursionError):
            return got
        if isinstance(inner, dict):
            return f"{got} holding one: the arguments were JSON-encoded twice; send the object"
    return got


def _logged_json(raw: dict[str, Any]) -> ObjectJson | None:
    """``raw`` as the action log stores it (compact JSON, :func:`object_json`), or None
    when it cannot be stored as given (a key that is not text, a value JSON cannot hold, a
    lone surrogate): the log keeps a repr of it instead (:func:`_unloggable`)."""
    try:
        return object_json(raw)
    except InvalidInputError:  # a key that is not text, or a value JSON cannot hold
        return None


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON; what cannot be encoded counts as nothing here (the
    argument models refuse it with their own message). ``default=str`` runs the caller's own
    ``__str__``/``__repr__``, which may raise anything."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except Exception:  # TypeError, ValueError, RecursionError, or whatever str() raised
        return 0
    return len(text.encode("utf-8", "surrogatepass"))


def _check_size(size: int) -> None:
    if size > MAX_ARGUMENT_BYTES:
        raise _Failure(
            "invalid_arguments",
            f"arguments are {size:,} bytes of JSON; at most {MAX_ARGUMENT_BYTES:,} "
            "(store large content in pieces, or keep a reference instead)",
        )


_SHOWN = reprlib.Repr()  # keyword arguments need Python 3.12
_SHOWN.maxlevel = 8
_SHOWN.maxdict = _SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = 40
_SHOWN.maxstring = _SHOWN.maxother = 300


def _unloggable(raw: Any) -> dict[str, Any]:
    """What the action log keeps of arguments it cannot store as they are (not a JSON object,
    or values JSON cannot hold): a bounded repr, whatever they are (nested deeper than the
    recursion limit, huge, or with a ``__repr__`` that raises: plain ``repr`` raised out of
    :func:`call`). repr escapes lone surrogates."""
    try:
        shown = _SHOWN.repr(raw)
    except Exception:  # a container subclass whose own repr machinery fails
        shown = f"<{type(raw).__name__} that cannot be shown>"
    return {"_raw": shown[:1000]}


def _surrogates_escaped(text: str) -> str:
    """``text`` with any lone surrogate escaped, so that the database can store it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


Db = Store | Memory | str | Path | URL | None
"""What ``call`` accepts as its database (see :func:`call`)."""


def _store_of(db: object, read_only: object = False) -> Store | None:
    """The Store a call on ``db`` owns its unit of work on (None: it joins ``db``); with
    ``read_only`` a path's read-only Store, and a Store or unit of work must be read-only."""
    if not isinstance(read_only, bool):
        raise InvalidDatabaseError(f"read_only must be True or False, got {read_only!r}")
    if isinstance(db, Memory | Store) and read_only and not db.read_only:
        raise InvalidDatabaseError(
            "read_only=True names the read-only Store of a path or URL; this "
            f"{type(db).__name__} was not opened read-only (Store.open(..., read_only=True))"
        )
    if isinstance(db, Memory):
        if not db.active:
            raise InvalidDatabaseError(
                "db is a unit of work outside its `with` block; pass it inside "
                "`with store.begin() as mem:`, or pass the Store"
            )
        return None
    if isinstance(db, Store):
        return db
    if db is None or isinstance(db, str | Path | URL):
        return shared(db, read_only=read_only)
    raise InvalidDatabaseError(
        f"db must be a Store, a unit of work (Memory), a path or URL, or None; "
        f"got {type(db).__name__}"
    )


def _where(db: object) -> str | None:
    """The database ``db`` names, as messages name it (None: it names none that can be
    resolved)."""
    if isinstance(db, Memory):
        return db.store.label
    if isinstance(db, Store):
        return db.label
    try:
        return database_name(resolve_url(db))  # type: ignore[arg-type]  # refused: None
    except Exception:
        return None


def call(
    name: str,
    arguments: Mapping[str, Any] | str | bytes | None = None,
    *,
    db: Db = None,
    session_id: str = "global",
    read_only: bool = False,
) -> ToolResult:
    """Run the model tool ``name`` and report the outcome; never raises.

    When the tool fails, nothing it did is kept: a call that owns its unit of work rolls it
    back whole (no SAVEPOINT on the way: a successful call pays for none); one that joined the
    caller's runs the tool in a SAVEPOINT, so only the tool's own writes are undone. Every
    call, successful or not, is recorded in the action log (layer 0.5) with its params (the
    JSON :func:`prepare` encoded once; what cannot be stored as given, as a bounded repr), the
    start of its result text and its success — that record is the only row a failed call
    leaves (a call the storage refuses — busy, full, read-only — leaves none, and reports that
    code). On a Store opened read-only nothing is logged: a tool that only reads works, one
    that writes reports ``database_read_only``.

    ``db`` is a :class:`~philont.store.Store` (the call runs in a unit of work of its own), an
    active unit of work (``Memory`` inside its ``with`` block: the call joins its transaction),
    a path or URL (resolved to the process-wide Store of that database), or None (the
    database named by ``$MEMORY_DB_PATH`` at call time). Anything else is an
    ``invalid_database`` result. ``read_only=True`` (SQLite): a path's process-wide read-only
    Store (``shared(path, read_only=True)``; PostgreSQL is ``invalid_database``); a Store or
    unit of work given must be read-only itself (``invalid_database`` otherwise).

    When the call owns its unit of work, a tool that writes takes SQLite's write lock up front
    (``BEGIN IMMEDIATE``); a read-only tool (and a call refused before it ran) begins deferred
    and reads without it, taking it only for its bookkeeping rows at the end (the action log,
    access times), so its search or listing never blocks other writers. A database locked by
    another connection is waited for once (busy timeout); a busy that SQLite returns at once (a
    read that then logs itself while another connection writes) is retried, from the first
    retry on holding the lock from its first statement (:func:`retry_plan`), as is a
    PostgreSQL transaction ended for a concurrent one's sake (a deadlock, a serialization
    failure, a lock timeout: it was rolled back) (:class:`philont.db.retry.RetryPolicy`);
    past that the call fails with code ``database_busy`` (``transaction_conflict``) and
    writes nothing.
    Joined to the caller's unit of work, the call is not retried: it reports that code, and
    the caller's transaction goes on.
    """
    tool_name = name if isinstance(name, str) else repr(name)
    try:
        store = _store_of(db, read_only)
        prepared = prepare(tool_name, arguments)
        if store is None:
            assert isinstance(db, Memory)
            result = run_prepared(prepared, db, session_id, joined=True)
        else:
            own = functools.partial(_own_call, store, prepared, session_id)
            result = run_with_retry(retry_plan(own, write=prepared.writes))
    except (PhilontError, SQLAlchemyError) as exc:  # the database could not be opened or written
        return refused(tool_name, exc, where=None if isinstance(exc, PhilontError) else _where(db))
    log.info("tool.called", tool=tool_name, ok=result.ok, code=result.error_code)
    return result


def refused(
    tool_name: str, exc: PhilontError | SQLAlchemyError, *, where: str | None = None
) -> ToolResult:
    """The result of a call the storage refused: a typed error, or a database failure
    (:func:`~philont.db.retry.database_failure`: its kind and the database ``where``, never
    its text, which holds the statement's parameters; that goes to the log)."""
    typed = exc if isinstance(exc, PhilontError) else _logged_failure(exc, tool_name, where)
    message = capped(typed.message)
    return ToolResult(
        name=tool_name,
        ok=False,
        text=failure_text(typed.code, message),
        error_code=typed.code,
        error=message,
    )


def _logged_failure(exc: BaseException, tool_name: str, where: str | None) -> PhilontError:
    """What the caller is told of a database failure a tool call met (typed, without the
    database's text), after logging it: a statement the database refused for a reason we do
    not map in one line (the driver's message, its traceback at debug), any other SQLAlchemy
    error (a bug here) with its traceback."""
    typed = database_failure(exc, where=where)
    assert typed is not None  # an SQLAlchemy or driver error is a database error
    if typed.code == "storage_error" and not isinstance(exc, PhilontError):
        log.failure("tool.storage_error", exc, tool=tool_name)
    return typed


def retry_plan(attempt: Callable[[bool], T], *, write: bool) -> Callable[[], T]:
    """``attempt(write)`` as the attempts of a retry loop (:func:`run_with_retry`): with
    ``write`` first, with ``True`` once an attempt was refused for a lock. SQLite never waits
    to turn a deferred transaction that has read into a writing one (it refuses at once while
    another connection holds the write lock), so a call that reads and then logs itself would
    be refused again and again by a steady stream of writers; holding the lock from its first
    statement it waits its turn (the busy timeout) like every writer."""
    write_now = [write]

    def once() -> T:
        try:
            return attempt(write_now[0])
        except Exception as exc:
            if is_busy(exc):
                write_now[0] = True
            raise

    return once


def _own_call(store: Store, prepared: Prepared, session_id: str, write: bool) -> ToolResult:
    """One attempt of a call in a unit of work of its own (``write``: ``BEGIN IMMEDIATE``)."""
    with store.begin(write=write) as mem:
        return run_prepared(prepared, mem, session_id, joined=False)


class Prepared(NamedTuple):
    """A call checked before any transaction begins (:func:`prepare`): the tool, the
    arguments as given (parsed), as the action log stores them (compact JSON; None: the log
    keeps their repr), the validated ones, or the failure that stops the call."""

    name: str
    tool: Tool[Any] | None
    raw: Any
    logged: ObjectJson | None
    args: ToolArgs | None
    failure: _Failure | None

    @property
    def writes(self) -> bool:
        """Whether the call runs a tool that writes (a refused call only logs itself)."""
        return self.tool is not None and self.args is not None and self.tool.writes


def prepare(tool_name: str, arguments: Mapping[str, Any] | str | bytes | None) -> Prepared:
    """The call checked once, before its first attempt (see :func:`_prepare`)."""
    return Prepared(tool_name, *_prepare(tool_name, arguments))


def _prepare(
    tool_name: str, arguments: Mapping[str, Any] | str | bytes | None
) -> tuple[Tool[Any] | None, Any, ObjectJson | None, ToolArgs | None, _Failure | None]:
    """The tool, the parsed arguments (as given and as logged) and the validated ones, or the
    failure that stops the call — all before any transaction begins (nothing here touches
    the database, and expensive checks must not hold the write lock)."""
    tool = REGISTRY.get(tool_name)
    if tool is None:
        guess = meant(tool_name[:80], REGISTRY)
        failure = _Failure(
            "unknown_tool",
            f"no tool named {tool_name[:80]!r}{did_you_mean([] if guess is None else [guess])}"
            f"; tools: {', '.join(sorted(REGISTRY))}",
        )
        return None, arguments, None, None, failure
    try:
        raw, logged = _parse_arguments(arguments)
    except _Failure as exc:
        return tool, arguments, None, None, exc
    try:
        args = tool.args_model.model_validate(_nulls_not_given(tool, raw))
    except ValidationError as exc:
        unused = [name for name in tool.args_model.model_fields if name not in raw]
        return tool, raw, logged, None, _Failure("invalid_arguments", describe(exc, unused=unused))
    except PhilontError as exc:  # a typed refusal raised by a rule (reserved namespace, ...)
        return tool, raw, logged, None, _Failure(exc.code, exc.message)
    return tool, raw, logged, args, None


class ArgumentCheck(NamedTuple):
    """What :func:`check_arguments` decided: the validated arguments, or why not."""

    args: ToolArgs | None
    error_code: str | None
    error: str | None


def check_arguments(
    name: str, arguments: Mapping[str, Any] | str | bytes | None = None
) -> ArgumentCheck:
    """What :func:`call` decides before it touches the database: the arguments it would run
    ``name`` with, or the code and message it would refuse them with (the same size policy,
    parsing and argument model). No database is opened."""
    _tool, _raw, _logged, args, failure = _prepare(name, arguments)
    if failure is not None:
        return ArgumentCheck(None, failure.code, failure.message)
    return ArgumentCheck(args, None, None)


def _nulls_not_given(tool: Tool[Any], raw: dict[str, Any]) -> dict[str, Any]:
    """``null`` for an optional argument means "not given" (what a strict schema, where every
    argument is required and optional ones are nullable, makes a model send)."""
    if not any(v is None for v in raw.values()):
        return raw
    fields = tool.args_model.model_fields
    return {
        k: v
        for k, v in raw.items()
        if not (v is None and k in fields and not fields[k].is_required())
    }


def _run(
    tool: Tool[Any], args: ToolArgs, mem: Memory, session_id: str, *, joined: bool
) -> tuple[ToolOutput | None, _Failure | None]:
    """Run the handler; on failure nothing it did is kept (a SAVEPOINT inside a caller's
    transaction, else the unit of work's own transaction is rolled back and begun again)."""
    ctx = ToolContext(session_id=session_id, now=mem.clock())
    try:
        if joined:
            with mem.session.begin_nested():
                return tool.handler(args, mem, ctx), None
        return tool.handler(args, mem, ctx), None
    except Exception as exc:
        mem.backend.explain(exc)  # a handler's not-found error, as a service's (SQLite)
        failure = _failure_of(exc, tool.name, mem.store.label)
        if not joined:
            mem.rollback()
        return None, failure


def _failure_of(exc: Exception, tool_name: str, where: str | None = None) -> _Failure:
    """What a handler's exception tells the model; storage failures (busy, full, read-only,
    I/O, a PostgreSQL conflict) are raised instead: the database may have rolled the whole
    transaction back, so not even the action log row can be written."""
    # a database error: SQLAlchemy's, raised bare by the driver (a lean statement; it was
    # internal_error with the driver's message), or as a service's method typed it
    database = database_error_of(exc)
    if database is not None:
        typed = translate(database)
        if typed is not None:  # a busy database is retried: not worth a warning (yet)
            busy = isinstance(typed, DatabaseBusyError)
            (log.info if busy else log.warning)(
                "tool.storage_failed", tool=tool_name, code=typed.code
            )
            raise  # typed by the unit of work, which knows its file (Memory._typed)
        # a statement the database refused for a reason we do not map: one line (the driver's
        # message and a traceback carry the statement's parameters, users' text), the
        # traceback at debug; any other SQLAlchemy error is a bug here, with its traceback
        if isinstance(exc, PhilontError):
            missed = unlogged(exc)
            if missed is not None:
                log.failure("tool.storage_error", missed, tool=tool_name)
            return _Failure(exc.code, exc.message)
        failed = _logged_failure(exc, tool_name, where)
        return _Failure(failed.code, failed.message)
    if isinstance(exc, PhilontError):
        return _Failure(exc.code, exc.message)
    if isinstance(exc, UnicodeEncodeError):  # a lone surrogate in the arguments reached SQLite
        return _Failure(
            "invalid_arguments",
            "text arguments must be valid Unicode (a lone surrogate cannot be stored)",
        )
    log.exception("tool.internal_error", tool=tool_name)
    return _Failure("internal_error", f"{type(exc).__name__}: {exc}")


def run_prepared(prepared: Prepared, mem: Memory, session_id: str, *, joined: bool) -> ToolResult:
    """One attempt of a call in the active unit of work ``mem`` (``joined``: one the call does
    not own, where a failed tool is undone by a SAVEPOINT). Storage failures raise: whoever
    owns the unit of work retries it when busy."""
    # Begin now: a busy database fails here, before the tool ran, and the whole attempt can be
    # retried.
    mem.session.connection()
    tool, args, failure = prepared.tool, prepared.args, prepared.failure
    output: ToolOutput | None = None
    if failure is None and tool is not None and args is not None:
        output, failure = _run(tool, args, mem, session_id, joined=joined)
    if output is not None:
        text = capped(output.text)
    else:
        assert failure is not None  # no output: a failure says why
        text = failure_text(failure.code, failure.message)
    ok = output is not None
    _log_call(mem, prepared, ok=ok, text=text, session_id=session_id)
    return ToolResult(  # model_construct is slower than this validation (2.0 vs 1.2 us)
        name=prepared.name,
        ok=ok,
        text=text,
        data=None if output is None else output.data,
        error_code=None if failure is None else failure.code,
        error=None if failure is None else failure.message,
    )


def _log_call(mem: Memory, prepared: Prepared, *, ok: bool, text: str, session_id: str) -> None:
    """The action log row every call leaves. It must be writable whatever the call was
    given: on PostgreSQL a NUL in the name or the result would be refused and take the
    caller's unit of work down with it. The params as :func:`prepare` encoded them (once),
    or a repr of what the log cannot store as given. None on a read-only Store
    (``Store.open(read_only=True)``): there a call that reads changes nothing."""
    if mem.read_only:
        return
    storable = mem.backend.escape_nul
    if prepared.tool is not None:  # a registered name: storable as it is
        name = prepared.tool.name
    else:
        tool_name = prepared.name
        name = storable(_surrogates_escaped(tool_name[:100]) if tool_name.strip() else "(no name)")
    raw, logged = prepared.raw, prepared.logged
    if logged is None and isinstance(raw, Mapping):  # a call refused before its arguments
        logged = _logged_json(dict(raw))  # were parsed (an unknown tool, too large)
    mem.actions.record_call(
        name,
        params_json=object_json(_unloggable(raw)) if logged is None else logged,
        success=ok,
        result=storable(_surrogates_escaped(text[:RESULT_LOG_CHARS])),
        session_id=session_id,
    )

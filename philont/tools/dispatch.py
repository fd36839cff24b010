"""``call(name, arguments)``: validate, run one tool in one unit of work, log it, never raise."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from philont.db.retry import run_with_retry, translate
from philont.errors import PhilontError
from philont.log import get_logger
from philont.memory import Memory
from philont.services.actions import ActionLog
from philont.tools.registry import REGISTRY, ToolContext, ToolOutput

log = get_logger(__name__)

RESULT_LOG_CHARS = 500
MAX_ARGUMENT_BYTES = 1_000_000


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
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _parse_arguments(arguments: Mapping[str, Any] | str | bytes | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, bytes | bytearray):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Failure("invalid_json", "arguments are not UTF-8 text") from exc
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_BYTES:
            raise _Failure("invalid_arguments", "arguments are larger than 1 MB")
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError) as exc:
            raise _Failure("invalid_json", f"arguments are not valid JSON: {exc}") from exc
    if not isinstance(arguments, Mapping):
        raise _Failure("invalid_arguments", "arguments must be a JSON object")
    return dict(arguments)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _loggable(raw: Any) -> dict[str, Any]:
    """Params as they can be stored in the action log (compact JSON object)."""
    if isinstance(raw, Mapping):
        try:
            # SQLite text must be valid UTF-8: a lone surrogate raises UnicodeEncodeError here
            json.dumps(raw, allow_nan=False, ensure_ascii=False).encode("utf-8")
            return dict(raw)
        except (TypeError, ValueError, RecursionError):
            pass
    return {"_raw": repr(raw)[:1000]}  # repr escapes lone surrogates


def _storable(text: str, *, keep_nul: bool = True) -> str:
    """``text`` with any lone surrogate escaped, so that SQLite can store it; without
    ``keep_nul`` (PostgreSQL text cannot hold U+0000) each NUL character is escaped too."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if keep_nul else text.replace("\x00", "\\x00")


def _joins(db: str | Path | URL | Memory | None) -> bool:
    """Whether the call runs inside the caller's open unit of work (and so cannot retry it)."""
    return isinstance(db, Memory) and db._session is not None


@contextmanager
def _memory(db: str | Path | URL | Memory | None) -> Iterator[Memory]:
    if isinstance(db, Memory):
        if db._session is not None:  # the caller's unit of work: join it
            yield db
            return
        with Memory(db.engine, clock=db.clock) as mem:
            yield mem
        return
    with Memory.open(db) as mem:
        yield mem


def _storage_failure(exc: SQLAlchemyError) -> tuple[str, str]:
    """The (code, message) a tool reports for a database failure."""
    typed = translate(exc)
    if typed is not None:
        return typed.code, typed.message
    return "storage_error", f"the memory database failed: {type(exc).__name__}"


def call(
    name: str,
    arguments: Mapping[str, Any] | str | bytes | None = None,
    *,
    db: str | Path | URL | Memory | None = None,
    session_id: str = "global",
) -> ToolResult:
    """Run the model tool ``name`` and report the outcome; never raises.

    The tool runs inside a savepoint: when it fails, nothing it did is kept. Every call,
    successful or not, is recorded in the action log (layer 0.5) with its params, the start of
    its result text and its success — that record is the only row a failed call leaves (a
    call the storage refuses — busy, full, read-only — leaves none, and reports that code).

    When the call owns its unit of work (``db`` is not a Memory inside ``with``), a database
    locked by another connection is waited for (busy timeout) and the whole call retried a few
    times; when that is exhausted the call fails with code ``database_busy`` and writes nothing.
    """
    tool_name = name if isinstance(name, str) else repr(name)
    try:
        if _joins(db):
            return _call_once(tool_name, arguments, db, session_id)
        return run_with_retry(lambda: _call_once(tool_name, arguments, db, session_id))
    except PhilontError as exc:  # the database itself could not be opened or written
        return ToolResult(
            name=tool_name,
            ok=False,
            text=f"error ({exc.code}): {exc.message}",
            error_code=exc.code,
            error=exc.message,
        )
    except SQLAlchemyError as exc:
        code, message = _storage_failure(exc)
        return ToolResult(
            name=tool_name,
            ok=False,
            text=f"error ({code}): {message}",
            error_code=code,
            error=message if code != "storage_error" else str(exc)[:500],
        )


def _call_once(
    tool_name: str,
    arguments: Mapping[str, Any] | str | bytes | None,
    db: str | Path | URL | Memory | None,
    session_id: str,
) -> ToolResult:
    """One attempt of :func:`call`; database failures outside the tool's savepoint raise."""
    raw: Any = arguments
    with _memory(db) as mem:
        session = mem.session
        # Begin now (IMMEDIATE for our own unit of work): a busy database fails here,
        # before the tool ran, and the whole attempt can be retried.
        session.connection()
        ok, output, code, message = False, ToolOutput(""), None, None
        try:
            tool = REGISTRY.get(tool_name)
            if tool is None:
                raise _Failure(
                    "unknown_tool",
                    f"no tool named {tool_name[:80]!r}; tools: {', '.join(sorted(REGISTRY))}",
                )
            raw = _parse_arguments(arguments)
            try:
                args = tool.args_model.model_validate(raw)
            except ValidationError as exc:
                raise _Failure("invalid_arguments", _validation_message(exc)) from exc
            ctx = ToolContext(session_id=session_id, now=mem.clock())
            with session.begin_nested():
                output = tool.handler(args, mem, ctx)
            ok = True
        except _Failure as exc:
            code, message = exc.code, exc.message
        except PhilontError as exc:
            code, message = exc.code, exc.message
        except SQLAlchemyError as exc:
            typed = translate(exc)
            if typed is not None:
                # busy, full, read-only, I/O error: SQLite may already have rolled the whole
                # transaction back, so not even the action log row can be written. Leave the
                # unit of work (rolled back, retried when busy and ours) and report the code.
                log.warning("tool.storage_failed", tool=tool_name, code=typed.code)
                raise typed from exc
            log.exception("tool.storage_error", tool=tool_name)
            code, message = "storage_error", f"the memory database failed: {type(exc).__name__}"
        except UnicodeEncodeError:  # a lone surrogate in the arguments reached SQLite
            code = "invalid_arguments"
            message = "text arguments must be valid Unicode (a lone surrogate cannot be stored)"
        except Exception as exc:  # the model must get a result, whatever went wrong
            log.exception("tool.internal_error", tool=tool_name)
            code, message = "internal_error", f"{type(exc).__name__}: {exc}"
        text = output.text if ok else f"error ({code}): {message}"
        # The record must be writable whatever the call was given: on PostgreSQL a NUL in the
        # name or the result would be refused and take the caller's unit of work down with it.
        keep_nul = session.get_bind().dialect.name != "postgresql"
        ActionLog(session, clock=mem.clock).record(
            _storable(tool_name[:100], keep_nul=keep_nul) if tool_name.strip() else "(no name)",
            params=_loggable(raw),
            success=ok,
            result=_storable(text[:RESULT_LOG_CHARS], keep_nul=keep_nul),
            session_id=session_id,
        )
        log.info("tool.called", tool=tool_name, ok=ok, code=code)
        return ToolResult(
            name=tool_name,
            ok=ok,
            text=text,
            data=output.data if ok else None,
            error_code=code,
            error=message,
        )

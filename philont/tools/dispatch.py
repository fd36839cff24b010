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
            json.dumps(raw, allow_nan=False)
            return dict(raw)
        except (TypeError, ValueError, RecursionError):
            pass
    return {"_raw": repr(raw)[:1000]}


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
    its result text and its success — that record is the only row a failed call leaves.
    """
    tool_name = name if isinstance(name, str) else repr(name)
    raw: Any = arguments
    try:
        with _memory(db) as mem:
            session = mem.session
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
                log.exception("tool.storage_error", tool=tool_name)
                code, message = "storage_error", f"the memory database failed: {type(exc).__name__}"
            except Exception as exc:  # the model must get a result, whatever went wrong
                log.exception("tool.internal_error", tool=tool_name)
                code, message = "internal_error", f"{type(exc).__name__}: {exc}"
            text = output.text if ok else f"error ({code}): {message}"
            ActionLog(session, clock=mem.clock).record(
                tool_name[:100] if tool_name.strip() else "(no name)",
                params=_loggable(raw),
                success=ok,
                result=text[:RESULT_LOG_CHARS],
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
    except PhilontError as exc:  # the database itself could not be opened or written
        return ToolResult(
            name=tool_name,
            ok=False,
            text=f"error ({exc.code}): {exc.message}",
            error_code=exc.code,
            error=exc.message,
        )
    except SQLAlchemyError as exc:
        return ToolResult(
            name=tool_name,
            ok=False,
            text=f"error (storage_error): {type(exc).__name__}",
            error_code="storage_error",
            error=str(exc)[:500],
        )

"""Library loggers: stdlib logging by default, a host's structlog when it configured one.

A host that configures nothing gets no output (stdout belongs to MCP stdio and CLI output); one
that configures ``logging`` gets our events as records (``"fact.stored namespace=user"``) at
its levels; one that configures structlog (its own JSON set-up, a stdlib bridge, or a test
capturing logs) gets every event through its own pipeline, with the key-values as fields.
structlog is never imported here: a host that uses it has imported it already, so
``import philont`` stays light.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from philont.errors import PhilontError


class Logger:
    """``log.info("fact.stored", namespace=ns)``: cheap when nobody listens (one level check;
    an event stdlib would drop is never formatted)."""

    __slots__ = ("_name", "_std")

    def __init__(self, name: str) -> None:
        self._name = name
        self._std = logging.getLogger(name)

    def _emit(
        self,
        level: int,
        method: str,
        event: str,
        kw: dict[str, Any],
        *,
        trace: BaseException | bool = False,
    ) -> None:
        structlog = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            extra = {"exc_info": trace} if trace is not False else {}
            getattr(structlog.get_logger(self._name), method)(event, **kw, **extra)
        elif self._std.isEnabledFor(level):
            fields = " ".join(
                f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in kw.items()
            )
            self._std.log(
                level,
                f"{event} {fields}" if fields else event,
                exc_info=trace or method == "exception",
                stacklevel=3,
            )

    def debug(self, event: str, **kw: Any) -> None:
        self._emit(logging.DEBUG, "debug", event, kw)

    def failure(self, event: str, exc: BaseException, **kw: Any) -> None:
        """The failure ``exc``, being handled: a typed one (:class:`~philont.errors.PhilontError`)
        in one line, a warning with its code and message, its traceback only at debug (a
        traceback's locals can hold users' messages, and it is 100+ lines); so is a statement
        the database refused for a reason we do not map, by its kind and what it refused
        (:func:`philont.db.retry.for_the_log`), the driver's message at debug only with the
        traceback (SQLAlchemy's text holds the statement's parameters, a driver's first line
        can hold the refused value: users' text); anything else (a bug) is logged with its
        traceback."""
        shown: BaseException | None = exc
        if not isinstance(exc, PhilontError):
            from philont.db.retry import for_the_log  # (a failure: SQLAlchemy is loaded)

            shown = for_the_log(exc)
        if not isinstance(shown, PhilontError):
            self._emit(logging.ERROR, "exception", event, kw, trace=exc)
            return
        self.warning(event, error=shown.code, reason=str(shown), **kw)
        self._emit(logging.DEBUG, "debug", f"{event}.traceback", kw, trace=exc)

    def info(self, event: str, **kw: Any) -> None:
        self._emit(logging.INFO, "info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._emit(logging.WARNING, "warning", event, kw)

    def exception(self, event: str, **kw: Any) -> None:
        """An error with the exception being handled attached."""
        self._emit(logging.ERROR, "exception", event, kw)


class _DemoteToDebug(logging.Filter):
    """Alembic reports each revision at INFO; ours say the same (``migrate.step``) as
    key-values. A host's INFO-level logging should not get ~40 unstructured lines on the first
    open, so Alembic's INFO records count as DEBUG while philont migrates: kept only where the
    host enabled DEBUG for Alembic's loggers."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


@contextmanager
def alembic_at_debug() -> Iterator[None]:
    """Within the block, Alembic's INFO records reach handlers as DEBUG records."""
    logger = logging.getLogger("alembic")
    demote = _DemoteToDebug()
    logger.addFilter(demote)
    for child in ("alembic.runtime.migration", "alembic.runtime.plugins"):
        logging.getLogger(child).addFilter(demote)
    try:
        yield
    finally:
        logger.removeFilter(demote)
        for child in ("alembic.runtime.migration", "alembic.runtime.plugins"):
            logging.getLogger(child).removeFilter(demote)


def get_logger(name: str) -> Logger:
    """``log = get_logger(__name__)``; events are dotted names with key-values."""
    return Logger(name)

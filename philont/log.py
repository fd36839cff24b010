"""Library loggers: structlog on top of stdlib logging, so a host that configures nothing gets
no output on stdout (stdout belongs to MCP stdio and CLI output) and one that configures
``logging`` or structlog gets our events as key-value records."""

from __future__ import annotations

import logging
from typing import Any

import structlog


class Logger:
    """``log.info("fact.stored", namespace=ns)``: a structlog logger behind a level check.

    When nobody configured structlog, an event stdlib would drop anyway is dropped before
    structlog is touched: its lazy proxy builds a bound logger on every call, which would make
    logging on hot paths (one event per append) cost more than the work it reports. A
    configured structlog (an entrypoint, a host, a test capturing logs) sees every event and
    filters it with its own processors.
    """

    __slots__ = ("_std", "_structlog")

    def __init__(self, name: str) -> None:
        self._std = logging.getLogger(name)
        self._structlog: structlog.stdlib.BoundLogger = structlog.wrap_logger(
            self._std, wrapper_class=structlog.stdlib.BoundLogger
        )

    def _wanted(self, level: int) -> bool:
        return structlog.is_configured() or self._std.isEnabledFor(level)

    def debug(self, event: str, **kw: Any) -> None:
        if self._wanted(logging.DEBUG):
            self._structlog.debug(event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        if self._wanted(logging.INFO):
            self._structlog.info(event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        if self._wanted(logging.WARNING):
            self._structlog.warning(event, **kw)

    def exception(self, event: str, **kw: Any) -> None:
        """An error with the exception being handled attached."""
        if self._wanted(logging.ERROR):
            self._structlog.exception(event, **kw)


def get_logger(name: str) -> Logger:
    """``log = get_logger(__name__)``; events are dotted names with key-values."""
    return Logger(name)

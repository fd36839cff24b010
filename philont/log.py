"""Library loggers: structlog on top of stdlib logging, so a host that configures nothing gets
no output on stdout (stdout belongs to MCP stdio and CLI output) and one that configures
``logging`` or structlog gets our events as key-value records."""

from __future__ import annotations

import logging
from typing import Any

import structlog

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
    "fatal": logging.CRITICAL,
}


class _LevelFilteredLogger(structlog.stdlib.BoundLogger):
    """When nobody configured structlog, skips its (default, console-rendering) processor chain
    for records stdlib would drop anyway: logging on hot paths (one event per append) must cost
    next to nothing when nobody listens. A configured structlog (an entrypoint, a host, a test
    capturing logs) sees every event and filters it with its own processors."""

    def _proxy_to_logger(
        self, method_name: str, event: str | None = None, *event_args: str, **event_kw: Any
    ) -> Any:
        level = _LEVELS.get(method_name)
        if (
            level is not None
            and not structlog.is_configured()
            and not self._logger.isEnabledFor(level)
        ):
            return None
        return super()._proxy_to_logger(method_name, event, *event_args, **event_kw)


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """``log = get_logger(__name__)``; events are dotted names with key-values."""
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name), wrapper_class=_LevelFilteredLogger
    )
    return logger

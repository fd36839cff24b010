"""Library loggers: structlog on top of stdlib logging, so a host that configures nothing gets
no output on stdout (stdout belongs to MCP stdio and CLI output) and one that configures
``logging`` or structlog gets our events as key-value records."""

from __future__ import annotations

import logging

import structlog


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """``log = get_logger(__name__)``; events are dotted names with key-values."""
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name), wrapper_class=structlog.stdlib.BoundLogger
    )
    return logger

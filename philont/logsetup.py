"""structlog set-up for our entrypoints only (CLI, MCP): key-value lines on stderr."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: int = logging.WARNING) -> None:
    """Render our events as key-value lines through stdlib logging on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            # a traceback without its frames' locals: they hold users' messages and values
            structlog.dev.ConsoleRenderer(
                colors=False, exception_formatter=structlog.dev.plain_traceback
            ),
        ],
        # Through stdlib logging to the stderr handler above: never stdout.
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )

"""Library logging: events reach a host's stdlib logging or structlog set-up, and nothing is
emitted (or built) for a level nobody listens to."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from philont.log import get_logger


@pytest.fixture
def unconfigured() -> Iterator[None]:
    """structlog as a host that never configured it leaves it (other tests may have)."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


def test_a_stdlib_host_gets_events_at_its_level(
    unconfigured: None, caplog: pytest.LogCaptureFixture
) -> None:
    log = get_logger("philont.test_log")
    with caplog.at_level(logging.INFO, logger="philont.test_log"):
        log.debug("test.hidden", n=1)
        log.info("test.shown", n=2)
    messages = [r.getMessage() for r in caplog.records if r.name == "philont.test_log"]
    assert len(messages) == 1
    assert "test.shown" in messages[0] and "n=2" in messages[0]


def test_nothing_reaches_stdlib_below_its_level(
    unconfigured: None, caplog: pytest.LogCaptureFixture
) -> None:
    log = get_logger("philont.test_log")
    with caplog.at_level(logging.WARNING, logger="philont.test_log"):
        log.debug("test.debug")
        log.info("test.info")
        log.warning("test.warning")
    assert [r.levelno for r in caplog.records if r.name == "philont.test_log"] == [logging.WARNING]


def test_a_configured_structlog_sees_every_event_whatever_stdlib_says() -> None:
    log = get_logger("philont.test_log")
    logging.getLogger("philont.test_log").setLevel(logging.CRITICAL)
    try:
        with capture_logs() as logs:
            log.debug("test.debug", k="v")
            try:
                raise ValueError("boom")
            except ValueError:
                log.exception("test.failed")
    finally:
        logging.getLogger("philont.test_log").setLevel(logging.NOTSET)
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("test.debug", "debug"),
        ("test.failed", "error"),
    ]
    assert logs[0]["k"] == "v"

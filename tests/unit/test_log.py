"""Library logging: events reach a host's stdlib logging or structlog set-up, and nothing is
emitted (or built) for a level nobody listens to."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import structlog
from structlog.testing import capture_logs

from philont.log import get_logger
from philont.store import Store


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


def test_a_structlog_only_host_gets_our_events_through_its_own_pipeline(
    unconfigured: None, tmp_path: Path
) -> None:
    """structlog's own JSON set-up, no stdlib logging configured: nothing may be lost."""
    out = io.StringIO()
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
        logger_factory=structlog.PrintLoggerFactory(file=out),
    )
    with Store.open(tmp_path / "m.sqlite") as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    stored = [e for e in events if e["event"] == "fact.stored"]
    assert stored and stored[0]["namespace"] == "user" and stored[0]["key"] == "city"


FIRST_OPEN = """
import logging, sys, tempfile, pathlib
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(message)s")
from philont import Store
Store.open(pathlib.Path(tempfile.mkdtemp()) / "m.sqlite").close()
"""


def test_the_first_open_tells_an_info_level_host_one_line_not_alembics_forty() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_OPEN], capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line.startswith("alembic")], lines
    assert len(lines) == 1 and lines[0].startswith("philont.migrate migrate.done")


def test_an_entrypoints_traceback_shows_no_locals() -> None:
    """The CLI's and MCP server's set-up (logsetup.configure) rendered a traceback with its
    frames' locals (rich's): a failed batch's debug traceback printed the batch's messages, a
    bug's the values it was handling. A traceback is kept, its locals are not."""
    code = (
        "import logging\n"
        "from philont.logsetup import configure\n"
        "from philont.log import get_logger\n"
        "configure(logging.DEBUG)\n"
        "def work():\n"
        "    secret = 'hunter2-in-a-local'\n"
        "    raise ValueError('boom')\n"
        "try:\n"
        "    work()\n"
        "except ValueError:\n"
        "    get_logger('philont.test').debug('test.failed', exc_info=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Traceback" in done.stderr and "ValueError: boom" in done.stderr, done.stderr
    assert "hunter2-in-a-local" not in done.stderr, done.stderr


def _refused_statement(secret: str) -> Exception:
    """An SQLAlchemy error for a statement SQLite refused for a reason philont does not map:
    its text holds the statement's parameters."""
    import sqlite3
    from contextlib import closing

    from sqlalchemy.exc import IntegrityError

    sql = "INSERT INTO memory_notes (content) VALUES (?)"
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(
            "CREATE TABLE memory_notes (content TEXT"
            " CONSTRAINT no_secrets CHECK (content NOT LIKE '%pin%'))"
        )
        try:
            conn.execute(sql, (secret,))
        except sqlite3.IntegrityError as refused:
            return IntegrityError(sql, (secret,), refused)
    raise AssertionError("the CHECK let the row in")


@pytest.mark.parametrize("raised", [False, True], ids=["handled later", "while raised"])
def test_a_failure_logs_the_exception_it_is_given_without_the_statement_values(
    unconfigured: None, caplog: pytest.LogCaptureFixture, raised: bool
) -> None:
    """``log.failure`` of a statement the database refused, unmapped: one warning naming its
    kind and the driver's first line, not the parameters (users' text), whoever calls it;
    its traceback (at debug) is the exception given, also outside its ``except`` block. It
    was logged as a bug, with SQLAlchemy's text ('[parameters: ...]') and whatever
    exception was being handled ('NoneType: None' outside one)."""
    log = get_logger("philont.test_log")
    exc = _refused_statement("my bank pin is 4312")
    with caplog.at_level(logging.DEBUG, logger="philont.test_log"):
        if raised:
            try:
                raise exc
            except Exception as caught:
                log.failure("test.failed", caught)
        else:
            log.failure("test.failed", exc)
    records = [r for r in caplog.records if r.name == "philont.test_log"]
    warning = next(r for r in records if r.levelno == logging.WARNING)
    assert "IntegrityError" in warning.getMessage() and "no_secrets" in warning.getMessage()
    assert all("4312" not in r.getMessage() for r in records)
    assert not any(r.levelno >= logging.ERROR for r in records)
    traced = [r for r in records if r.exc_info]
    assert [r.levelno for r in traced] == [logging.DEBUG] and traced[0].exc_info[1] is exc


def _driver_refusal(secret: str) -> list[Exception]:
    """PostgreSQL's refusal of a value, whose first line holds it, raised by the driver and
    wrapped by SQLAlchemy."""
    from psycopg.errors import InvalidTextRepresentation
    from sqlalchemy.exc import DataError

    err = InvalidTextRepresentation(f'invalid input syntax for type integer: "{secret}"')
    return [err, DataError("SELECT CAST(%(v)s AS INTEGER)", {"v": secret}, err)]


@pytest.mark.parametrize("how", ["driver", "wrapped"])
def test_a_warning_never_holds_the_database_message_only_debug_does(
    unconfigured: None, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    """The first line of PostgreSQL's message can hold the value it refused ('invalid input
    syntax for type integer: "..."'): a warning names the kind and what was refused, the
    message is at debug only (with the traceback). The warning held that first line."""
    secret = "pin-7734"
    exc = _driver_refusal(secret)[how == "wrapped"]
    log = get_logger("philont.test_log")
    with caplog.at_level(logging.DEBUG, logger="philont.test_log"):
        log.failure("test.failed", exc)
    records = [r for r in caplog.records if r.name == "philont.test_log"]
    above_debug = [r for r in records if r.levelno > logging.DEBUG]
    assert [r.levelno for r in above_debug] == [logging.WARNING]
    said = above_debug[0].getMessage()
    assert secret not in said and "InvalidTextRepresentation" in said and "22P02" in said, said
    debug = [r for r in records if r.levelno == logging.DEBUG]
    assert debug and debug[0].exc_info is not None and secret in str(debug[0].exc_info[1])

"""A statement the database refuses for a reason philont does not map (here a trigger's
``RAISE(ABORT)``, as a constraint or a host's trigger would) is reported to the model as
``storage_error`` and logged in one line, a warning with its code and the kind of failure; the
traceback (whose driver message and frames hold the statement's parameters: users' text) only
at debug. It was logged at error level with the whole traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa
from structlog.testing import capture_logs

from philont import Store, tools
from tests.tools.helpers import DbTarget

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

SECRET = "my bank pin is 4312"

PG_TRIGGER = """
CREATE FUNCTION refuse_facts() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'facts are frozen'; END $$;
CREATE TRIGGER refuse_facts BEFORE INSERT ON memory_facts
  FOR EACH ROW EXECUTE FUNCTION refuse_facts();
"""


@pytest.fixture
def frozen(tool_target: DbTarget, request: pytest.FixtureRequest) -> Iterator[DbTarget]:
    """``tool_target`` where every new fact is refused by a trigger (removed afterwards: on
    PostgreSQL the layout is this run's, shared by the tests that follow)."""
    if isinstance(tool_target, Path):
        with closing(sqlite3.connect(str(tool_target))) as conn, conn:
            conn.execute(
                "CREATE TRIGGER refuse_facts BEFORE INSERT ON memory_facts"
                " BEGIN SELECT RAISE(ABORT, 'facts are frozen'); END"
            )
        yield tool_target
        return
    owner = sa.create_engine(request.getfixturevalue("pg_layout").url)
    try:
        with owner.begin() as conn:
            conn.exec_driver_sql(PG_TRIGGER)
        yield tool_target
    finally:
        with owner.begin() as conn:
            conn.exec_driver_sql("DROP FUNCTION IF EXISTS refuse_facts() CASCADE")
        owner.dispose()


def test_an_unmapped_database_refusal_is_logged_in_one_line(frozen: DbTarget) -> None:
    with Store.open(frozen) as store, capture_logs() as logs:
        result = tools.call("store_fact", {"namespace": "n", "key": "k", "value": SECRET}, db=store)
    assert result.error_code == "storage_error", result.text
    failures = [e for e in logs if e["event"].startswith("tool.storage_error")]
    assert [(e["event"], e["log_level"]) for e in failures] == [
        ("tool.storage_error", "warning"),
        ("tool.storage_error.traceback", "debug"),
    ]
    failed, trace = failures
    assert failed["error"] == "storage_error" and failed["tool"] == "store_fact"
    kind = "IntegrityError" if isinstance(frozen, Path) else "ProgrammingError"
    assert failed["reason"] == f"the memory database failed: {kind} (facts are frozen)"
    assert "exc_info" not in failed and trace["exc_info"] is True
    assert SECRET not in repr(failed)

"""PostgreSQL's conflicts become one typed error, and a conflicted unit of work is run again.

Every SQLSTATE psycopg knows is generated: a deadlock (40P01), a serialization failure (40001)
and a lock timeout (55P03) are :class:`TransactionConflictError` (a retryable
``DatabaseBusyError``) however they reach philont (raw, wrapped by SQLAlchemy, or as the cause
of the "current transaction is aborted" error that follows them); every other SQLSTATE is left
alone. ``run_with_retry`` runs a unit again after each such failure, logs each retry, and after
the last attempt raises the last failure's kind.
"""

from __future__ import annotations

import sqlite3

import psycopg
import psycopg.errors
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.exc import OperationalError
from structlog.testing import capture_logs

from philont.db.retry import PG_CONFLICTS, retryable, run_with_retry, translate
from philont.errors import DatabaseBusyError, TransactionConflictError

PG_ERRORS = sorted(
    (
        cls
        for cls in vars(psycopg.errors).values()
        if isinstance(cls, type)
        and issubclass(cls, psycopg.Error)
        and getattr(cls, "sqlstate", None)
    ),
    key=lambda cls: str(cls.sqlstate),
)
CONFLICTS = [cls for cls in PG_ERRORS if cls.sqlstate in PG_CONFLICTS]


def _wrapped(err: BaseException) -> OperationalError:
    return OperationalError("SELECT pg_advisory_xact_lock(%(k)s)", {"k": 1}, err)


def _after(first: BaseException) -> BaseException:
    """The error the next statement of an aborted transaction raises, while ``first`` is
    handled (its ``__context__``)."""
    try:
        try:
            raise first
        except BaseException:
            raise _wrapped(psycopg.errors.InFailedSqlTransaction("current transaction is aborted"))  # noqa: B904
    except BaseException as exc:
        return exc


def test_the_three_conflicts_are_the_ones_psycopg_names() -> None:
    assert sorted(cls.__name__ for cls in CONFLICTS) == [
        "DeadlockDetected",
        "LockNotAvailable",
        "SerializationFailure",
    ]


@given(cls=st.sampled_from(PG_ERRORS), how=st.sampled_from(["raw", "wrapped", "after"]))
def test_every_sqlstate_is_a_conflict_exactly_when_it_is_one_of_the_three(
    cls: type[psycopg.Error], how: str
) -> None:
    err = cls(f"{cls.__name__} happened\nDETAIL:  Process 1 waits for ExclusiveLock")
    raised = {"raw": err, "wrapped": _wrapped(err), "after": _after(_wrapped(err))}[how]
    typed = translate(raised)
    if cls.sqlstate not in PG_CONFLICTS:
        assert typed is None
        assert retryable(raised) is None
        return
    assert isinstance(typed, TransactionConflictError)
    assert isinstance(typed, DatabaseBusyError)  # whoever retries busy retries this too
    assert typed.code == "transaction_conflict"
    reason = PG_CONFLICTS[cls.sqlstate]
    assert typed.details == {"sqlstate": cls.sqlstate, "reason": reason}
    assert f"{reason}, SQLSTATE {cls.sqlstate}" in typed.message
    assert "happened" not in typed.message  # the driver's text, which a trigger may have set
    assert "rolled back" in typed.message and "run the unit of work again" in typed.message
    assert "DETAIL" not in typed.message  # one line, not the processes' story
    assert retryable(raised) is not None


Failure = type[psycopg.Error] | str


def _failure(kind: Failure) -> BaseException:
    if kind == "busy":
        return _wrapped(sqlite3.OperationalError("database is locked"))
    assert not isinstance(kind, str)
    return _wrapped(kind(f"{kind.__name__} happened"))


@given(
    failures=st.lists(st.sampled_from([*CONFLICTS, "busy"]), max_size=6),
    attempts=st.integers(min_value=1, max_value=5),
)
def test_a_unit_runs_again_after_each_conflict_and_gives_up_after_its_attempts(
    failures: list[Failure], attempts: int
) -> None:
    calls = 0

    def unit() -> str:
        nonlocal calls
        calls += 1
        if calls <= len(failures):
            raise _failure(failures[calls - 1])
        return "done"

    with capture_logs() as logs:
        if len(failures) < attempts:
            assert run_with_retry(unit, attempts=attempts, base_delay=0) == "done"
            retried = len(failures)
        else:
            with pytest.raises(DatabaseBusyError) as raised:
                run_with_retry(unit, attempts=attempts, base_delay=0)
            last = failures[attempts - 1]
            expected = DatabaseBusyError if last == "busy" else TransactionConflictError
            assert type(raised.value) is expected
            assert f"gave up after {attempts} attempt" in raised.value.message
            assert raised.value.details["attempts"] == attempts
            retried = attempts - 1
    assert calls == min(len(failures) + 1, attempts)
    codes = [e["code"] for e in logs if e["event"] == "db.retry"]
    assert codes == [
        "database_busy" if f == "busy" else "transaction_conflict" for f in failures[:retried]
    ]


def test_another_postgresql_error_is_not_run_again() -> None:
    calls = 0

    def unit() -> None:
        nonlocal calls
        calls += 1
        raise _wrapped(psycopg.errors.UniqueViolation("duplicate key"))

    with pytest.raises(OperationalError):
        run_with_retry(unit, base_delay=0)
    assert calls == 1

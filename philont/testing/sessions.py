"""The SAVEPOINT-per-test recipe for host test suites: every write rolled back after each test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from philont.db.engine import has_sqlite_hooks
from philont.errors import InvalidInputError
from philont.store import Store

__all__ = ["rollback_session"]


@contextmanager
def rollback_session(db: Store | Engine) -> Iterator[Session]:
    """A Session for one test whose writes are all undone when the block ends, also what the
    code under test committed: the session joins an outer transaction and every ``commit()``
    inside only releases a SAVEPOINT (SQLAlchemy's "joining a Session into an external
    transaction" recipe). Use it with ``store.join(session)`` and ``factories.bound(session)``.

    On SQLite this needs philont's engine (``Store.engine``, ``philont.db.engine.create_engine``):
    with pysqlite's default transaction handling a plain ``sqlite:///`` engine never emits
    BEGIN, SAVEPOINTs are not transactional and committed rows leak into the next test, so such
    an engine is refused.
    """
    engine = db.engine if isinstance(db, Store) else db
    if engine.dialect.name == "sqlite" and not has_sqlite_hooks(engine):
        raise InvalidInputError(
            "this SQLite engine runs pysqlite's own transaction handling, under which a "
            "rolled-back test keeps what the code under test committed; use Store.engine or "
            "philont.db.engine.create_engine(path)"
        )
    connection = engine.connect()
    outer = connection.begin()
    session = Session(
        bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
    )
    try:
        yield session
    finally:
        session.close()
        outer.rollback()
        connection.close()

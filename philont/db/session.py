"""Units of work for our own entrypoints (services never commit; callers own transactions)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=True)


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Session]:
    """A Session inside one transaction: committed on success, rolled back on any error."""
    with session_factory(engine)() as session, session.begin():
        yield session

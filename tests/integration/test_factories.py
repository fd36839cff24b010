"""The factories users import to seed data write valid rows into every table."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db import models as m
from philont.testing import factories as f
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)


@pytest.mark.parametrize("factory_cls", f.ALL_FACTORIES, ids=lambda c: c.__name__)
def test_each_factory_flushes_a_row_into_its_table(factory_cls: type, session: Session) -> None:
    model = factory_cls._meta.model
    before = session.scalar(select(func.count()).select_from(model))
    with f.bound(session):
        factory_cls.create_batch(2)
    after = session.scalar(select(func.count()).select_from(model))
    assert after == before + 2


def test_every_model_has_a_factory() -> None:
    covered = {c._meta.model for c in f.ALL_FACTORIES}
    all_models = {getattr(m, name) for name in m.__all__}
    philont_tables = {x for x in all_models if not x.__tablename__.startswith("philont_")}
    assert philont_tables <= covered


def test_a_factory_message_is_found_by_the_trigram_index(session: Session, backend: str) -> None:
    from sqlalchemy import text

    with f.bound(session):
        msg = f.RawMessageFactory(content="Kastanienallee 12 looks promising")
    if backend == "postgres":  # no FTS5 table there: the search service's trigram matching
        from philont.services.search import SearchService

        assert msg.id in {h.id for h in SearchService(joined(session)).messages("Kastanien")}
        return
    hits = session.execute(
        text(
            "SELECT rowid FROM memory_raw_messages_fts WHERE memory_raw_messages_fts "
            "MATCH '\"Kastanien\"'"
        )
    ).scalars()
    assert msg.id in set(hits)


def test_traits_give_the_named_states(session: Session) -> None:
    with f.bound(session):
        pinned = f.FactFactory(pinned=True)
        dep = f.SkillFactory(deprecated=True)
        gone = f.NoteFactory(forgotten=True)
    assert pinned.decay_tau_days == -1.0
    assert dep.maturity == "deprecated" and dep.consecutive_failures == 3
    assert gone.forgotten_at is not None

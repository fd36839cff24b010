"""The long sessions of a window are summarized in one order, the same on both backends: their
ids in code point order (it was the order an unordered GROUP BY returned them in, PostgreSQL's
hash or locale order)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from philont.learning import LearningConfig
from philont.learning.summaries import long_sessions
from philont.learning.window import load_range
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock

POOL = ["b", "B", "a_b", "A-B", "apple", "Banana", "é", "z", "10", "9", "s 1", "s-1", "Zeta"]


def _cases() -> list[list[str]]:
    cases = []
    for seed in range(12):
        rng = random.Random(seed)
        ids = rng.sample(POOL, rng.randint(3, len(POOL)))
        cases.append(ids)
    return cases


@pytest.mark.parametrize("ids", _cases())
def test_long_sessions_come_in_code_point_order_of_their_ids(
    session: Session, clock: FakeClock, ids: list[str]
) -> None:
    mem = joined(session, clock)
    start = clock.now
    for sid in ids:  # sessions written (and talked in) in a shuffled order
        mem.timeline.start_session(sid)
    for turn in range(2):
        for sid in ids:
            clock.advance(seconds=1)
            mem.timeline.append(f"turn {turn} of {sid}", session_id=sid)
    window = load_range(session, start, clock.now + timedelta(seconds=1), limit=1000)
    if session.get_bind().dialect.name == "postgresql":
        # the plan a bigger table gets: groups in hash order (a sorted plan follows the
        # column's collation, a locale's under en_US)
        session.execute(text("SET LOCAL enable_sort = off"))

    found = long_sessions(session, window, LearningConfig(summary_min_messages=2))

    assert list(found) == sorted(ids)

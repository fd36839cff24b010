"""Short CJK terms more common than the occurrence cap: bounded, newest first, filters kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert
from sqlalchemy.orm import Session

from philont.db.models import RawMessage, RawSession
from philont.domain.kinds import Role
from philont.services.search import SearchService, scoring, sqlite
from tests.support import joined

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
CAP = 20
RECENT = 30


@pytest.fixture(autouse=True)
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real caps, scaled down so a few dozen messages exceed them."""
    for module in (scoring, sqlite):  # where they are defined, and where they are used
        monkeypatch.setattr(module, "CJK_OCCURRENCE_CAP", CAP)
        monkeypatch.setattr(module, "CJK_RECENT_ROWS", RECENT)


def add(session: Session, contents: list[str], *, session_id: str = "global") -> list[int]:
    """Messages in this order (one minute apart, after those already there); their ids."""
    if session.get(RawSession, session_id) is None:
        session.add(RawSession(id=session_id, started_at=T0))
        session.flush()
    start = session.query(RawMessage).count()
    rows: list[dict[str, Any]] = [
        {
            "session_id": session_id,
            "role": Role.USER,
            "content": text,
            "timestamp": T0 + timedelta(minutes=start + k),
        }
        for k, text in enumerate(contents)
    ]
    session.execute(insert(RawMessage), rows)
    newest = session.query(RawMessage.id).order_by(RawMessage.id.desc()).limit(len(rows)).all()
    return sorted(r[0] for r in newest)


def found(session: Session, query: str, **kwargs: Any) -> list[int]:
    return [
        h.id for h in SearchService(joined(session), context_weights=()).messages(query, **kwargs)
    ]


# Each message holds 柏林 followed by a different character, so the trigrams that start with
# it sort in another order than time (the index lists occurrences by trigram, then by message).
FOLLOWERS = "住看玩买吃走"


def berlin(n: int) -> list[str]:
    return [f"我在柏林{FOLLOWERS[k % len(FOLLOWERS)]}了{k}天" for k in range(n)]


def test_a_term_more_common_than_the_cap_finds_its_newest_messages(session: Session) -> None:
    ids = add(session, berlin(3 * CAP))
    add(session, ["今天天气不错。"] * 5)  # the newest messages do not hold the term
    assert found(session, "柏林", limit=5) == ids[::-1][:5]
    assert found(session, "上次说的柏林是什么？", limit=5) == ids[::-1][:5]


@pytest.mark.parametrize("limit", [20, 45, 100, 400])
def test_a_common_term_gives_as_many_hits_as_asked_for(session: Session, limit: int) -> None:
    # Its window of newest rows grows with the limit (scoring.Pools): it held RECENT rows.
    ids = add(session, berlin(12 * CAP))
    assert found(session, "柏林", limit=limit) == ids[::-1][:limit]


def test_a_rare_term_still_finds_an_old_message_next_to_a_common_one(session: Session) -> None:
    (target,) = add(session, ["在柏林吃了寿司"])
    add(session, berlin(3 * CAP))  # 柏林 is common now; target is older than RECENT messages
    assert found(session, "柏林和寿司")[0] == target
    assert found(session, "寿司") == [target]


def test_a_common_term_keeps_the_filters(session: Session) -> None:
    (old,) = add(session, ["柏林的公寓"], session_id="a")
    add(session, berlin(3 * CAP), session_id="b")
    assert found(session, "柏林", session_ids=["a"]) == [old]
    until = T0 + timedelta(minutes=1)
    assert set(found(session, "柏林", until=until)) == {old, old + 1}


def test_the_document_frequency_of_a_common_term_is_estimated_from_its_newest_matches() -> None:
    window = scoring.PRESENCE_WINDOW
    # A full window, one match in every ten of the rowids it spans: a tenth of the documents.
    newest = list(range(100_000, 100_000 - 10 * window, -10))
    assert scoring.estimate_cjk_df(newest, 100_000, window, RECENT) == pytest.approx(
        10_000, rel=0.02
    )
    # Fewer matches than the window: their share of all the recent rows read.
    few = list(range(100_000, 100_000 - RECENT // 2, -1))[:3]
    assert scoring.estimate_cjk_df(few, 100_000, window, RECENT) == round(3 * 100_000 / RECENT)


def test_a_rare_term_keeps_the_filters(session: Session) -> None:
    # Rarer than the cap: every occurrence is read through both index arms, each filtered.
    (in_a,) = add(session, ["柏林的公寓"], session_id="a")
    (in_b,) = add(session, ["我也去过柏林"], session_id="b")
    ends_in_a = add(session, ["我们说到了柏林"], session_id="a")[0]  # found through the tail
    assert sorted(found(session, "柏林", session_ids=["a"])) == [in_a, ends_in_a]
    assert found(session, "柏林", session_ids=["b"], roles=["user"]) == [in_b]
    assert found(session, "柏林", session_ids=["a"], until=T0) == [in_a]

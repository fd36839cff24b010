"""Search on PostgreSQL: the same plan, filters and top hits as on SQLite, and no hostile query
text ever reaches SQL as anything but a bound value."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, insert
from sqlalchemy.orm import Session, sessionmaker

from philont.db.backend import Raw
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine
from philont.db.fts import PG_WORDS_COLUMN, pg_words
from philont.db.models import Note, RawMessage, RawSession, Skill
from philont.db.schema import metadata
from philont.domain.kinds import Role, SkillKind
from philont.domain.maturity import Grade
from philont.services.search import SearchService
from philont.services.search.postgres import PgScorer, _word_match
from philont.services.search.sqlite import SqliteScorer
from tests.pg_support import Layout, agent_connection, agent_session
from tests.support import joined

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)

# --- one small corpus, built alike in both backends ---------------------------------------------

MESSAGES: list[tuple[str, Role, str]] = [
    # (session, role, content); ids are 1.. in this order, a minute apart
    ("s1", Role.USER, "We decided the Berlin apartment is too expensive, so we keep looking."),
    ("s1", Role.ASSISTANT, "Understood. Shall I look for cheaper flats in Leipzig instead?"),
    ("s1", Role.USER, "Yes, and remind me that the deposit is 50% of the rent."),
    ("s2", Role.USER, "Remind me to water the plants tomorrow morning."),
    ("s2", Role.ASSISTANT, "I will remind you to water the plants at eight."),
    ("s2", Role.USER, "The weather in Lisbon is lovely this week, we went camping twice."),
    ("s3", Role.USER, "Can you convert this markdown file to a Word document?"),
    ("s3", Role.ASSISTANT, "Done: the document is in your downloads folder."),
    ("s3", Role.USER, "I booked the dentist for Thursday at nine, dentist appointments again."),
    ("s4", Role.USER, "下个月我要出差去柏林，记得帮我订酒店。"),
    ("s4", Role.ASSISTANT, "好的，我会在柏林市中心找酒店。"),
    ("s4", Role.USER, "Let's try the new ramen place on Friday after camping."),
    ("s5", Role.USER, "The variable snake_case_name holds the camping budget."),
    ("s5", Role.USER, "The variable snakeXcaseXname is unrelated to anything."),
    ("s5", Role.ASSISTANT, "Our tent for camping trips is in the garage, next to the bikes."),
    ("s5", Role.USER, "Melanie painted a sunrise over the lake last summer."),
    ("s5", Role.USER, "Caroline went to an LGBTQ support group and found it powerful."),
    ("s5", Role.USER, "The Mietkaution was paid back in full after we moved out."),
]

NOTES: list[tuple[str, str, float, bool]] = [
    # (id, content, importance, forgotten)
    ("n1", "The Berlin apartment deposit is two months of rent.", 0.5, False),
    ("n2", "User prefers oat milk in coffee.", 0.9, False),
    ("n3", "The old Berlin flat had a broken heater.", 0.5, True),
    ("n4", "出差去柏林时住在酒店。", 0.5, False),
    ("n5", "Camping gear: tent, stove, two sleeping bags.", 0.2, False),
]

SKILLS: list[tuple[str, str, str, list[str], str, Grade]] = [
    # (id, name, description, trigger keywords, kind, maturity)
    ("k1", "deploy-docs", "Build and deploy the documentation site", ["docs", "deploy"],
     "positive", Grade.STABLE),
    ("k2", "avoid-force-push", "Never force push to the main branch", ["git", "push"],
     "negative", Grade.DRAFT),
    ("k3", "deploy-legacy", "Deploy the legacy service by hand", ["deploy", "legacy"],
     "positive", Grade.DEPRECATED),
    ("k4", "deploy-playbook", "The full deploy playbook with rollback", ["deploy", "rollback"],
     "positive", Grade.PLAYBOOK),
    ("k5", "book-hotel", "预订柏林的酒店 and compare prices", ["hotel", "柏林"],
     "positive", Grade.CONFIRMED),
]  # fmt: skip


def at(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def fill(engine: Engine, agent: str | None = None) -> None:
    """Create the schema (SQLite) or the agent (PostgreSQL) and the corpus (explicit ids and
    times, so both backends hold the same rows)."""
    if agent is None:
        metadata.create_all(engine)
        with engine.begin() as conn:
            ensure_bootstrap_rows(conn)
    with engine.begin() if agent is None else agent_connection(engine, agent) as conn:
        sessions = sorted({s for s, _r, _c in MESSAGES})
        conn.execute(insert(RawSession), [{"id": s, "started_at": T0} for s in sessions])
        conn.execute(
            insert(RawMessage),
            [
                {"id": n, "session_id": s, "role": r.value, "content": c, "timestamp": at(n)}
                for n, (s, r, c) in enumerate(MESSAGES, start=1)
            ],
        )
        conn.execute(
            insert(Note),
            [
                {
                    "id": i,
                    "content": c,
                    "importance": imp,
                    "created_at": at(n),
                    "forgotten_at": at(n + 1) if forgotten else None,
                }
                for n, (i, c, imp, forgotten) in enumerate(NOTES, start=1)
            ],
        )
        conn.execute(
            insert(Skill),
            [
                {
                    "id": i,
                    "name": name,
                    "description": desc,
                    "trigger_keywords": keys,
                    "action_template": "1. do it",
                    "created_at": at(n),
                    "kind": SkillKind(kind),
                    "maturity": grade,
                }
                for n, (i, name, desc, keys, kind, grade) in enumerate(SKILLS, start=1)
            ],
        )


@dataclass
class Backends:
    sqlite: Session
    pg: Session

    def both(self, call: Callable[[SearchService], Any]) -> tuple[Any, Any]:
        return call(SearchService(joined(self.sqlite))), call(SearchService(joined(self.pg)))


def _open(engine: Engine) -> Session:
    s = sessionmaker(bind=engine, expire_on_commit=False)()
    s.begin()
    return s


@pytest.fixture
def pg_session(pg_layout: Layout, pg_agent_name: Callable[[], str]) -> Iterator[Session]:
    engine = create_engine(pg_layout.url)
    name = pg_agent_name()
    fill(engine, name)
    s = agent_session(engine, name)
    yield s
    s.rollback()
    s.close()
    engine.dispose()


@pytest.fixture
def backends(pg_session: Session, tmp_path: Path) -> Iterator[Backends]:
    engine = create_engine(tmp_path / "memory" / "memory.sqlite")
    fill(engine)
    s = _open(engine)
    yield Backends(s, pg_session)
    s.rollback()
    s.close()
    engine.dispose()


def ids(hits: list[Any]) -> list[Any]:
    return [h.id for h in hits]


def test_one_search_service_scores_with_the_backend_of_its_store(
    pg_session: Session, backends: Backends
) -> None:
    assert isinstance(joined(pg_session).store.scorer, PgScorer)
    assert isinstance(joined(backends.sqlite).store.scorer, SqliteScorer)
    assert type(joined(pg_session).search) is type(joined(backends.sqlite).search) is SearchService


# --- hostile text ------------------------------------------------------------------------------

HOSTILE = [
    "a & b | !c",
    "camping & !berlin",
    "foo <-> bar",
    "<2> <-> <->",
    "camp:*",
    "berlin:* & (plants | !water)",
    "((((",
    "))) & |",
    "!!!",
    "'",
    "''",
    "'berlin'",
    '"berlin',
    '"""',
    "\\",
    "\\\\ \\' \\%",
    "berlin\\",
    "%",
    "%%%",
    "_",
    "___",
    "%_%",
    "50%",
    "snake\\_case",
    "?",
    "$1",
    "%s %(x)s",
    "; DROP TABLE memory_raw_messages; --",
    "",
    "   \t\n ",
    "?!.,;:-()[]{}",
    "。，？！",
    "柏林%",
    "_柏林_",
    "x" * 100_000,
    "berlin " * 15_000,
    "柏" * 50_000,
]


@pytest.mark.parametrize("query", HOSTILE, ids=lambda q: repr(q[:20]))
def test_hostile_query_text_never_raises_an_sql_error(pg_session: Session, query: str) -> None:
    search = SearchService(joined(pg_session))
    assert isinstance(search.messages(query), list)
    assert isinstance(search.messages(query, session_ids=["s1"], roles=["user"]), list)
    assert isinstance(search.notes(query, include_forgotten=True), list)
    assert isinstance(search.skills(query, kind="negative", callable_only=True), list)
    # A failed statement would have aborted the transaction: the next search would raise.
    assert ids(search.messages("Berlin apartment"))[0] == 1


@pytest.mark.parametrize("query", ["%", "_", "%_%", "\\%", "50%", "%%%%%%%%"])
def test_like_wildcards_alone_match_nothing(pg_session: Session, query: str) -> None:
    search = SearchService(joined(pg_session), context_weights=())  # no neighbours' shares
    hits = ids(search.messages(query, limit=50))
    # Only a message holding the literal text (the 50% deposit) may match; never everything.
    assert set(hits) <= {3}
    assert ids(search.notes(query, include_forgotten=True)) == []


def test_underscore_is_literal_in_substring_matches(pg_session: Session) -> None:
    search = SearchService(joined(pg_session), context_weights=())  # 14 follows 13: no shares
    hits = ids(search.messages("snake_case_name", limit=50))
    assert 13 in hits
    assert 14 not in hits  # snakeXcaseXname: '_' is no wildcard
    # The substring channel itself (a compound holding the word) escapes too.
    hits = ids(search.messages("snake_case", limit=50))
    assert 14 not in hits


_UNESCAPED = re.compile(r"(?<!\\)(?:\\\\)*[%_]")


def test_every_like_pattern_bound_is_escaped(
    pg_session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LIKE/ILIKE patterns sent to PostgreSQL wrap the term in ``%`` and escape every ``%``,
    ``_`` and backslash inside it (a second check behind the scoring, which counts literal
    occurrences in Python)."""
    patterns: list[str] = []
    fetch = Raw.rows

    def spy(self: Raw, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if "LIKE %s" in sql:
            patterns.extend(p for p in params if isinstance(p, str) and p.startswith("%"))
        return fetch(self, sql, params)

    monkeypatch.setattr(Raw, "rows", spy)
    search = SearchService(joined(pg_session), context_weights=())
    search.messages("snake_case_name")
    search.messages("100%_done_\\_柏_林_x")
    search.notes("snake_case_name 柏林")
    assert any("snake\\_case\\_name" in p for p in patterns)
    for p in patterns:
        inner = p[1:-1]
        assert p.endswith("%") and not _UNESCAPED.search(inner), p


def test_a_compound_is_found_by_its_long_part(backends: Backends) -> None:
    sqlite, pg = backends.both(lambda s: ids(s.messages("Kaution")))
    assert pg[:1] == [18]
    assert pg == sqlite


# --- CJK -----------------------------------------------------------------------------------------


def test_a_two_character_chinese_word_is_found(pg_session: Session) -> None:
    search = SearchService(joined(pg_session))
    assert set(ids(search.messages("柏林"))[:2]) == {10, 11}
    assert ids(search.messages("酒店", roles=["assistant"])) == [11]
    assert ids(search.notes("柏林"))[0] == "n4"
    assert ids(search.skills("柏林"))[0] == "k5"
    assert ids(search.messages("上次说的柏林是什么？"))[0] in {10, 11}


# --- filters: as on SQLite -----------------------------------------------------------------------

MESSAGE_FILTERS: list[tuple[str, dict[str, Any], set[int]]] = [
    # (query, filter, the ids the filter allows)
    ("camping", {}, set(range(1, 19))),
    ("camping", {"since": at(12)}, set(range(12, 19))),
    ("camping", {"until": at(12)}, set(range(1, 13))),
    ("camping", {"since": at(6), "until": at(12)}, set(range(6, 13))),
    ("camping", {"session_ids": ["s5"]}, {13, 14, 15, 16, 17, 18}),
    ("camping", {"session_ids": ["s2", "s4"]}, {4, 5, 6, 10, 11, 12}),
    ("camping", {"roles": ["assistant"]}, {2, 5, 8, 11, 15}),
    ("camping", {"roles": [Role.USER], "session_ids": ["s5"]}, {13, 14, 16, 17, 18}),
    ("camping", {"exclude_ids": [15, 6]}, set(range(1, 19)) - {6, 15}),
    ("remind water plants", {}, set(range(1, 19))),
    ("remind water plants", {"exclude_ids": [4]}, set(range(1, 19)) - {4}),
    ("remind water plants", {"roles": ["assistant"]}, {2, 5, 8, 11, 15}),
    ("dentist", {"since": at(10)}, set(range(10, 19))),
]


@pytest.mark.parametrize(("query", "flt", "allowed"), MESSAGE_FILTERS)
def test_message_filters_behave_as_on_sqlite(
    backends: Backends, query: str, flt: dict[str, Any], allowed: set[int]
) -> None:
    sqlite, pg = backends.both(lambda s: ids(s.messages(query, limit=20, **flt)))
    assert set(pg) <= allowed
    assert pg == sqlite


def test_the_filters_do_restrict(backends: Backends) -> None:
    """The filtered cases above are not vacuous: without the filter, other messages match."""
    _sqlite, pg = backends.both(lambda s: ids(s.messages("camping", limit=20)))
    assert {6, 12, 13, 15} <= set(pg)
    _sqlite, pg = backends.both(lambda s: ids(s.messages("dentist", until=at(8))))
    assert pg == []


@pytest.mark.parametrize("include_forgotten", [False, True])
@pytest.mark.parametrize("query", ["Berlin", "Berlin flat heater", "camping tent", "柏林"])
def test_note_filters_behave_as_on_sqlite(
    backends: Backends, query: str, include_forgotten: bool
) -> None:
    sqlite, pg = backends.both(
        lambda s: ids(s.notes(query, limit=5, include_forgotten=include_forgotten))
    )
    assert pg == sqlite
    if query.startswith("Berlin"):
        assert ("n3" in pg) is include_forgotten


SKILL_FILTERS: list[dict[str, Any]] = [
    {},
    {"include_deprecated": True},
    {"callable_only": True},
    {"callable_only": True, "include_deprecated": True},
    {"kind": "negative"},
    {"kind": SkillKind.POSITIVE},
    {"kind": "positive", "callable_only": True},
]


@pytest.mark.parametrize("flt", SKILL_FILTERS, ids=str)
@pytest.mark.parametrize("query", ["deploy", "push to main", "hotel"])
def test_skill_filters_behave_as_on_sqlite(
    backends: Backends, query: str, flt: dict[str, Any]
) -> None:
    sqlite, pg = backends.both(lambda s: ids(s.skills(query, limit=5, **flt)))
    assert pg == sqlite


def test_skill_filters_keep_the_right_grades_and_kinds(pg_session: Session) -> None:
    search = SearchService(joined(pg_session))
    assert set(ids(search.skills("deploy"))) == {"k1", "k4"}
    assert set(ids(search.skills("deploy", include_deprecated=True))) == {"k1", "k3", "k4"}
    assert ids(search.skills("deploy", callable_only=True)) == ["k1"]
    assert ids(search.skills("deploy push", kind="negative")) == ["k2"]
    assert "k2" not in ids(search.skills("deploy push", kind="positive"))


# --- ranking: the same top hit as SQLite ---------------------------------------------------------

QUERIES = [
    "What did we decide about the Berlin apartment?",
    "How much is the deposit?",
    "When should the plants be watered?",
    "Where is the tent for camping?",
    "Which document did I convert?",
    "When is the dentist appointment?",
    "What did Melanie paint?",
    "What group did Caroline go to?",
    "Where did we go camping twice?",
    "ramen Friday",
    "柏林的酒店",
]


@pytest.mark.parametrize("query", QUERIES)
def test_top_hits_equal_sqlite(backends: Backends, query: str) -> None:
    sqlite, pg = backends.both(lambda s: ids(s.messages(query, limit=5)))
    assert sqlite, "the corpus answers every question"
    assert pg[:1] == sqlite[:1]
    assert pg[:3] == sqlite[:3]


def test_scores_equal_sqlite(backends: Backends) -> None:
    """bm25 mirrors FTS5's (same idf, term frequency, length normalisation by the corpus'
    average length), so the scores themselves agree, not just the order."""
    for query in QUERIES[:-1]:
        sqlite, pg = backends.both(lambda s, q=query: s.messages(q, limit=5))
        assert [h.id for h in pg] == [h.id for h in sqlite]
        for a, b in zip(sqlite, pg, strict=True):
            assert b.score == pytest.approx(a.score, rel=1e-6), query


@pytest.mark.parametrize(
    ("opclass", "condition", "value"),
    [
        (PG_WORDS_COLUMN, _word_match(["camping"]), "camping"),  # the scorer's own
        ("content gin_trgm_ops", "content ILIKE %s", "%camping%"),
    ],
)
def test_the_search_indexes_look_up_the_agent_key_not_every_agents_posting_list(
    pg_session: Session, opclass: str, condition: str, value: str
) -> None:
    """The lean SQL's agent condition must be one the GIN indexes' first column can use
    (btree_gin has no ``bigint = integer``): else a word's look-up reads the posting lists of
    every agent in the partition, a cost that grows with the number of agents; and the
    scorer's word condition must read the stored words the word index covers (revision v039),
    not compute them. Checked on a temporary table with the same GIN index (and stored words)
    and nothing else to choose from."""
    raw = joined(pg_session).raw()
    for sql in (
        "CREATE TEMP TABLE philont_probe (agent_id bigint NOT NULL, content text NOT NULL,"
        f" {PG_WORDS_COLUMN} tsvector GENERATED ALWAYS AS ({pg_words('content')}) STORED)"
        " ON COMMIT DROP",
        f"CREATE INDEX ON pg_temp.philont_probe USING gin (agent_id, {opclass})",
        "SET LOCAL enable_seqscan = off",
    ):
        pg_session.connection().exec_driver_sql(sql)
    plan = raw.rows(
        f"EXPLAIN (FORMAT JSON) SELECT b.content FROM pg_temp.philont_probe AS b"
        f" WHERE {raw.mine('b')} AND {condition}",
        [value],
    )[0][0]
    text_ = json.dumps(plan)
    assert "Bitmap Index Scan" in text_ and '"Index Cond": "((agent_id = ' in text_, text_


ENDINGS = [
    "我养了一只猫", "猫", "一只猫 ", "一只猫\n", "一只猫。", "一只猫\u0301", "猫😀", "emoji 😀",
    "一只𠀀", "𠀀", "𠀀𠀁", "猫𠀀", "café", "cafe\u0301", "ｦa", "가나", "ᄀ", "只猫 ok", "猫a",
]  # fmt: skip
"""Messages ending in each kind of last two characters (revision v040's tail): CJK or not,
astral (emoji, CJK extension B), a combining mark, whitespace, one character alone."""


def _add_endings(engine: Engine, agent: str | None = None) -> None:
    """ENDINGS as messages after the corpus' (ids go on without a gap: both scorers read the
    number of messages as the largest id)."""
    first = len(MESSAGES) + 1
    with engine.begin() if agent is None else agent_connection(engine, agent) as conn:
        conn.execute(insert(RawSession), [{"id": "s9", "started_at": T0}])
        rows = [
            {
                "id": first + n,
                "session_id": "s9",
                "role": "user",
                "content": c,
                "timestamp": at(first + n),
            }
            for n, c in enumerate(ENDINGS)
        ]
        conn.execute(insert(RawMessage), rows)


@pytest.mark.parametrize("query", ["猫", "只猫", "𠀀", "𠀁", "café", "ok", "가나", "emoji", "一只"])
def test_scores_equal_sqlite_whatever_a_message_ends_with(
    pg_layout: Layout, pg_agent_name: Callable[[], str], tmp_path: Path, query: str
) -> None:
    """PostgreSQL's bm25 counts the tokens of each message's tail as FTS5 reads them
    (fts.raw_messages_tail_text), whatever its last two characters are: the scores agree."""
    sqlite = create_engine(tmp_path / "memory" / "memory.sqlite")
    pg = create_engine(pg_layout.url)
    name = pg_agent_name()
    try:
        fill(sqlite)
        _add_endings(sqlite)
        fill(pg, name)
        _add_endings(pg, name)
        backends = Backends(_open(sqlite), agent_session(pg, name))
        try:
            a_hits, b_hits = backends.both(lambda s: s.messages(query, limit=20))
        finally:
            backends.sqlite.close()
            backends.pg.close()
        assert a_hits, query
        assert [h.id for h in b_hits] == [h.id for h in a_hits]
        for a, b in zip(a_hits, b_hits, strict=True):
            assert b.score == pytest.approx(a.score, rel=1e-6), (query, a.id)
    finally:
        sqlite.dispose()
        pg.dispose()

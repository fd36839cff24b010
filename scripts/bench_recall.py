"""Keyword-recall benchmark: evidence recall@k on LoCoMo, a Chinese set, and retrieval latency.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_recall.py                  # ours on ../shared/.../conv-26.json
    .venv/bin/python scripts/bench_recall.py --baseline       # + the original, + a plain OR query
    .venv/bin/python scripts/bench_recall.py --data PATH      # another LoCoMo-format file
    .venv/bin/python scripts/bench_recall.py --retriever      # also the TimelineRetriever window
    .venv/bin/python scripts/bench_recall.py --no-context     # also ours without context scores
    .venv/bin/python scripts/bench_recall.py --zh [--baseline]  # the Chinese set
    .venv/bin/python scripts/bench_recall.py --scale 100000   # retrieve() latency vs raw sqlite3
    .venv/bin/python scripts/bench_recall.py --url postgresql+psycopg://u:p@host/db [--agent A]
        # SQLite and PostgreSQL side by side (LoCoMo and the Chinese set; the agent schema,
        # default bench_recall, is dropped and recreated)

LoCoMo (Maharana et al., ACL 2024): every turn becomes a raw message (content = the turn text,
timestamp = its session's date plus the turn index in seconds, one session per LoCoMo session,
speaker A -> user, speaker B -> assistant), each conversation in a database of its own; every
question of categories 1-4 is asked as a recall query, and evidence recall@k is the share of
its evidence turns among the first k hits, averaged over questions.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Engine, insert, text
from sqlalchemy.orm import Session

from philont import migrate
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine, pg_schema, resolve_url
from philont.db.models import RawMessage, RawSession
from philont.db.schema import metadata
from philont.db.session import session_factory
from philont.domain.kinds import Role
from philont.domain.query import build_plan
from philont.services.retriever import TimelineRetriever
from philont.services.search import SearchService, driver_connection, fetch_all

HERE = Path(__file__).resolve()
DEFAULT_DATA = HERE.parents[2] / "shared/data/locomo-dev/conv-26.json"
ZH_DATA = HERE.parent / "data" / "zh_recall.json"
KS = (5, 10, 20)
DEFAULT_AGENT = "bench_recall"
CATEGORIES = (1, 2, 3, 4)


# --- data ------------------------------------------------------------------------------------


@dataclass
class Question:
    text: str
    evidence: set[int]
    category: int | str


@dataclass
class Conversation:
    name: str
    sessions: list[tuple[str, datetime]] = field(default_factory=list)
    # (id, session_id, role, content, timestamp)
    messages: list[tuple[int, str, str, str, datetime]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    skipped_questions: int = 0


def _parse_locomo_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_locomo(path: Path) -> list[Conversation]:
    """Every conversation of a LoCoMo-format file (a list of samples, or one sample)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    samples = raw if isinstance(raw, list) else [raw]
    out = []
    for index, sample in enumerate(samples):
        conv = sample["conversation"]
        name = str(sample.get("sample_id", f"{path.stem}-{index}"))
        c = Conversation(name)
        speaker_a = conv.get("speaker_a")
        dia: dict[str, int] = {}
        n = 1
        next_id = 1
        while f"session_{n}" in conv:
            turns = conv[f"session_{n}"] or []
            try:
                started = _parse_locomo_date(str(conv.get(f"session_{n}_date_time", "")))
            except ValueError:  # a missing or odd date: a day after the previous session
                started = c.sessions[-1][1] if c.sessions else datetime(2023, 1, 1, tzinfo=UTC)
                started += timedelta(days=1)
            sid = f"{name}:session_{n}"
            c.sessions.append((sid, started))
            for t, turn in enumerate(turns):
                role = Role.USER if turn.get("speaker") == speaker_a else Role.ASSISTANT
                at = started + timedelta(seconds=t)
                c.messages.append((next_id, sid, role.value, str(turn.get("text", "")), at))
                dia[str(turn["dia_id"])] = next_id
                next_id += 1
            n += 1
        for qa in sample.get("qa", []):
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = {
                dia[e]
                for item in qa.get("evidence", [])
                for e in re.split(r"[;,\s]+", str(item))
                if e in dia
            }
            if not evidence:
                c.skipped_questions += 1
                continue
            c.questions.append(Question(str(qa["question"]), evidence, int(qa["category"])))
        out.append(c)
    return out


def load_zh(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    c = Conversation("zh")
    base = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    c.sessions.append(("zh", base))
    ids: dict[str, int] = {}
    for n, m in enumerate(data["messages"], start=1):
        ids[m["id"]] = n
        c.messages.append((n, "zh", m["role"], m["content"], base + timedelta(minutes=7 * n)))
    for q in data["questions"]:
        c.questions.append(Question(q["question"], {ids[e] for e in q["evidence"]}, q["key"]))
    return c


def _insert(engine: Engine, conv: Conversation) -> None:
    with engine.begin() as conn:
        conn.execute(
            insert(RawSession), [{"id": sid, "started_at": at} for sid, at in conv.sessions]
        )
        conn.execute(
            insert(RawMessage),
            [
                {"id": i, "session_id": s, "role": r, "content": content, "timestamp": at}
                for i, s, r, content, at in conv.messages
            ],
        )


def _create(path: Path, conv: Conversation | None) -> Engine:
    """A memory database at ``path`` built through our models (create_all + DDL events)."""
    engine = create_engine(path)
    metadata.create_all(engine)
    with engine.begin() as conn:
        ensure_bootstrap_rows(conn)
    if conv is not None:
        _insert(engine, conv)
    return engine


@contextmanager
def database(conv: Conversation | None = None) -> Iterator[tuple[Engine, Path]]:
    """A temporary memory database holding ``conv`` (if given)."""
    with tempfile.TemporaryDirectory(prefix="philont-bench-") as tmp:
        path = Path(tmp) / "memory" / "memory.sqlite"
        engine = _create(path, conv)
        try:
            yield engine, path
        finally:
            engine.dispose()


@contextmanager
def sqlite_database(conv: Conversation) -> Iterator[Engine]:
    with database(conv) as (engine, _path):
        yield engine


def pg_database(url: str, agent: str) -> Callable[[Conversation], AbstractContextManager[Engine]]:
    """Opens ``conv`` in the PostgreSQL agent schema ``agent`` at ``url``: the schema is dropped,
    recreated and migrated to head (``philont.migrate.upgrade``, as ``Memory.open`` does), then
    filled and analysed. It is left in place afterwards (for inspection; the next run drops it)."""
    target = resolve_url(url, agent=agent)
    schema = pg_schema(target)

    @contextmanager
    def _open(conv: Conversation) -> Iterator[Engine]:
        engine = create_engine(target)  # creates the schema (and pg_trgm) when missing
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()
        migrate.upgrade(target)
        engine = create_engine(target)
        try:
            _insert(engine, conv)
            with engine.begin() as conn:
                # Ids were given explicitly: move the sequence past them, as appends would.
                conn.execute(
                    text(
                        "SELECT setval(pg_get_serial_sequence('memory_raw_messages', 'id'),"
                        " (SELECT coalesce(max(id), 0) + 1 FROM memory_raw_messages), false)"
                    )
                )
            with engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
            yield engine
        finally:
            engine.dispose()

    return _open


# --- the two algorithms ----------------------------------------------------------------------

Searcher = Callable[[Session, str], list[int]]


def ours(session: Session, question: str) -> list[int]:
    return [h.id for h in SearchService(session).messages(question, limit=max(KS))]


def ours_without_context(session: Session, question: str) -> list[int]:
    """Ours with conversation context off: keyword scores of each message alone."""
    search = SearchService(session, context_weights=())
    return [h.id for h in search.messages(question, limit=max(KS))]


_SANITISE = re.compile(r"['\"*()]")


def baseline(session: Session, question: str) -> list[int]:
    """The original's searchMessages (spec section 6): the sanitised sentence as the trigram
    MATCH expression, newest first; on error or no rows, LIKE '%sentence%' (unescaped)."""
    safe = _SANITISE.sub(" ", question).strip()
    if not safe:
        return []
    conn = session.connection()
    rows: list[Any] = []
    if len(safe) >= 3:
        try:
            rows = list(
                conn.exec_driver_sql(
                    "SELECT m.id FROM memory_raw_messages m JOIN memory_raw_messages_fts fts"
                    " ON fts.rowid = m.rowid WHERE memory_raw_messages_fts MATCH ?"
                    " ORDER BY m.timestamp DESC LIMIT ?",
                    (safe, max(KS)),
                )
            )
        except Exception:  # the original swallows every FTS error
            rows = []
    if not rows:
        rows = list(
            conn.exec_driver_sql(
                "SELECT id FROM memory_raw_messages WHERE content LIKE '%' || ? || '%'"
                " ORDER BY timestamp DESC LIMIT ?",
                (safe, max(KS)),
            )
        )
    return [int(r[0]) for r in rows]


def plain_or(session: Session, question: str) -> list[int]:
    """The simple fix for comparison: the same words OR-ed, one FTS5 query on our word index,
    ordered by bm25 (no idf weighting per term, no conversation context, no CJK channel)."""
    plan = build_plan(question)
    if plan is None or plan.fts_expression is None:
        return []
    rows = fetch_all(
        driver_connection(session),
        "SELECT rowid FROM philont_raw_messages_words_fts WHERE philont_raw_messages_words_fts"
        " MATCH ? ORDER BY bm25(philont_raw_messages_words_fts, 1.0, 0.0) LIMIT ?",
        ("content : (" + plan.fts_expression + ")", max(KS)),
    )
    return [int(r[0]) for r in rows]


def retriever_window(session: Session, question: str) -> list[int]:
    """Message ids of the whole TimelineRetriever window (recall section first)."""
    result = TimelineRetriever(session).retrieve(question)
    return [m.message_id for m in result.messages if m.message_id is not None]


# --- measuring -------------------------------------------------------------------------------


@dataclass
class Score:
    recall: dict[int, float] = field(default_factory=lambda: {k: 0.0 for k in KS})
    questions: int = 0
    zero: int = 0
    latencies: list[float] = field(default_factory=list)
    per_category: dict[Any, list[float]] = field(default_factory=dict)
    ranked: list[list[int]] = field(default_factory=list)  # each question's hits, in order

    def add(self, q: Question, ids: list[int], seconds: float) -> None:
        self.questions += 1
        self.ranked.append(list(ids))
        self.latencies.append(seconds)
        if not ids:
            self.zero += 1
        for k in KS:
            self.recall[k] += len(q.evidence & set(ids[:k])) / len(q.evidence)
        self.per_category.setdefault(q.category, []).append(
            len(q.evidence & set(ids[:10])) / len(q.evidence)
        )

    def row(self) -> dict[str, float]:
        n = max(self.questions, 1)
        lat = sorted(self.latencies) or [0.0]
        return {
            **{f"R@{k}": self.recall[k] / n for k in KS},
            "zero": self.zero / n,
            "p50_ms": _pct(lat, 50) * 1000,
            "p95_ms": _pct(lat, 95) * 1000,
        }


def _pct(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(pct / 100 * (len(sorted_values) - 1))))
    return sorted_values[index]


def run(
    conversations: list[Conversation],
    searchers: dict[str, Searcher],
    opener: Callable[[Conversation], AbstractContextManager[Engine]] = sqlite_database,
) -> dict[str, Score]:
    scores = {name: Score() for name in searchers}
    for conv in conversations:
        with opener(conv) as engine:
            factory = session_factory(engine)
            with factory() as session, session.begin():
                for q in conv.questions:
                    for name, search in searchers.items():
                        start = time.perf_counter()
                        ids = search(session, q.text)
                        scores[name].add(q, ids, time.perf_counter() - start)
    return scores


def print_scores(title: str, scores: dict[str, Score]) -> None:
    print(f"\n{title}")
    header = f"{'':<12}" + "".join(f"{c:>9}" for c in ("R@5", "R@10", "R@20", "zero%"))
    print(header + f"{'p50 ms':>9}{'p95 ms':>9}")
    rows = {name: s.row() for name, s in scores.items()}
    for name, r in rows.items():
        print(
            f"{name:<12}{r['R@5']:>9.3f}{r['R@10']:>9.3f}{r['R@20']:>9.3f}"
            f"{100 * r['zero']:>9.1f}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
        )
    for other, label in (("baseline", "the original"), ("plain-or", "a plain OR query")):
        if "ours" not in rows or other not in rows:
            continue
        for k in KS:
            b, o = rows[other][f"R@{k}"], rows["ours"][f"R@{k}"]
            ratio = f"{o / b:.2f}x" if b > 0 else f"inf ({other} finds nothing)"
            print(f"  recall@{k}: ours {o:.3f} vs {label} {b:.3f} -> {ratio}")
    for name, s in scores.items():
        cats = ", ".join(
            f"{c}: {statistics.fmean(v):.3f} (n={len(v)})"
            for c, v in sorted(s.per_category.items(), key=lambda x: str(x[0]))
        )
        if name == "ours" and len(s.per_category) <= 8:
            print(f"  ours recall@10 by category: {cats}")


# --- SQLite vs PostgreSQL ---------------------------------------------------------------------

_SIDE = ("R@5", "R@10", "R@20", "zero")


def print_side_by_side(title: str, sqlite: Score, pg: Score, *, found: bool = False) -> None:
    """One table: SQLite, PostgreSQL and their difference (PostgreSQL minus SQLite)."""
    print(f"\n{title}")
    cols = ("R@5", "R@10", "R@20", "zero%", "p50 ms", "p95 ms")
    if found:
        cols += ("found@10",)
    print(f"{'':<14}" + "".join(f"{c:>9}" for c in cols))
    a, b = sqlite.row(), pg.row()

    def line(name: str, r: dict[str, float], s: Score | None) -> str:
        out = f"{name:<14}" + "".join(f"{r[k]:>9.3f}" for k in _SIDE[:3])
        out += f"{100 * r['zero']:>9.1f}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
        if found and s is not None:
            out += f"{f'{_found(s)}/{s.questions}':>9}"
        return out

    print(line("sqlite", a, sqlite))
    print(line("postgresql", b, pg))
    diff = {k: b[k] - a[k] for k in a}
    text_ = f"{'pg - sqlite':<14}" + "".join(f"{diff[k]:>+9.3f}" for k in _SIDE[:3])
    text_ += f"{100 * diff['zero']:>+9.1f}{diff['p50_ms']:>+9.2f}{diff['p95_ms']:>+9.2f}"
    if found:
        text_ += f"{_found(pg) - _found(sqlite):>+9d}"
    print(text_)
    same = sum(1 for x, y in zip(sqlite.ranked, pg.ranked, strict=True) if x[:10] == y[:10])
    top = sum(1 for x, y in zip(sqlite.ranked, pg.ranked, strict=True) if x[:1] == y[:1])
    print(
        f"  same top hit on {top}/{sqlite.questions} questions, same top 10 (in order) on"
        f" {same}/{sqlite.questions}"
    )


def _found(score: Score) -> int:
    """Questions with at least one evidence message in the top 10."""
    return sum(1 for v in score.per_category.values() for x in v if x > 0)


def print_differences(
    conversations: list[Conversation], sqlite: Score, pg: Score, limit: int
) -> None:
    """The questions whose recall@10 differs most between the backends (for diagnosis)."""
    questions = [q for c in conversations for q in c.questions]
    rows = []
    for q, x, y in zip(questions, sqlite.ranked, pg.ranked, strict=True):
        a = len(q.evidence & set(x[:10])) / len(q.evidence)
        b = len(q.evidence & set(y[:10])) / len(q.evidence)
        if a != b:
            rows.append((b - a, q, x, y))
    rows.sort(key=lambda r: r[0])
    print(f"  recall@10 differs on {len(rows)} question(s); the {min(limit, len(rows))} largest:")
    for delta, q, x, y in sorted(rows, key=lambda r: -abs(r[0]))[:limit]:
        print(f"  {delta:+.2f} {q.text!r} evidence {sorted(q.evidence)}")
        print(f"        sqlite {x[:10]}")
        print(f"        pg     {y[:10]}")


def compare_backends(
    conversations: list[Conversation], data_name: str, url: str, agent: str, show: int
) -> None:
    """``ours`` on SQLite and on PostgreSQL, LoCoMo then the Chinese set, side by side."""
    pg = pg_database(url, agent)
    print(f"postgresql: {resolve_url(url, agent=agent).render_as_string()} (schema {agent})")
    searchers: dict[str, Searcher] = {"ours": ours}
    n_q = sum(len(c.questions) for c in conversations)
    n_m = sum(len(c.messages) for c in conversations)
    a = run(conversations, searchers)["ours"]
    b = run(conversations, searchers, pg)["ours"]
    print_side_by_side(f"LoCoMo {data_name}: {n_m} messages, {n_q} questions (ours)", a, b)
    if show:
        print_differences(conversations, a, b, show)
    zh = load_zh(ZH_DATA)
    a = run([zh], searchers)["ours"]
    b = run([zh], searchers, pg)["ours"]
    print_side_by_side(
        f"Chinese set {ZH_DATA.name}: {len(zh.messages)} messages, {len(zh.questions)} questions"
        " (found@10: questions with their message in the top 10)",
        a,
        b,
        found=True,
    )
    if show:
        print_differences([zh], a, b, show)


# --- latency at scale ------------------------------------------------------------------------

_SEED = 7
_CONSONANTS, _VOWELS = "bcdfghjklmnprstvwz", "aeiou"


def _pseudo_words(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        n = rng.randint(2, 4)
        words.add("".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(n)))
    return sorted(words)


def _word_distribution(rng: random.Random) -> tuple[list[str], list[float], list[str]]:
    """Words with weights: English as LoCoMo uses it (when the file is there) for the frequent
    part, and a long Zipf tail of pseudo-words (names, rare terms); plus query sentences."""
    counts: dict[str, int] = {}
    questions: list[str] = []
    if DEFAULT_DATA.exists():
        for conv in load_locomo(DEFAULT_DATA):
            questions += [q.text for q in conv.questions]
            for _i, _s, _r, text, _at in conv.messages:
                for w in re.findall(r"[a-z']+", text.lower()):
                    counts[w] = counts.get(w, 0) + 1
    tail = _pseudo_words(rng, 50_000)
    words = list(counts) + tail
    total = sum(counts.values()) or 1
    # Real words carry 80% of the mass (their own proportions), the tail 20% (Zipf).
    harmonic = sum(1.0 / (i + 1) for i in range(len(tail)))
    weights = [0.8 * c / total for c in counts.values()]
    weights += [0.2 / ((i + 1) * harmonic) for i in range(len(tail))]
    if not questions:
        for _ in range(150):
            picked = rng.choices(tail[20:3000], k=rng.randint(2, 4))
            questions.append("What did we say about the " + " and ".join(picked) + "?")
    return words, weights, questions


def build_scale_db(path: Path, n_messages: int) -> list[str]:
    """Fill ``path`` (already created) with n synthetic messages; return the query sentences."""
    rng = random.Random(_SEED)
    words, weights, questions = _word_distribution(rng)
    cjk = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]
    t0 = 1_704_067_200_000  # 2024-01-01T00:00Z
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    sql = (
        "INSERT INTO memory_raw_messages(session_id, role, content, timestamp) VALUES (?, ?, ?, ?)"
    )
    batch: list[tuple[Any, ...]] = []
    for i in range(n_messages):
        if i % 10 == 9:
            text = "".join(rng.choice(cjk) for _ in range(rng.randint(8, 40))) + "。"
        else:
            text = " ".join(rng.choices(words, weights=weights, k=rng.randint(5, 40))) + "."
        role = "system" if i % 97 == 0 else ("user" if i % 2 == 0 else "assistant")
        batch.append(("global", role, text.capitalize(), t0 + i * 60_000))
        if len(batch) >= 20_000:
            conn.executemany(sql, batch)
            conn.commit()
            batch.clear()
    if batch:
        conn.executemany(sql, batch)
        conn.commit()
    conn.execute("PRAGMA optimize")
    conn.close()
    queries = questions[:200]
    queries += [
        "上次说的" + "".join(rng.choice(cjk) for _ in range(2)) + "是什么？" for _ in range(20)
    ]
    return queries


@contextmanager
def scale_database(n_messages: int, keep: Path | None) -> Iterator[tuple[Engine, list[str]]]:
    """A database of n synthetic messages: a temporary one, or ``keep`` (built once, reused)."""
    if keep is not None and keep.exists():
        engine = create_engine(keep)
        queries = json.loads(keep.with_suffix(".queries.json").read_text(encoding="utf-8"))
        try:
            yield engine, queries
        finally:
            engine.dispose()
        return
    if keep is not None:  # built in place: nothing of it lives in a shared temporary folder
        engine = _create(keep, None)
        t = time.perf_counter()
        queries = build_scale_db(keep, n_messages)
        print(f"  built in {time.perf_counter() - t:.1f} s ({keep.stat().st_size / 1e6:.0f} MB)")
        keep.with_suffix(".queries.json").write_text(json.dumps(queries), encoding="utf-8")
        try:
            yield engine, queries
        finally:
            engine.dispose()
        return
    with database() as (engine, path):
        t = time.perf_counter()
        queries = build_scale_db(path, n_messages)
        print(f"  built in {time.perf_counter() - t:.1f} s ({path.stat().st_size / 1e6:.0f} MB)")
        yield engine, queries


REPEATS = 3
"""Each timing is the best of this many runs: the machine is shared, the code is not noisy."""


def _best_of(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _replay(conn: sqlite3.Connection, statements: list[str]) -> None:
    for sql in statements:
        conn.execute(sql).fetchall()


def scale(n_messages: int, keep: Path | None) -> None:
    print(f"\nTimelineRetriever.retrieve at {n_messages:,} synthetic messages")
    with scale_database(n_messages, keep) as (engine, queries):
        path = engine.url.database
        assert path is not None
        ours_s: list[float] = []
        raw_s: list[float] = []
        session_s: list[float] = []
        per_call: list[int] = []
        raw = sqlite3.connect(path, isolation_level=None)
        raw.execute("BEGIN")
        with session_factory(engine)() as session, session.begin():
            conn = driver_connection(session)
            count = fetch_all(conn, "SELECT count(*) FROM memory_raw_messages")[0][0]
            print(f"  {count:,} messages in the database")
            retriever = TimelineRetriever(session)
            driver = cast(sqlite3.Connection, session.connection().connection.driver_connection)
            for q in queries[:10]:  # warm-up
                retriever.retrieve(q)
            for q in queries:
                # SQLite reports each statement with its bound values filled in; nested ones
                # (FTS5's own, prefixed "--") run inside the outer ones and are left out.
                traced: list[str] = []
                driver.set_trace_callback(traced.append)
                retriever.retrieve(q)
                driver.set_trace_callback(None)
                replay = [sql for sql in traced if not sql.startswith("--")]
                per_call.append(len(replay))
                # Interleaved, so that both sides meet the same machine load.
                ours_s.append(_best_of(partial(retriever.retrieve, q)))
                raw_s.append(_best_of(partial(_replay, raw, replay)))
                # The worst case of a restriction: the one session holding every message.
                session_s.append(_best_of(partial(retriever.retrieve, q, session_ids=["global"])))
        raw.execute("ROLLBACK")
        raw.close()
    ours_sorted, raw_sorted, session_sorted = sorted(ours_s), sorted(raw_s), sorted(session_s)
    print(f"  {len(queries)} queries (LoCoMo questions and 2-character Chinese words)")
    print(f"  statements per retrieve: {statistics.fmean(per_call):.1f}; best of {REPEATS} runs")
    for label, pct in (("p50", 50), ("p95", 95)):
        o, r = _pct(ours_sorted, pct) * 1000, _pct(raw_sorted, pct) * 1000
        print(
            f"  {label}: retrieve {o:.2f} ms, the same SQL via raw sqlite3 {r:.2f} ms,"
            f" ratio {o / r:.2f}"
        )
    ratios = sorted(o / r for o, r in zip(ours_s, raw_s, strict=True))
    print(f"  per-query ratio: p50 {_pct(ratios, 50):.2f}, p95 {_pct(ratios, 95):.2f}")
    print(
        f"  restricted to session global (all messages): p50"
        f" {_pct(session_sorted, 50) * 1000:.2f} ms, p95 {_pct(session_sorted, 95) * 1000:.2f} ms"
    )


# --- main ------------------------------------------------------------------------------------


def machine() -> str:
    return (
        f"machine: {platform.platform()} | {platform.processor() or platform.machine()} | "
        f"python {platform.python_version()} | sqlite {sqlite3.sqlite_version}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-format JSON")
    parser.add_argument("--baseline", action="store_true", help="also run the original's search")
    parser.add_argument("--retriever", action="store_true", help="also the retriever window")
    parser.add_argument("--zh", action="store_true", help="the Chinese set instead of LoCoMo")
    parser.add_argument(
        "--no-context", action="store_true", help="also ours without conversation context"
    )
    parser.add_argument("--scale", type=int, metavar="N", help="time retrieve() at N messages")
    parser.add_argument(
        "--scale-db", type=Path, metavar="PATH", help="keep the --scale database here (reused)"
    )
    parser.add_argument(
        "--url",
        metavar="URL",
        help="also on this PostgreSQL server (postgresql+psycopg://...): both backends side by"
        " side, LoCoMo and the Chinese set",
    )
    parser.add_argument(
        "--agent",
        default=DEFAULT_AGENT,
        help=f"the agent schema used with --url, dropped and recreated (default {DEFAULT_AGENT})",
    )
    parser.add_argument(
        "--show-diff",
        type=int,
        default=0,
        metavar="N",
        help="with --url: list the N questions whose recall@10 differs most",
    )
    args = parser.parse_args(argv)
    print(machine())
    if args.url:
        if not args.data.exists():
            print(f"no data at {args.data}", file=sys.stderr)
            return 2
        compare_backends(
            load_locomo(args.data), args.data.name, args.url, args.agent, args.show_diff
        )
        return 0
    if args.scale:
        scale(args.scale, args.scale_db)
        return 0
    searchers: dict[str, Searcher] = {"ours": ours}
    if args.baseline:
        searchers["baseline"] = baseline
        searchers["plain-or"] = plain_or
    if args.no_context:
        searchers["no-context"] = ours_without_context
    if args.retriever:
        searchers["retriever"] = retriever_window
    if args.zh:
        conv = load_zh(ZH_DATA)
        scores = run([conv], searchers)
        print_scores(
            f"Chinese set {ZH_DATA.name}: {len(conv.messages)} messages, "
            f"{len(conv.questions)} questions",
            scores,
        )
        for name, s in scores.items():
            found = sum(1 for v in s.per_category.values() for x in v if x > 0)
            print(f"  {name}: {found}/{s.questions} questions find their message in the top 10")
        return 0
    if not args.data.exists():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    conversations = load_locomo(args.data)
    n_q = sum(len(c.questions) for c in conversations)
    n_m = sum(len(c.messages) for c in conversations)
    skipped = sum(c.skipped_questions for c in conversations)
    scores = run(conversations, searchers)
    print_scores(
        f"LoCoMo {args.data.name}: {len(conversations)} conversation(s), {n_m} messages, "
        f"{n_q} questions of categories 1-4 ({skipped} without usable evidence skipped)",
        scores,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

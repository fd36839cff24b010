"""LoCoMo-format and Chinese recall sets, and the databases the recall benchmark fills with them.

LoCoMo (Maharana et al., ACL 2024): every turn becomes a raw message (content = the turn text,
timestamp = its session's date plus the turn index in seconds, one session per LoCoMo session,
speaker A -> user, speaker B -> assistant), each conversation in a database of its own; every
question of categories 1-4 is kept with its evidence turns.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Connection, Engine, insert, text

from philont import agents, migrate
from philont.db import agents as registry
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine
from philont.db.models import RawMessage, RawSession
from philont.db.schema import metadata
from philont.domain.kinds import Role
from philont.errors import AgentNotFoundError
from philont.store import Store

HERE = Path(__file__).resolve()
DEV_DATA = HERE.parents[2] / "shared/data/locomo-dev"
"""The development set: four LoCoMo conversations, one file each (see its README)."""
ZH_DATA = HERE.parent / "data" / "zh_recall.json"
CATEGORIES = (1, 2, 3, 4)


# --- data ------------------------------------------------------------------------------------


@dataclass
class Question:
    text: str
    evidence: set[int]
    category: int | str
    conversation: str = ""


@dataclass
class Conversation:
    name: str
    sessions: list[tuple[str, datetime]] = field(default_factory=list)
    # (id, session_id, role, content, timestamp)
    messages: list[tuple[int, str, str, str, datetime]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    skipped_questions: int = 0

    @property
    def now(self) -> datetime:
        """When its questions are asked: right after its last message."""
        last = max((m[4] for m in self.messages), default=datetime(2023, 1, 1, tzinfo=UTC))
        return last + timedelta(seconds=1)


def load_paths(paths: Sequence[Path]) -> list[Conversation]:
    """Every conversation of the given LoCoMo-format files; a folder stands for its ``*.json``
    files (in name order)."""
    files: list[Path] = []
    for path in paths:
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [conv for f in files for conv in load_locomo(f)]


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
            c.questions.append(Question(str(qa["question"]), evidence, int(qa["category"]), name))
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
        c.questions.append(Question(q["question"], {ids[e] for e in q["evidence"]}, q["key"], "zh"))
    return c


def _insert(engine: Engine, conv: Conversation) -> None:
    with engine.begin() as conn:
        _insert_rows(conn, conv)


def _insert_rows(conn: Connection, conv: Conversation) -> None:
    conn.execute(insert(RawSession), [{"id": sid, "started_at": at} for sid, at in conv.sessions])
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
def sqlite_database(conv: Conversation) -> Iterator[Store]:
    with database(conv) as (engine, _path):
        yield Store(engine)


def pg_database(url: str, agent: str) -> Callable[[Conversation], AbstractContextManager[Store]]:
    """Opens ``conv`` as the PostgreSQL agent ``agent`` in the layout at ``url`` (its schema
    from the URL's search_path, migrated to head): the agent is deleted, recreated and filled
    with explicit ids (the bench only reads them), and the tables analysed. It is left in place
    afterwards (for inspection; the next run replaces it)."""

    @contextmanager
    def _open(conv: Conversation) -> Iterator[Store]:
        migrate.upgrade(url)
        store = Store.open(url, agent=agent)
        try:
            with suppress(AgentNotFoundError):
                agents.delete(store, agent)
            agents.create(store, agent)
            with (
                store.engine.connect() as conn,
                registry.scoped(conn, agents.agent_id(store, agent)),
            ):
                _insert_rows(conn, conv)
            with store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
            yield store
        finally:
            store.close()

    return _open

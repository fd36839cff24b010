"""Hostile text — FTS5 syntax, quotes, NUL bytes, 1 MB, every script, emoji — is stored verbatim,
searched without error and found again."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import Engine

from philont import tools
from philont.db.engine import create_engine
from philont.domain.query import build_plan
from philont.memory import Memory
from philont.services.search import SearchService
from philont.store import Store

HOSTILE = [
    "AND",
    "OR NOT",
    "apple AND banana OR NOT cherry",
    "NEAR(apple banana, 2)",
    "apple NEAR/3 banana",
    "NEAR/",
    '"unbalanced double quote',
    'two "quoted" words "',
    "it's o'clock ''",
    "(((deeply nested",
    "closing only)))",
    "( ) ( )) ((",
    "role:user",
    "content:secret role:assistant",
    "{content role}: braces",
    "-minus +plus",
    "prefix* wild*card *",
    "^caret ^start",
    "a:b:c::",
    "*",
    "^",
    ":",
    '"',
    "\x00",
    "nul\x00byte inside the text",
    "trailing nul\x00",
    "tab\tnew\nline\r\ncarriage",
    "Robert'); DROP TABLE memory_raw_messages;--",
    "100% of _under_scores and back\\slashes",
    "SELECT * FROM memory_facts WHERE 1=1",
    "Ελληνικά русский العربية עברית हिन्दी ไทย",
    "中文搜索测试 日本語のテキスト 한국어 텍스트",
    "mixed Berlin柏林 Tokyo東京 Москва",
    "emoji 🧠💾🔥 family 👩‍👩‍👧 flag 🇩🇪",
    "🧠",
    "zero\u200bwidth\u200djoiner",
    "combining é versus é",
    "right-to-left \u202eoverride\u202c text",
    "ﬁligature ＦＵＬＬＷＩＤＴＨ",
    "MATCH 'x' OR rowid=1",
]
IDS = [f"h{i:02d}" for i in range(len(HOSTILE))]
ONE_MB = 1_000_000


def _marker(index: int) -> str:
    return f"zqhostile{index}marker"


@pytest.fixture(scope="module")
def hostile_db(tool_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding every hostile text as a message and a note, bare and with a marker."""
    path = tmp_path_factory.mktemp("hostile") / "memory.sqlite"
    with (
        closing(sqlite3.connect(str(tool_template))) as src,
        closing(sqlite3.connect(str(path))) as dst,
    ):
        src.backup(dst)
    engine = create_engine(path)
    with Store(engine).begin() as mem:
        for i, text in enumerate(HOSTILE):
            mem.timeline.append(text)
            mem.timeline.append(f"{_marker(i)} {text} end")
            mem.notes.add(text, id=f"bare-{i}")
            mem.notes.add(f"{_marker(i)} {text} end", id=f"marked-{i}")
    engine.dispose()
    return path


@pytest.fixture
def engine(hostile_db: Path) -> Iterator[Engine]:
    eng = create_engine(hostile_db)
    yield eng
    eng.dispose()


def _message_ids(mem: Memory, content: str) -> list[int]:
    return [m.id for m in mem.timeline.messages("global") if m.content == content]


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_a_hostile_message_is_stored_verbatim(engine: Engine, text: str) -> None:
    with Store(engine).begin(write=False) as mem:
        assert len(_message_ids(mem, text)) == 1


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_a_hostile_query_runs_and_finds_its_message_when_it_has_words(
    engine: Engine, text: str
) -> None:
    with Store(engine).begin(write=False) as mem:
        (bare,) = _message_ids(mem, text)
        hits = SearchService(mem).messages(text, limit=1_000)
        if build_plan(text) is not None:
            assert bare in [h.id for h in hits]
        else:
            assert hits == []


@pytest.mark.parametrize(("index", "text"), list(enumerate(HOSTILE)), ids=IDS)
def test_a_hostile_message_is_found_by_a_word_stored_beside_it(
    engine: Engine, index: int, text: str
) -> None:
    with Store(engine).begin(write=False) as mem:
        (marked,) = _message_ids(mem, f"{_marker(index)} {text} end")
        search = SearchService(mem)
        assert search.messages(_marker(index), limit=3)[0].id == marked
        assert marked in [h.id for h in search.messages(f"{text} {_marker(index)}", limit=50)]


@pytest.mark.parametrize(("index", "text"), list(enumerate(HOSTILE)), ids=IDS)
def test_a_hostile_note_is_stored_verbatim_and_found_again(
    engine: Engine, index: int, text: str
) -> None:
    with Store(engine).begin(write=False) as mem:
        bare = mem.notes.get(f"bare-{index}")
        assert bare is not None and bare.content == text
        search = SearchService(mem)
        hits = [h.id for h in search.notes(text, limit=100, include_forgotten=True)]
        if build_plan(text) is not None:
            assert f"bare-{index}" in hits
        assert search.notes(_marker(index), limit=1)[0].id == f"marked-{index}"


@pytest.mark.parametrize("text", HOSTILE, ids=IDS)
def test_hostile_tool_queries_succeed_and_hostile_facts_round_trip(
    engine: Engine, text: str
) -> None:
    for name in ("recall_sessions", "search_notes", "search_skills"):
        result = tools.call(name, {"query": text}, db=Store(engine))
        assert result.ok or result.error_code == "invalid_arguments", (name, result.text)
    stored = tools.call(
        "store_fact", {"namespace": "hostile", "key": "text", "value": text}, db=Store(engine)
    )
    assert stored.ok, stored.text
    got = tools.call("get_fact", {"namespace": "hostile", "key": "text"}, db=Store(engine))
    assert got.ok and got.data["value"] == text


def test_a_one_megabyte_message_is_stored_whole_and_found_by_its_first_and_last_words(
    tool_db: Path,
) -> None:
    rng = random.Random(1)
    vocabulary = ["alpha", "bravo", "Ελληνικά", "русский", "中文", "🧠", "role:user"]
    vocabulary += ["NEAR(", "\x00", '"q"', "*"]
    body = " ".join(rng.choices(vocabulary, k=ONE_MB // 5))[:ONE_MB]
    content = f"zqbigstart {body} zqbigend"
    assert len(content) > ONE_MB
    engine = create_engine(tool_db)
    try:
        with Store(engine).begin() as mem:
            record = mem.timeline.append(content)
        with Store(engine).begin(write=False) as mem:
            (stored,) = [m for m in mem.timeline.messages("global") if m.id == record.id]
            assert stored.content == content
            search = SearchService(mem)
            assert [h.id for h in search.messages("zqbigstart", limit=1)] == [record.id]
            assert [h.id for h in search.messages("zqbigend", limit=1)] == [record.id]
            assert search.messages(body[:5_000], limit=1)[0].id == record.id
    finally:
        engine.dispose()

"""Export then import, as a demanding user: any memory built through the services (facts with
history, forgetting, pins, validity windows and events; notes; skills with grades, recipes and
revisions; sessions and messages in any language; actions; calendar events; schedules) comes
back the same in a new SQLite file and in a new PostgreSQL agent, read through the services'
own read models; the export of the imported store is the same file byte for byte, but for the
header's ``exported_at`` (the moment of the export) and, from PostgreSQL, the ``_rowid`` SQLite
keeps for its full-text indexes (PostgreSQL has no rowid)."""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from philont import migrate, transfer
from philont.domain.decay import PIN_SENTINEL
from philont.errors import PhilontError
from philont.memory import Memory
from philont.store import Store
from tests.pg_support import Layout

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_COUNTER = itertools.count()

# Text as people type it: any language, emoji, combining marks, control characters, but no NUL
# (PostgreSQL's text cannot hold one) and no lone surrogate (not Unicode text).
TEXT = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() != "")
WORDS = st.sampled_from(["Berlin", "Miso 🐱", "東京", "naïve café", "x\ty", "دبي", "👍🏽 ok"])
NAMESPACES = st.sampled_from(["user", "project.apollo", "context"])
KEYS = st.sampled_from(["city", "pet_name", "a.b-c"])
JSON_VALUES = st.recursive(
    st.one_of(
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
OFFSETS = st.integers(-400 * 24, 400 * 24).map(lambda h: NOW + timedelta(hours=h))
SKILLS = st.sampled_from(["unzip-archive", "book-train", "write-report"])
ZONES = st.sampled_from(["UTC", "Europe/Berlin", "Asia/Tokyo", "America/New_York"])
RULES = st.sampled_from([None, "FREQ=DAILY;COUNT=3", "FREQ=WEEKLY;BYDAY=MO,WE", "FREQ=MONTHLY"])


# --- operations: each a callable on a unit of work, some refused by the services -------------


def _fact(draw: st.DrawFn) -> Callable[[Memory], object]:
    ns, key, value = draw(NAMESPACES), draw(KEYS), draw(JSON_VALUES)
    confidence = draw(st.floats(0, 1))
    tau = draw(st.sampled_from([None, 0.5, 30.0, 3650.0]))
    kind = draw(st.sampled_from(["state", "windowed", "event"]))
    start, hours = draw(OFFSETS), draw(st.integers(1, 2000))

    def run(mem: Memory) -> object:
        if kind == "event":
            return mem.facts.store(
                ns, key, value, confidence=confidence, decay_tau_days=tau,
                fact_kind="event", occurred_at=start,
            )  # fmt: skip
        window = {"valid_from": start, "valid_until": start + timedelta(hours=hours)}
        return mem.facts.store(
            ns, key, value, confidence=confidence, decay_tau_days=tau,
            **(window if kind == "windowed" else {}),
        )  # fmt: skip

    return run


def _fact_change(draw: st.DrawFn) -> Callable[[Memory], object]:
    what = draw(st.sampled_from(["forget", "unforget", "pin", "unpin", "tau"]))
    which, days = draw(st.integers(0, 50)), draw(st.sampled_from([None, 0.5, 365.0]))

    def run(mem: Memory) -> object:
        found = [
            f
            for ns in NAMESPACES.elements  # type: ignore[attr-defined]
            for key in KEYS.elements  # type: ignore[attr-defined]
            for f in mem.facts.history(ns, key)
        ]
        if not found:
            return None
        fact = found[which % len(found)]
        if what == "tau":
            return mem.facts.set_tau(fact.id, days)
        return getattr(mem.facts, what)(fact.id)

    return run


def _note(draw: st.DrawFn) -> Callable[[Memory], object]:
    content, importance = draw(TEXT | WORDS), draw(st.floats(0, 1))
    note_id = draw(st.none() | st.sampled_from(["n-1", "n-2"]))
    forget = draw(st.booleans())

    def run(mem: Memory) -> object:
        note = (
            mem.notes.upsert(note_id, content, importance=importance)
            if note_id
            else (mem.notes.add(content, importance=importance))
        )
        return mem.notes.forget(note.id) if forget else note

    return run


def _message(draw: st.DrawFn) -> Callable[[Memory], object]:
    content, role = draw(TEXT | WORDS), draw(st.sampled_from(["user", "assistant"]))
    session = draw(st.sampled_from(["global", "laptop", "ファイル"]))
    at = draw(st.none() | OFFSETS)
    end = draw(st.booleans())

    def run(mem: Memory) -> object:
        if session != "global" and mem.timeline.get_session(session) is None:
            mem.timeline.start_session(session)
        message = mem.timeline.append(content, role=role, session_id=session, at=at)
        if end and session != "global":
            mem.timeline.end_session(session)
        return message

    return run


def _action(draw: st.DrawFn) -> Callable[[Memory], object]:
    tool = draw(st.sampled_from(["web_search", "store_fact", "unzip"]))
    params = draw(st.dictionaries(TEXT, JSON_VALUES, max_size=3))
    success, result = draw(st.booleans()), draw(st.none() | TEXT)
    skill = draw(st.none() | SKILLS)

    def run(mem: Memory) -> object:
        return mem.actions.record(
            tool, params=params, success=success, result=result, linked_skill=skill
        )

    return run


def _skill(draw: st.DrawFn) -> Callable[[Memory], object]:
    name, text = draw(SKILLS), draw(TEXT | WORDS)
    keywords = draw(st.lists(WORDS, min_size=1, max_size=3))
    steps = draw(st.lists(TEXT, min_size=1, max_size=3))
    outcomes = draw(st.lists(st.booleans(), max_size=4))
    verification = draw(st.none() | TEXT)

    def run(mem: Memory) -> object:
        if mem.skills.get(name, record_access=False) is None:
            mem.skills.create(name, text, keywords, f"do {text}", when_to_use=text)
            mem.skills.set_recipe(name, steps=steps, verification=verification, tool_policy=[])
        else:
            mem.skills.revise_recipe(name, steps=steps, verification=verification)
        for ok in outcomes:
            mem.skills.record_outcome(name, success=ok)
        return mem.skills.get(name, record_access=False)

    return run


def _event(draw: st.DrawFn) -> Callable[[Memory], object]:
    title, start, zone, rule = draw(TEXT | WORDS), draw(OFFSETS), draw(ZONES), draw(RULES)
    length = draw(st.none() | st.integers(1, 48))

    def run(mem: Memory) -> object:
        ends = None if length is None else start + timedelta(hours=length)
        return mem.calendar.create(title, start, ends_at=ends, timezone=zone, rrule=rule)

    return run


def _schedule(draw: st.DrawFn) -> Callable[[Memory], object]:
    name, message = f"job-{draw(st.integers(0, 3))}", draw(TEXT | WORDS)
    how = draw(st.sampled_from(["interval", "cron", "at"]))
    zone = draw(ZONES)

    def run(mem: Memory) -> object:
        if how == "interval":
            return mem.schedules.create(name, message=message, interval_ms=3_600_000)
        if how == "cron":
            return mem.schedules.create(name, message=message, cron="0 9 * * 1-5", timezone=zone)
        return mem.schedules.create(name, message=message, at=NOW + timedelta(days=2))

    return run


def _access(draw: st.DrawFn) -> Callable[[Memory], object]:
    target, context = draw(st.sampled_from(["fact", "note", "skill"])), draw(st.none() | TEXT)

    def run(mem: Memory) -> object:
        return mem.access.record(target, "n-1", context)

    return run


def _outcome(draw: st.DrawFn) -> Callable[[Memory], object]:
    ok, summary, ms = draw(st.booleans()), draw(TEXT | WORDS), draw(st.integers(0, 10**6))

    def run(mem: Memory) -> object:
        found = mem.schedules.list()
        if not found:
            return None
        return mem.schedules.record_outcome(
            found[0].id, ok=ok, fired_at=NOW, duration_ms=ms, summary=summary
        )

    return run


OPERATIONS = [_fact, _fact, _fact_change, _fact_change, _note, _message, _message, _action]
OPERATIONS += [_skill, _event, _schedule, _outcome, _access]


@st.composite
def programs(draw: st.DrawFn) -> list[Callable[[Memory], object]]:
    kinds = draw(st.lists(st.sampled_from(OPERATIONS), min_size=3, max_size=30))
    return [kind(draw) for kind in kinds]


# --- stores, snapshots, exports ---------------------------------------------------------------


def _clock() -> Callable[[], datetime]:
    """A clock one second later at each reading: ordered, repeatable."""
    ticks = itertools.count()
    return lambda: NOW + timedelta(seconds=next(ticks))


def _build(store: Store, program: list[Callable[[Memory], object]]) -> None:
    """Run each operation in its own unit of work; one the services refuse is skipped (the
    refusal is theirs to test) and leaves nothing behind."""
    for operation in program:
        try:
            with store.begin() as mem:
                operation(mem)
        except PhilontError:
            pass


def _dump_all(records: list[Any]) -> list[Any]:
    return [r.model_dump(mode="json") for r in records]


def snapshot(store: Store) -> dict[str, Any]:
    """Everything the services read back, at one fixed moment (scores depend on it)."""
    with store.begin(write=False, clock=lambda: NOW) as mem:
        facts = {
            f"{ns}/{key}": _dump_all(mem.facts.history(ns, key))
            for ns in NAMESPACES.elements  # type: ignore[attr-defined]
            for key in KEYS.elements  # type: ignore[attr-defined]
        }
        skills = mem.skills.list(10_000, include_deprecated=True)
        return {
            "facts": facts,
            "current": _dump_all(mem.facts.list(None, ranked=True, include_expired=True)),
            "events": _dump_all(mem.facts.events()),
            "notes": _dump_all(mem.notes.list(10_000, include_forgotten=True)),
            "sessions": _dump_all(mem.timeline.list_sessions(limit=10_000)),
            "messages": _dump_all(mem.timeline.query(limit=10_000, order="asc")),
            "actions": _dump_all(mem.actions.query(limit=10_000)),
            "skills": _dump_all(skills),
            "revisions": {s.name: _dump_all(mem.skills.revisions(s.name)) for s in skills},
            "calendar": mem.calendar.list(limit=10_000).model_dump(mode="json"),
            "schedules": _dump_all(mem.schedules.list(limit=10_000)),
            "outcomes": {
                s.id: _dump_all(mem.schedules.outcomes(s.id, limit=10_000))
                for s in mem.schedules.list(limit=10_000)
            },
            "access": {
                kind: _dump_all(mem.access.recent_for(kind, "n-1", limit=10_000))
                for kind in ("fact", "note", "skill")
            },
        }


def exported(db: Path | str, agent: str | None = None) -> list[str]:
    buf = io.StringIO()
    transfer.export(db, buf, agent=agent)
    text = buf.getvalue()
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    assert text.splitlines() == lines  # one row per line, whatever splits the lines
    return lines


def comparable(lines: list[str], *, postgres: bool = False) -> list[str]:
    """The lines without the header's ``exported_at``. ``postgres``: also without ``_rowid``
    and in sorted order (PostgreSQL has no rowid, so it exports each table in primary-key
    order where SQLite exports in rowid order, the order the rows were written)."""
    header = json.loads(lines[0])
    header.pop("exported_at")
    rows = lines[1:]
    if postgres:
        rows = []
        for line in lines[1:]:
            obj = json.loads(line)
            if "row" in obj:
                obj["row"].pop("_rowid", None)
            rows.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
        rows.sort()
    return [json.dumps(header, ensure_ascii=False, separators=(",", ":")), *rows]


def _events(lines: list[str]) -> None:
    """What the example's store held (``--hypothesis-show-statistics``)."""
    rows = [json.loads(line)["row"] for line in lines[1:-1]]
    facts = [r for r in rows if "fact_kind" in r]
    for what, found in (
        ("superseded fact", any(r["superseded_by"] for r in facts)),
        ("forgotten fact", any(r["forgotten_at"] for r in facts)),
        ("validity window", any(r["valid_until"] for r in facts)),
        ("event fact", any(r["fact_kind"] == "event" for r in facts)),
        ("pinned fact", any(r["decay_tau_days"] == PIN_SENTINEL for r in facts)),
        ("recipe revision", any(r.get("revision", 0) > 1 for r in rows)),
        ("calendar rule", any(r.get("rrule") for r in rows)),
        ("schedule", any("cron_expr" in r for r in rows)),
        ("schedule outcome", any("duration_ms" in r for r in rows)),
        ("access", any("accessed_at" in r for r in rows)),
    ):
        if found:
            event(what)


@contextmanager
def _store(db: Path | str, agent: str | None = None) -> Iterator[Store]:
    with Store.open(db, agent=agent, clock=_clock()) as store:
        yield store


@pytest.fixture(scope="module")
def blank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty database at head, copied for each store (migrating each new file costs more
    than the rest of an example)."""
    path = tmp_path_factory.mktemp("blank") / "memory.sqlite"
    migrate.upgrade(path, backup=False)
    return path


def _copy(blank: Path, path: Path) -> Path:
    shutil.copyfile(blank, path)
    path.chmod(0o600)
    return path


HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
SETTINGS = settings(
    max_examples=400 if HEAVY else 40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(program=programs())
def test_an_sqlite_store_comes_back_the_same_and_exports_the_same_bytes(
    program: list[Callable[[Memory], object]], tmp_path: Path, blank: Path
) -> None:
    n = next(_COUNTER)
    source = _copy(blank, tmp_path / f"s{n}.sqlite")
    target = _copy(blank, tmp_path / f"t{n}.sqlite")
    with _store(source) as store:
        _build(store, program)
        before = snapshot(store)
    lines = exported(source)
    _events(lines)
    file = tmp_path / f"e{n}.jsonl"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")

    transfer.import_(target, file)

    with _store(target) as store:
        assert snapshot(store) == before
    assert comparable(exported(target)) == comparable(lines)


@pytest.mark.postgres
@settings(SETTINGS, max_examples=100 if HEAVY else 15)
@given(program=programs())
def test_a_store_moved_through_postgresql_comes_back_the_same(
    program: list[Callable[[Memory], object]], tmp_path: Path, pg_layout: Layout, blank: Path
) -> None:
    n = next(_COUNTER)
    source = _copy(blank, tmp_path / f"s{n}.sqlite")
    back = _copy(blank, tmp_path / f"b{n}.sqlite")
    with _store(source) as store:
        _build(store, program)
        before = snapshot(store)
    lines = exported(source)
    file = tmp_path / f"e{n}.jsonl"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    url, agent = pg_layout.url, pg_layout.new_agent()

    transfer.import_(url, file, agent=agent)

    with Store.open(url, agent=agent, clock=_clock(), upgrade=False) as store:
        assert snapshot(store) == before
    from_pg = exported(url, agent)
    assert comparable(from_pg, postgres=True) == comparable(lines, postgres=True)
    again = tmp_path / f"p{n}.jsonl"
    again.write_text("\n".join(from_pg) + "\n", encoding="utf-8")
    transfer.import_(back, again)
    with _store(back) as store:
        assert snapshot(store) == before
    assert comparable(exported(back), postgres=True) == comparable(lines, postgres=True)

"""Every public service method checks what it is given before it runs (``Service``): text that
cannot be stored, a limit outside the one limit policy, one string where session ids go. Each
refusal is an ``InvalidInputError`` naming the argument, and the database is left unchanged."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont.arguments import _lone_surrogate
from philont.db.backend import SqliteBackend
from philont.domain import json_values
from philont.embed.hashing import HashEmbedder
from philont.errors import InvalidInputError, PhilontError
from philont.learning.verify import CaseBook
from philont.memory import Memory
from philont.services.actions import ActionLog
from philont.services.base import Service
from philont.services.notes import MAX_SEARCH_TOKENS
from philont.services.retriever import TimelineRetriever
from philont.services.search import SearchService
from philont.services.timeline import TimelineService
from philont.store import Store
from tests.support import service_classes

BOTH_BACKENDS = True

NOW = datetime(2026, 6, 14, 12, 0, tzinfo=UTC)
BAD = "bad \ud800 text"  # a lone surrogate: what invalid UTF-8 decoded with surrogateescape gives

Call = Callable[[Memory, Any], object]


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    s = Store.open(target, clock=lambda: NOW)
    with s.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
        mem.notes.add("a note", id="n1")
        mem.timeline.append("hello", session_id="global")
        mem.skills.create("seed-skill", "Seeds", "seed", "1. seed")
        mem.actions.record("get_fact", params={}, success=True, result="ok")
    yield s
    s.close()


def _counts(store: Store) -> tuple[int, ...]:
    with store.begin(write=False) as mem:
        return (
            mem.facts.count(include_expired=True),
            mem.notes.count(include_forgotten=True),
            mem.timeline.count(),
            mem.actions.count(),
            len(mem.skills.list(include_deprecated=True)),
            mem.calendar.count(),
            mem.access.count_for("fact", "1"),
        )


def _refused(store: Store, call: Call, value: object, argument: str) -> None:
    before = _counts(store)
    with pytest.raises(InvalidInputError, match=rf"^{argument}\b") as err, store.begin() as mem:
        call(mem, value)
    assert err.value.message.startswith(argument)
    assert _counts(store) == before


# --- text that cannot be stored ----------------------------------------------------------------


def _skill(mem: Memory, **kwargs: Any) -> object:
    return mem.skills.create("s", "d", "k", "t", **kwargs)


TEXT_CALLS: dict[str, tuple[str, Call]] = {
    "skills.create description": ("description", lambda m, v: m.skills.create("s", v, "k", "t")),
    "skills.create keywords": ("trigger_keywords", lambda m, v: m.skills.create("s", "d", [v], "")),
    "skills.create template": ("action_template", lambda m, v: m.skills.create("s", "d", "k", v)),
    "skills.create when": ("when_to_use", lambda m, v: _skill(m, when_to_use=v)),
    "skills.create source": ("source", lambda m, v: _skill(m, source=v)),
    "skills.update": ("description", lambda m, v: m.skills.update("seed-skill", description=v)),
    "skills.set_recipe": (
        "steps",
        lambda m, v: m.skills.set_recipe("seed-skill", steps=[v], verification="v", tool_policy=[]),
    ),
    "facts.store nested": ("value", lambda m, v: m.facts.store("user", "k", {"a": [1, {"b": v}]})),
    "facts.get_by_id": ("fact_id", lambda m, v: m.facts.get_by_id(v)),
    "facts.forget": ("fact_id", lambda m, v: m.facts.forget(v)),
    "notes.get": ("id", lambda m, v: m.notes.get(v)),
    "notes.forget": ("id", lambda m, v: m.notes.forget(v)),
    "timeline.get_session": ("id", lambda m, v: m.timeline.get_session(v)),
    "timeline.count": ("session_id", lambda m, v: m.timeline.count(session_id=v)),
    "timeline.messages": ("session_id", lambda m, v: m.timeline.messages(v)),
    "actions.record tool": ("tool_name", lambda m, v: m.actions.record(v)),
    "actions.record result": ("result", lambda m, v: m.actions.record("t", result=v)),
    "actions.query": ("tool_name", lambda m, v: m.actions.query(tool_name=v)),
    "actions.count": ("tool_name", lambda m, v: m.actions.count(tool_name=v)),
    "calendar.get": ("id", lambda m, v: m.calendar.get(v)),
    "calendar.find_by_external_ref": ("ref", lambda m, v: m.calendar.find_by_external_ref(v)),
    "access.record": ("target_id", lambda m, v: m.access.record("fact", v)),
    "reflector.run": ("session_id", lambda m, v: m.reflector.run(session_id=v)),
    "prefix.build": ("environment", lambda m, v: m.prefix.build(environment=v)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(TEXT_CALLS))
def test_text_that_cannot_be_stored_is_refused_by_name(store: Store, case: str) -> None:
    argument, call = TEXT_CALLS[case]
    _refused(store, call, BAD, argument)


def test_searched_text_may_hold_anything(store: Store) -> None:
    # A query is searched, never stored: it finds nothing rather than failing.
    with store.begin(write=False) as mem:
        assert mem.notes.search(BAD) == []
        assert mem.search.notes(BAD) == []
        assert mem.recall_trigger.detect(BAD) is None
        assert mem.recall_trigger.recall(f"remember when we {BAD}") is not None
        assert mem.retriever.retrieve(BAD).recall_count == 0


SEARCHED_CALLS: dict[str, Call] = {
    "NoteService.search query": lambda m, v: m.notes.search(v),
    "RecallTrigger.detect message": lambda m, v: m.recall_trigger.detect(v),
    "RecallTrigger.recall message": lambda m, v: m.recall_trigger.recall(v),
    "SearchService.messages query": lambda m, v: m.search.messages(v),
    "SearchService.message_rows query": lambda m, v: m.search.message_rows(v),
    "SearchService.notes query": lambda m, v: m.search.notes(v),
    "SearchService.skills query": lambda m, v: m.search.skills(v),
    "TimelineRetriever.retrieve query": lambda m, v: m.retriever.retrieve(v),
}


def test_every_searched_argument_is_in_the_table() -> None:
    found = {
        f"{cls.__name__}.{name} {argument}"
        for cls in _services()
        for name, fn in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(fn)
        for argument in inspect.signature(fn).parameters
        if argument in cls.searched_only
    }
    assert found == set(SEARCHED_CALLS)


@pytest.mark.parametrize("value", [None, 5, 1.5, b"remember when we", ["remember when we"]])
@pytest.mark.parametrize("case", sorted(SEARCHED_CALLS))
def test_searched_text_must_be_text(store: Store, case: str, value: object) -> None:
    # recall_trigger.detect(None) failed with AttributeError instead of naming the argument
    argument = case.rsplit(" ", 1)[1]
    _refused(store, SEARCHED_CALLS[case], value, argument)


_TEXT = st.text(st.characters(codec=None, min_codepoint=0x20, max_codepoint=0xE000), max_size=8)
_NESTED = st.recursive(
    _TEXT | st.integers() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.frozensets(_TEXT, max_size=3)
        | st.dictionaries(_TEXT, inner, max_size=3)
    ),
    max_leaves=10,
)


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(k)
            yield from _texts(v)
    elif isinstance(value, list | tuple | frozenset):
        for item in value:
            yield from _texts(item)


@given(_NESTED)
def test_a_lone_surrogate_is_found_at_any_depth(value: object) -> None:
    storable = all(not any(0xD800 <= ord(c) <= 0xDFFF for c in t) for t in _texts(value))
    assert (_lone_surrogate(value) is None) == storable


# --- one limit policy ---------------------------------------------------------------------------

T0, T1 = NOW - timedelta(days=1), NOW + timedelta(days=1)
LIMIT_CALLS: dict[str, Call] = {
    "AccessLog.recent_for": lambda m, v: m.access.recent_for("fact", "1", limit=v),
    "ActionLog.query": lambda m, v: m.actions.query(limit=v),
    "ActionLog.recent_failures": lambda m, v: m.actions.recent_failures(limit=v),
    "CalendarService.list": lambda m, v: m.calendar.list(limit=v),
    "CalendarService.between": lambda m, v: m.calendar.between(T0, T1, limit=v),
    "CalendarService.upcoming": lambda m, v: m.calendar.upcoming(limit=v),
    "FactService.list": lambda m, v: m.facts.list("user", limit=v),
    "FactService.forget_candidates": lambda m, v: m.facts.forget_candidates(limit=v),
    "NoteService.list": lambda m, v: m.notes.list(limit=v),
    "NoteService.search": lambda m, v: m.notes.search("note", limit=v),
    "RecallTrigger.recall": lambda m, v: m.recall_trigger.recall("remember when we met", limit=v),
    "ScheduleService.list": lambda m, v: m.schedules.list(limit=v),
    "ScheduleService.due_between": lambda m, v: m.schedules.due_between(T0, T1, limit=v),
    "ScheduleService.claim_due": lambda m, v: m.schedules.claim_due(limit=v),
    "ScheduleService.outcomes": lambda m, v: m.schedules.outcomes("1", limit=v),
    "SearchService.messages": lambda m, v: m.search.messages("hello", limit=v),
    "SearchService.message_rows": lambda m, v: m.search.message_rows("hello", limit=v),
    "SearchService.notes": lambda m, v: m.search.notes("note", limit=v),
    "SearchService.skills": lambda m, v: m.search.skills("seed", limit=v),
    "SkillService.list": lambda m, v: m.skills.list(limit=v),
    "TimelineService.list_sessions": lambda m, v: m.timeline.list_sessions(limit=v),
    "TimelineService.messages": lambda m, v: m.timeline.messages("global", limit=v),
    "TimelineService.query": lambda m, v: m.timeline.query(limit=v),
    "CaseBook.pending_cases": lambda m, v: CaseBook(m).pending_cases(limit=v),
    "CaseBook.verdicts": lambda m, v: CaseBook(m).verdicts(limit=v),
    "EmbeddingIndex.backfill": lambda m, v: m.embeddings.backfill(HashEmbedder(), limit=v),
}


_services = service_classes


def _takes(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` takes the keyword ``name``: as a parameter, or as a key of the TypedDict
    its ``**options: Unpack[...]`` names."""
    for param in inspect.signature(fn).parameters.values():
        if param.name == name and param.kind is not param.VAR_KEYWORD:
            return True
        if param.kind is param.VAR_KEYWORD and str(param.annotation).startswith("Unpack["):
            options = inspect.unwrap(fn).__globals__[
                str(param.annotation).removeprefix("Unpack[")[:-1]
            ]
            if name in options.__annotations__:
                return True
    return False


def test_every_method_that_takes_a_limit_is_in_the_table() -> None:
    found = {
        f"{cls.__name__}.{name}"
        for cls in _services()
        for name, fn in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(fn) and _takes(fn, "limit")
    }
    assert found == set(LIMIT_CALLS)


@pytest.mark.parametrize("bad", [-1, 0, True, 10_001, 1.5, "3"])
@pytest.mark.parametrize("case", sorted(LIMIT_CALLS))
def test_a_limit_outside_the_policy_is_refused_everywhere(
    store: Store, case: str, bad: object
) -> None:
    _refused(store, LIMIT_CALLS[case], bad, "limit")


def test_a_good_limit_is_obeyed_and_none_means_all_where_the_default_is_none(
    store: Store,
) -> None:
    with store.begin() as mem:
        for key in "abcd":
            mem.facts.store("user", key, 1)
        assert len(mem.facts.list("user", limit=2)) == 2
        assert len(mem.facts.list("user", limit=None)) == 5
        with pytest.raises(InvalidInputError, match=r"^limit"):
            mem.notes.list(limit=None)  # type: ignore[arg-type]


# --- other rules by name ----------------------------------------------------------------------


def test_one_string_is_not_a_sequence_of_session_ids(store: Store) -> None:
    _refused(store, lambda m, v: m.timeline.query(session_ids=v), "global", "session_ids")
    with store.begin(write=False) as mem:
        assert len(mem.timeline.query(session_ids=["global"])) == 1


@pytest.mark.parametrize("bad", [2.0, 1.0001, -1.0, float("nan"), True])
def test_a_forget_threshold_outside_0_to_1_is_refused(store: Store, bad: float) -> None:
    _refused(store, lambda m, v: m.facts.sweep(threshold=v), bad, "threshold")
    _refused(store, lambda m, v: m.facts.forget_candidates(threshold=v), bad, "threshold")


def test_an_unknown_access_target_is_refused_by_name(store: Store) -> None:
    _refused(store, lambda m, v: m.access.record(v, "1"), "bogus", "target_type")
    _refused(store, lambda m, v: m.access.count_for(v, "1"), "bogus", "target_type")
    _refused(store, lambda m, v: m.access.recent_for(v, "1"), "bogus", "target_type")


def test_note_search_takes_a_bounded_number_of_distinct_words(store: Store) -> None:
    many = " ".join(f"w{i}" for i in range(MAX_SEARCH_TOKENS + 1))
    _refused(store, lambda m, v: m.notes.search(v), many, "query")
    with store.begin(write=False) as mem:
        assert [n.id for n in mem.notes.search("note " * 20_000)] == ["n1"]  # one distinct word


class _MadeAnew(Mapping[str, object]):
    """A mapping whose one value is made anew at each look-up (a view over other data)."""

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make

    def __getitem__(self, key: str) -> object:
        if key != "k":
            raise KeyError(key)
        return self.make()

    def __iter__(self) -> Iterator[str]:
        return iter(("k",))  # a tuple: no list made here, where a freed one could go

    def __len__(self) -> int:
        return 1


def _made_anew(depth: int, wrap: Callable[[object], object]) -> object:
    value: object = [BAD]
    for _ in range(depth):
        value = _MadeAnew(lambda inner=value: wrap(inner))
    return value


@pytest.mark.parametrize("wrap", [lambda x: [x], lambda x: (x,)], ids=["list", "tuple"])
def test_a_container_freed_during_the_walk_is_not_taken_for_one_walked(
    wrap: Callable[[object], object],
) -> None:
    """The walk knew containers by ``id()``: a list a mapping made anew was freed once walked,
    the next one made at its address was skipped as walked (``_lone_surrogate``) or taken for
    the container around itself (``json_values``), and the lone surrogate in it got through.
    (Where the allocator puts the next one varies with what ran before: several depths.)"""
    for depth in range(1, 7):
        assert _lone_surrogate(_made_anew(depth, wrap)) is not None, depth
        where = "v" + ".k[0]" * depth + "[0]"
        assert json_values.lone_surrogate(_made_anew(depth, wrap), "v") == (
            f"{where}: not valid Unicode text (a lone surrogate at position 4)"
        ), depth


def test_a_value_that_holds_itself_is_checked_once_and_refused_by_its_service(
    store: Store,
) -> None:
    loop: list[object] = ["ok"]
    loop.append(loop)
    assert _lone_surrogate(loop) is None  # walked once, not forever
    loop.append(BAD)
    assert _lone_surrogate(loop) is not None
    _refused(store, lambda m, v: m.facts.store("user", "loop", v), ["ok", {"a": []}, loop], "value")


def test_a_naive_until_next_to_as_of_is_refused_by_name(store: Store) -> None:
    # `min(until, as_of)` ran before `until` was checked: a TypeError escaped.
    naive, aware = datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=UTC)
    _refused(store, lambda m, v: m.search.messages("hello", until=v, as_of=aware), naive, "until")


# --- declared types: text, bools, 64-bit integers; NUL on PostgreSQL -----------------------------

DECLARED_TEXT = sorted(
    case
    for case, (argument, _call) in TEXT_CALLS.items()
    if case not in ("facts.store nested", "skills.create keywords", "skills.set_recipe")
)  # those three hold JSON values, where a number is a value


@pytest.mark.parametrize("value", [5, 1.5, b"bytes", ["text"]])
@pytest.mark.parametrize("case", DECLARED_TEXT)
def test_an_argument_declared_text_must_be_text(store: Store, case: str, value: object) -> None:
    # A number as an id compared as "not found" on SQLite and failed inside PostgreSQL with a
    # driver error (text = integer) that aborted the whole unit of work.
    argument, call = TEXT_CALLS[case]
    _refused(store, call, value, argument)


FOUND_BY = {
    "facts.get_by_id",
    "facts.forget",
    "notes.get",
    "notes.forget",
    "timeline.get_session",
    "timeline.count",
    "timeline.messages",
    "actions.query",
    "actions.count",
    "calendar.get",
    "calendar.find_by_external_ref",
    "reflector.run",
}  # lookups: a NUL is "not found" there on PostgreSQL too (tests/integration/test_nul_lookups.py)
NUL_STORED = sorted(set(DECLARED_TEXT) - {"prefix.build"} - FOUND_BY)  # the prefix stores none


@pytest.mark.parametrize("case", NUL_STORED)
def test_a_nul_is_refused_by_name_on_entry_and_the_unit_of_work_goes_on(
    store: Store, backend: str, case: str
) -> None:
    # On PostgreSQL a NUL in text failed at the flush (or in the driver): the session was
    # rolled back, so the unit of work's earlier writes were lost and its next call failed
    # with PendingRollbackError. Refused on entry, by name, nothing is lost.
    argument, call = TEXT_CALLS[case]
    with store.begin() as mem:
        mem.facts.store("user", "before", 1)
        if backend == "postgres":
            with pytest.raises(InvalidInputError, match=rf"^{argument}: text with a NUL"):
                call(mem, "a\x00b")
        else:
            # SQLite holds a NUL: any text's answer (some calls of the table stop short
            # of what a real call needs once the text is accepted: a TypeError then)
            with contextlib.suppress(PhilontError, TypeError):
                call(mem, "a\x00b")
        mem.facts.store("user", "after", 2)
    with store.begin(write=False) as mem:
        assert {f.key for f in mem.facts.list("user")} >= {"before", "after"}


def test_a_nul_in_unstored_or_searched_text_is_no_refusal(store: Store) -> None:
    with store.begin() as mem:
        assert "a\x00b" in mem.prefix.build(environment="a\x00b").text
        assert mem.notes.search("a\x00b") == []
        assert mem.search.notes("a\x00b") == []
        mem.facts.store("user", "nul", "a\x00b")  # JSON holds it escaped, on both backends
        fact = mem.facts.get("user", "nul")
        assert fact is not None and fact.value == "a\x00b"


BOOL_CALLS: dict[str, Call] = {
    "facts.get include_expired": lambda m, v: m.facts.get("user", "city", include_expired=v),
    "facts.list ranked": lambda m, v: m.facts.list("user", ranked=v),
    "notes.list include_forgotten": lambda m, v: m.notes.list(include_forgotten=v),
    "skills.list callable_only": lambda m, v: m.skills.list(callable_only=v),
    "actions.query success": lambda m, v: m.actions.query(success=v),
}


@pytest.mark.parametrize("value", ["no", 0, 1, None])
@pytest.mark.parametrize("case", sorted(BOOL_CALLS))
def test_an_argument_declared_bool_must_be_true_or_false(
    store: Store, case: str, value: object
) -> None:
    # include_expired="no" was truthy: it included expired facts without a word.
    if value is None and case == "actions.query success":
        return  # None means "either" there
    _refused(store, BOOL_CALLS[case], value, case.rsplit(" ", 1)[1])


INT_CALLS: dict[str, Call] = {
    "timeline.list_sessions offset": lambda m, v: m.timeline.list_sessions(offset=v),
    "actions.link_skill action_ids": lambda m, v: m.actions.link_skill([v], "seed-skill"),
    "search.messages exclude_ids": lambda m, v: m.search.messages("hello", exclude_ids=[v]),
    "retriever.retrieve recent_limit": lambda m, v: m.retriever.retrieve("x", recent_limit=v),
}


class _Unbound:
    """Services bound to no unit of work: enough to run the checks on entry, which come
    before anything touches a database (a call that passed them would fail here)."""

    backend = SqliteBackend()

    def __getattr__(self, name: str) -> Service:
        services = {
            "timeline": TimelineService,
            "actions": ActionLog,
            "search": SearchService,
            "retriever": TimelineRetriever,
        }
        return services[name](self)  # type: ignore[arg-type]


_CHECK_ONLY: Any = _Unbound()


@given(
    st.one_of(
        st.integers(min_value=2**63),
        st.integers(max_value=-(2**63) - 1),
        st.booleans(),
        st.floats(allow_nan=False),
        st.text(max_size=3),
    )
)
def test_an_integer_no_64_bit_column_holds_is_refused_by_name(value: object) -> None:
    # An offset or an action id of 2**63 failed as OverflowError (SQLite) or a driver error
    # (PostgreSQL); now every argument declared int is checked on entry.
    for case, call in INT_CALLS.items():
        with pytest.raises(InvalidInputError, match=rf"^{case.rsplit(' ', 1)[1]}: "):
            call(_CHECK_ONLY, value)


def test_link_skill_takes_any_number_of_ids(store: Store) -> None:
    # More than 65,535 ids failed on PostgreSQL (one parameter each in one statement).
    with store.begin() as mem:
        first = mem.actions.query()[0].id
        assert mem.actions.link_skill([first, *range(10**6, 10**6 + 70_000)], "seed") == 1
        assert mem.actions.query(linked_skill="seed")[0].id == first


CLASS_CALLS: dict[str, Call] = {
    "record": lambda m, v: m.facts.score(v),
    "limits": lambda m, v: m.prefix.build(limits=v),
    "after": lambda m, v: m.skills.apply_disuse(after=v),
    "around": lambda m, v: m.retriever.retrieve("x", around=v),
    "since": lambda m, v: m.actions.query(since=v),
}


@pytest.mark.parametrize("value", ["x", 5, {"facts": 1}])
@pytest.mark.parametrize("argument", sorted(CLASS_CALLS))
def test_an_argument_declared_as_a_class_must_be_one(
    store: Store, argument: str, value: object
) -> None:
    # facts.score("x") and prefix.build(limits="x") raised AttributeError; retrieve(around=
    # "2020") was accepted without a word whenever recall did not run.
    _refused(store, CLASS_CALLS[argument], value, argument)


# --- typed **options --------------------------------------------------------------------------

OPTION_CALLS: dict[str, Callable[[Memory, dict[str, Any]], object]] = {
    # a method whose ``**options: Unpack[...]`` are checked: a good call, given extra keys
    "SearchService.messages": lambda m, extra: m.search.messages("hello", **extra),
    "ScheduleService.create": lambda m, extra: m.schedules.create(
        "job", message="m", interval_ms=60_000, **extra
    ),
    "ScheduleService.replace": lambda m, extra: m.schedules.replace(
        "job", message="m", interval_ms=60_000, **extra
    ),
}


def test_every_method_with_typed_options_is_in_the_table() -> None:
    found = {
        f"{cls.__name__}.{name}"
        for cls in _services()
        for name, fn in vars(cls).items()
        if not name.startswith("_")
        and inspect.isfunction(fn)
        and any(
            p.kind is p.VAR_KEYWORD and str(p.annotation).startswith("Unpack[")
            for p in inspect.signature(fn).parameters.values()
        )
    }
    assert found == set(OPTION_CALLS)


@pytest.mark.parametrize("case", sorted(OPTION_CALLS))
def test_a_key_the_typed_options_do_not_declare_is_refused_naming_the_method(
    store: Store, case: str
) -> None:
    """As Python refuses an unknown keyword of any method (``facts.store(bogus=1)``), naming
    the method called; it was a TypeError of an inner function (``new_row() got ...``)."""
    with store.begin() as mem:
        with pytest.raises(TypeError, match=rf"^{case}\(\) got an unexpected keyword argument"):
            OPTION_CALLS[case](mem, {"bogus": 1})
        assert mem.schedules.get("job") is None  # nothing was written
        OPTION_CALLS[case](mem, {})  # the unit of work goes on, and the good call runs

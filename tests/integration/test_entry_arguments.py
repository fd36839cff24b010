"""The entry points that open a database or begin a unit of work (Store, AsyncStore,
Memory.open, shared(), philont.migrate, philont.agents) refuse an argument of the wrong kind
with an InvalidInputError naming it, before anything is opened, begun or created: no file named
``5`` from ``Store.open(5)``, no busy handler switched off by ``busy_timeout_ms=-1``, no
writing unit begun by a truthy ``write="no"``, no ``TypeError`` from ``store.run(5)``."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import philont.migrate
from philont import agents
from philont.aio import AsyncStore, create_async_engine
from philont.db.engine import create_engine, resolve_url
from philont.embed import HashEmbedder, backfill
from philont.errors import InvalidInputError
from philont.learning import Consolidator, Learner
from philont.llm import ScriptedModel
from philont.memory import Memory
from philont.store import Store, close_shared, shared
from philont.transfer import export, import_

# Values of every kind but the one an argument takes (each test filters out what is valid).
ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just(object()),
)
NOT_A_TARGET = ANYTHING.filter(lambda v: v is not None and not isinstance(v, str))
NOT_A_FLAG = ANYTHING.filter(lambda v: not isinstance(v, bool))
NOT_A_TIMEOUT = ANYTHING.filter(
    lambda v: v is not None and not (type(v) is int and 0 <= v <= 2**31 - 1)
)
NOT_TEXT = ANYTHING.filter(lambda v: v is not None and not isinstance(v, str))
NOT_CALLABLE = ANYTHING.filter(lambda v: not callable(v))
MODEL = ScriptedModel([])
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working directory, checked to stay empty (``Store.open(5)`` made ``./5``)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work
    close_shared()
    assert os.listdir(work) == []


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "memory.sqlite") as s:
        yield s


def _refused(call: Callable[[], object], argument: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        call()
    assert str(raised.value).startswith(f"{argument}: "), str(raised.value)
    assert raised.value.details["argument"] == argument


OPENERS: dict[str, Callable[..., object]] = {
    "Store.open": Store.open,
    "Memory.open": Memory.open,
    "shared": shared,
    "AsyncStore.open": lambda *a, **k: asyncio.run(AsyncStore.open(*a, **k)),
    "create_async_engine": create_async_engine,
    "migrate.upgrade": philont.migrate.upgrade,
    "migrate.status": philont.migrate.status,
    "migrate.check": philont.migrate.check,
    # resolve_url is the one gate: every opener of an engine or a file passes it
    "create_engine": create_engine,
    "resolve_url": resolve_url,
    "export": lambda target, **k: export(target, io.StringIO(), **k),
}
TIMED = ("Store.open", "Memory.open", "shared", "AsyncStore.open", "create_async_engine")
FLAGGED = {"Store.open": "upgrade", "AsyncStore.open": "upgrade", "Memory.open": "write"}
FLAGGED["migrate.upgrade"] = "backup"


@pytest.mark.parametrize("opener", list(OPENERS))
@SETTINGS
@given(target=NOT_A_TARGET)
def test_a_target_that_is_no_path_or_url_is_refused_by_name(
    workdir: Path, opener: str, target: object
) -> None:
    _refused(lambda: OPENERS[opener](target), "target")


@pytest.mark.parametrize("opener", [*TIMED, "create_engine"])
@SETTINGS
@given(value=NOT_A_TIMEOUT)
def test_a_busy_timeout_is_whole_milliseconds_sqlite_takes(
    workdir: Path, opener: str, value: object
) -> None:
    _refused(lambda: OPENERS[opener]("m.sqlite", busy_timeout_ms=value), "busy_timeout_ms")


@pytest.mark.parametrize(("opener", "flag"), list(FLAGGED.items()))
@SETTINGS
@given(value=NOT_A_FLAG)
def test_a_flag_is_true_or_false(workdir: Path, opener: str, flag: str, value: object) -> None:
    _refused(lambda: OPENERS[opener]("m.sqlite", **{flag: value}), flag)


@pytest.mark.parametrize("opener", TIMED[:-1])
@SETTINGS
@given(value=NOT_TEXT)
def test_an_agent_is_text(workdir: Path, opener: str, value: object) -> None:
    _refused(lambda: OPENERS[opener]("m.sqlite", agent=value), "agent")


@SETTINGS
@given(value=ANYTHING.filter(lambda v: v is not None))
def test_an_embedder_is_an_embedder(workdir: Path, value: object) -> None:
    _refused(lambda: Store.open("m.sqlite", embedder=value), "embedder")


@SETTINGS
@given(value=ANYTHING)
def test_from_engine_takes_an_engine(value: object) -> None:
    _refused(lambda: Store.from_engine(value), "engine")  # type: ignore[arg-type]
    _refused(lambda: asyncio.run(AsyncStore.from_engine(value)), "engine")  # type: ignore[arg-type]


UNITS: dict[str, tuple[str, Callable[[Store, Any], object]]] = {
    "begin write": ("write", lambda s, v: s.begin(write=v)),
    "begin clock": ("clock", lambda s, v: s.begin(clock=v)),
    "begin agent": ("agent", lambda s, v: s.begin(agent=v)),
    "run work": ("work", lambda s, v: s.run(v)),
    "run write": ("write", lambda s, v: s.run(len, write=v)),
    "run attempts": ("attempts", lambda s, v: s.run(len, attempts=v)),
    "join bind": ("bind", lambda s, v: s.join(v)),
    "agents.count store": ("store", lambda s, v: agents.count(v)),
    "Consolidator.for_store store": ("store", lambda s, v: Consolidator.for_store(v, MODEL)),
    "Consolidator units": ("units", lambda s, v: Consolidator(v, MODEL)),
    "Consolidator clock": ("clock", lambda s, v: Consolidator(s.begin, MODEL, clock=v)),
    "Learner mem": ("mem", lambda s, v: Learner(v, MODEL)),
    "backfill target": ("target", lambda s, v: backfill(v, HashEmbedder(64))),
    "backfill embedder": ("embedder", lambda s, v: backfill(s, v)),
}
VALID: dict[str, Callable[[object], bool]] = {
    "write": lambda v: isinstance(v, bool),
    "clock": callable,
    "agent": lambda v: v is None or isinstance(v, str),
    "work": callable,
    "attempts": lambda v: type(v) is int and 1 <= v <= 100,
    "bind": lambda v: False,
    "store": lambda v: False,
    "target": callable,
    "units": callable,
    "mem": lambda v: False,
    "embedder": lambda v: False,
}


@pytest.mark.parametrize("case", list(UNITS))
@SETTINGS
@given(value=ANYTHING)
def test_a_unit_of_work_refuses_a_bad_argument_before_it_begins(
    store: Store, case: str, value: object
) -> None:
    argument, call = UNITS[case]
    valid = VALID[argument] if case != "begin clock" else lambda v: v is None or callable(v)
    if valid(value):
        return
    _refused(lambda: call(store, value), argument)
    with store.begin() as mem:  # nothing was left open: the next unit of work begins at once
        assert mem.facts.count() == 0


def test_a_store_given_as_units_of_work_is_refused_with_the_way_to_use_it(store: Store) -> None:
    refused = r"^units: .*Consolidator.for_store\(store, model\)"
    with pytest.raises(InvalidInputError, match=refused):
        Consolidator(store, MODEL)  # type: ignore[arg-type]


def test_async_run_refuses_what_it_cannot_call(tmp_path: Path) -> None:
    async def main() -> None:
        astore = await AsyncStore.open(tmp_path / "m.sqlite")
        try:
            with pytest.raises(InvalidInputError, match=r"^work: must be callable, got int"):
                await astore.run(5)  # type: ignore[arg-type]
            with pytest.raises(InvalidInputError, match=r"^write: must be True or False"):
                await astore.run(len, write="no")  # type: ignore[arg-type]
            with pytest.raises(InvalidInputError, match=r"^session: must be AsyncSession"):
                await astore.run(len, session="s")  # type: ignore[arg-type]
            assert await astore.run(lambda mem: mem.facts.count()) == 0
        finally:
            await astore.close()

    asyncio.run(main())


def test_facts_list_lists_every_namespace_without_one(store: Store) -> None:
    with store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
        mem.facts.store("project.x", "lang", "Python")
        assert [f.key for f in mem.facts.list()] == ["lang", "city"]
        assert len(mem.facts.list()) == mem.facts.count()


@SETTINGS
@given(out=ANYTHING.filter(lambda v: not isinstance(v, str)))
def test_export_refuses_what_it_cannot_write_to_by_name(store: Store, out: object) -> None:
    _refused(lambda: export(store.path, out), "out")


@SETTINGS
@given(src=ANYTHING.filter(lambda v: not isinstance(v, str)))
def test_import_refuses_what_it_cannot_read_from_by_name(store: Store, src: object) -> None:
    _refused(lambda: import_(store.path, src), "src")  # type: ignore[arg-type]


def test_import_reads_a_path_given_as_text_as_export_writes_one(
    store: Store, tmp_path: Path
) -> None:
    with store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    exported = tmp_path / "out.jsonl"
    export(store.path, str(exported))
    target = tmp_path / "copy.sqlite"
    # was AttributeError: 'str' object has no attribute 'seekable'
    report = import_(target, str(exported))
    assert report.inserted["memory_facts"] == 1
    copy = Store.open(target)
    with copy.begin() as mem:
        assert mem.facts.get("user", "city").value == "Berlin"  # type: ignore[union-attr]
    copy.close()


def test_export_writes_to_a_path_given_as_text(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    report = export(store.path, str(target))  # was AttributeError: 'str' object has no 'write'
    assert report.path == target
    assert target.read_text().count("\n") == sum(report.rows.values()) + 2

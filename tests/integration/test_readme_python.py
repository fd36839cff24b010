"""Every ```python block of README.md and docs/*.md runs as written (on a new SQLite file in a
temporary directory; only its paths, a model it names and PostgreSQL agent names are replaced)
and does what the text around it says, or is a fragment of a host's own file whose whole is run
by the test named for it. A block added to the docs without a runner here fails the first test,
so an example cannot rot unnoticed (examples had: ``Store.from_engine(engine)`` on a new file)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from philont import Store, tools
from philont.errors import EmbedderMismatchError
from philont.store import close_shared

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^( *)```python\n(.*?)^ *```", re.M | re.S)


def _blocks() -> list[tuple[str, str]]:
    """(where, code) of every python block, its indentation (inside a list item) removed."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            indent = len(m.group(1))
            code = "\n".join(line[indent:] for line in m.group(2).splitlines())
            line = text.count("\n", 0, m.start()) + 1
            found.append((f"{doc.relative_to(ROOT)}:{line}", code + "\n"))
    return found


BLOCKS = _blocks()

FRAGMENTS = {
    # marker: where the whole of this fragment of a host's file runs
    "def run_migrations_online():": "tests/host_app/env.py (tests/integration/test_host_app.py)",
    "philont.migrate.upgrade(op.get_bind())": "tests/host_app/first_revision.py (same test)",
    "store = Store.from_engine(engine, upgrade=True)": (
        "tests/integration/test_readme_host_example.py"
    ),
}


def _block(marker: str) -> str:
    (code,) = [code for _where, code in BLOCKS if marker in code]
    return code


def _replace(code: str, old: str, new: str) -> str:
    assert old in code, f"the block no longer holds {old!r}: update its runner"
    return code.replace(old, new)


# --- the runners: each execs its block and checks what the text around it says ----------------


def _using_it_from_python(code: str, tmp_path: Path) -> None:
    ns: dict[str, Any] = {}
    exec(code, ns)
    assert [h.content for h in ns["hits"]] == ["We moved to Berlin last spring."]
    assert ns["context"].messages[-1].content == "We moved to Berlin last spring."
    assert 'user.home.city = "Berlin"' in ns["prefix"]
    with Store.open("memory.sqlite") as store, store.begin(write=False) as mem:
        fact = mem.facts.get("user.home", "city")
        assert fact is not None and fact.value == "Berlin"
        assert [f.value for f in mem.facts.history("user.home", "city")] == ["Berlin"]


def _fastapi_lifespan(code: str, tmp_path: Path) -> None:
    """FastAPI is not installed here: a stand-in with its two members the block uses."""

    class FastAPI:
        def __init__(self, lifespan: Callable[[Any], Any]) -> None:
            self.lifespan = lifespan
            self.state = types.SimpleNamespace()
            self.routes: dict[str, Callable[..., Any]] = {}

        def post(self, path: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
            def register(fn: Callable[..., Any]) -> Callable[..., Any]:
                self.routes[path] = fn
                return fn

            return register

    stub = types.ModuleType("fastapi")
    stub.FastAPI = FastAPI  # type: ignore[attr-defined]
    saved = sys.modules.get("fastapi")
    sys.modules["fastapi"] = stub
    try:
        ns: dict[str, Any] = {}
        exec(code, ns)
    finally:
        if saved is None:
            del sys.modules["fastapi"]
        else:
            sys.modules["fastapi"] = saved
    app = ns["app"]

    async def serve() -> list[dict[str, Any]]:
        async with app.lifespan(app):
            first = await app.routes["/turn"]("We moved to Berlin.")
            await app.state.memory.call(
                "store_fact", {"namespace": "user.home", "key": "city", "value": "Berlin"}
            )
            return [first, await app.routes["/turn"]("Where do we live?")]

    first, second = asyncio.run(serve())
    assert first["prefix"].startswith("[Memory") and first["recalled"] == 0
    assert first["city"].startswith("error (fact_not_found)")
    assert second["city"].startswith('"Berlin" [state')
    with Store.open("memory.sqlite") as store, store.begin(write=False) as mem:
        assert mem.timeline.count() == 2


def _scripted(tmp_path: Path) -> Path:
    """A model script answering the loop's tasks (what `scripted:FILE` reads)."""
    fact = {"action": "store_fact", "namespace": "user", "key": "city", "value": "Berlin"}
    script = {"extract": json.dumps([fact]), "reflect": "[]", "summarize": "[]"}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def _store_with_session() -> Store:
    store = Store.open("memory.sqlite")
    with store.begin() as mem:
        mem.timeline.start_session("s1")
        mem.timeline.append("We live in Berlin now.", session_id="s1")
        mem.timeline.append("Noted: Berlin.", session_id="s1", role="assistant")
    return store


def _learned_city(store: Store) -> object:
    with store.begin(write=False) as mem:
        fact = mem.facts.get("user", "city")
        return None if fact is None else fact.value


def _store_run(code: str, tmp_path: Path) -> None:
    from philont.learning import Learner
    from philont.llm import model_from_spec

    store = _store_with_session()
    model = model_from_spec(f"scripted:{_scripted(tmp_path)}")
    ns: dict[str, Any] = {"store": store, "model": model, "Learner": Learner}
    try:
        exec(code, ns)
        assert [w.outcome for w in ns["report"].writes] == ["stored"]
        assert _learned_city(store) == "Berlin"
    finally:
        store.close()


def _learning(code: str, tmp_path: Path) -> None:
    code = _replace(code, '"openai:gpt-4o-mini"', repr(f"scripted:{_scripted(tmp_path)}"))
    store = _store_with_session()
    ns: dict[str, Any] = {"store": store}
    try:
        exec(code, ns)
        assert ns["report"].problem is None and ns["report"].tag == "s1"
        assert _learned_city(store) == "Berlin"
    finally:
        store.close()


def _alembic_filters(code: str, tmp_path: Path) -> None:
    from sqlalchemy.orm import DeclarativeBase

    import philont.migrate

    class Base(DeclarativeBase):
        pass

    given: dict[str, Any] = {}
    context = types.SimpleNamespace(configure=lambda **kw: given.update(kw))
    exec(code, {"context": context, "Base": Base, "connection": object()})
    assert given["include_name"] is philont.migrate.host_include_name
    assert given["include_object"] is philont.migrate.host_include_object
    assert given["include_name"]("memory_facts", "table", {}) is False
    assert given["include_name"]("customers", "table", {}) is True


def _postgres(code: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    layout = request.getfixturevalue("pg_layout")
    new_agent = request.getfixturevalue("pg_agent_name")
    url = layout.url.render_as_string(hide_password=False)
    code = _replace(code, '"postgresql+psycopg://app:pw@host/db"', repr(url))
    alice, bob = new_agent(), new_agent()
    code = _replace(_replace(code, '"alice"', repr(alice)), '"bob"', repr(bob))
    ns: dict[str, Any] = {"Store": Store, "url": url}
    try:
        exec(code, ns)  # holds its own assert: bob does not see alice's fact
        with ns["alice"].begin() as mem:
            fact = mem.facts.get("user", "city")
            assert fact is not None and fact.value == "Berlin"
    finally:
        for name in ("store", "alice"):
            if name in ns:
                ns[name].close()


def _tools(code: str, tmp_path: Path) -> None:
    assert os.environ["MEMORY_DB_PATH"] == str(tmp_path / "tools.sqlite")  # the test's
    try:
        ns: dict[str, Any] = {}
        exec(code, ns)
        result = ns["result"]
        assert (result.ok, result.error_code) == (True, None)
        assert result.text.startswith("Stored user.diet [state")
        assert result.data["value"] == "vegetarian"
        assert {t["type"] for t in tools.openai_tools()} == {"function"}
        assert set(tools.openai_tools()[0]["function"]) == {"name", "description", "parameters"}
        assert set(tools.anthropic_tools()[0]) == {"name", "description", "input_schema"}
    finally:
        close_shared()


def _model_dir(tmp_path: Path) -> str:
    from tests.embed.test_adapters import _tiny_model2vec

    return str(_tiny_model2vec(tmp_path / "potion-base-8M"))


def _embed_readme(code: str, tmp_path: Path) -> None:
    from philont.embed import HashEmbedder

    code = _replace(code, '"/models/potion-base-8M"', repr(_model_dir(tmp_path)))
    with Store.open("memory.sqlite") as store, store.begin() as mem:
        mem.timeline.append("deploy the server")
    ns: dict[str, Any] = {"Store": Store}
    exec(code, ns)
    try:
        with ns["store"].begin(write=False) as mem:
            assert [h.content for h in mem.search.messages("deploy server")] == [
                "deploy the server"
            ]
    finally:
        ns["store"].close()
    with pytest.raises(EmbedderMismatchError):  # "another model's vectors: refused"
        Store.open("memory.sqlite", embedder=HashEmbedder(16))


def _embed_docs(code: str, tmp_path: Path) -> None:
    code = _replace(code, '"/models/potion-base-8M"', repr(_model_dir(tmp_path)))
    with Store.open("memory.sqlite") as store, store.begin() as mem:
        mem.timeline.append("we plan to deploy the server this weekend")
    ns: dict[str, Any] = {}
    exec(code, ns)
    try:
        assert [h.content for h in ns["hits"]] == ["we plan to deploy the server this weekend"]
        with ns["store"].begin(write=False) as mem:
            mem.search.messages("what did we plan for the weekend?")
            (report,) = mem.search.reports.values()
            assert report.unembedded == 0 and "keyword" in report.answered
    finally:
        ns["store"].close()


def _host_conftest(code: str, tmp_path: Path) -> None:
    (tmp_path / "test_host.py").write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         str(tmp_path / "test_host.py")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


RUNNERS: dict[str, Callable[..., None]] = {
    # marker (text only that block holds): its runner
    "prefix = mem.prefix.build().text": _using_it_from_python,
    "app = FastAPI(lifespan=lifespan)": _fastapi_lifespan,
    "report = store.run(lambda mem:": _store_run,
    'model = model_from_spec("openai:gpt-4o-mini")': _learning,
    "include_name=philont.migrate.host_include_name": _alembic_filters,
    'store.begin(agent="bob")': _postgres,
    'result = tools.call("store_fact"': _tools,
    "pip install 'philont[model2vec]'": _embed_readme,
    "mem.search.reports": _embed_docs,
    "from philont.testing.sessions import rollback_session": _host_conftest,
}


def test_every_python_block_is_run_here_or_named_as_a_fragment() -> None:
    markers = [*RUNNERS, *FRAGMENTS]
    assert len(BLOCKS) >= 13
    for where, code in BLOCKS:
        held = [m for m in markers if m in code]
        assert len(held) == 1, f"{where}: no runner in {__name__} (or more than one): {held}"
    for marker in markers:
        assert sum(marker in code for _w, code in BLOCKS) == 1, f"{marker!r} is in no block"
    for covered_by in FRAGMENTS.values():
        assert (ROOT / covered_by.split()[0]).is_file(), covered_by


@pytest.mark.parametrize("marker", list(RUNNERS))
def test_the_block_runs_and_does_what_its_text_says(
    marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PHILONT_AGENT", raising=False)
    monkeypatch.setenv("MEMORY_DB_PATH", str(tmp_path / "tools.sqlite"))  # tools.call's default
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a model on disk, never fetched
    runner = RUNNERS[marker]
    if runner is _postgres:
        runner(_block(marker), tmp_path, request)
    else:
        runner(_block(marker), tmp_path)

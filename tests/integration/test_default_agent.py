"""``$PHILONT_AGENT`` is read in one place (``philont.settings.default_agent``): every path
that serves the default agent on PostgreSQL takes and refuses the same values. Each read it
itself before, with its own rules: a blank value was ``agent_required`` for a Store and the MCP
server but a plain ``invalid_input`` for an export or import, a bad name was refused naming an
``agent`` argument nobody passed (the MCP server even started with it and then refused every
tool call), and ``alice\\n`` was an agent name everywhere (``$`` matched before the newline)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy.engine import URL
from typer.testing import CliRunner

from philont import agents, settings, transfer
from philont.cli.root import app
from philont.db.agents import check_name
from philont.errors import AgentRequiredError, InvalidInputError
from philont.store import Store
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

Path_ = Callable[[URL, Path], object]


def _begin(url: URL, dump: Path) -> object:
    with Store.open(url, upgrade=False) as store, store.begin() as mem:
        return mem.facts.get("user", "city")


def _export(url: URL, dump: Path) -> object:
    return transfer.export(url, io.StringIO())


def _import(url: URL, dump: Path) -> object:
    return transfer.import_(url, dump)


def _mcp(url: URL, dump: Path) -> object:
    pytest.importorskip("mcp")
    from philont.mcp.server import _open

    _open(url, None, False).close()
    return None


def _cli(url: URL, dump: Path) -> object:
    """The command line, whose open_store reads the default agent; its refusal re-raised."""
    done = CliRunner().invoke(app, ["stats", "--db", url.render_as_string(False)])
    assert done.exit_code == 1, done.output
    raise _Printed(done.output.strip())


class _Printed(Exception):
    """What the command line printed for its error."""


PATHS: dict[str, Path_] = {
    "Store.begin": _begin,
    "export": _export,
    "import": _import,
    "mcp": _mcp,
    "cli": _cli,
}
BLANK = ["", " ", "\t \n"]
INVALID = {
    "space": "Bad Name",
    "upper": "Alice",
    "too long": "x" * 64,
    "leading dash": "-x",
    "inner newline": "ali\nce",
    "invalid UTF-8": "a\udcffb",  # the bytes b"a\xffb" as os.environ gives them
}
# (NUL cannot be in the environment: POSIX's strings end at it; os.environ refuses it.)


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export file of an SQLite memory, for the import path."""
    folder = tmp_path_factory.mktemp("default_agent")
    with Store.open(folder / "m.sqlite") as store, store.begin() as mem:
        mem.facts.store("user", "city", "Lyon")
    transfer.export(folder / "m.sqlite", folder / "dump.jsonl")
    return folder / "dump.jsonl"


def _agent_count(url: URL) -> int:
    with Store.open(url, upgrade=False) as store:
        return agents.count(store)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value", BLANK)
def test_a_blank_value_is_no_agent_on_every_path(
    pg_layout: Layout, dump: Path, monkeypatch: pytest.MonkeyPatch, path: str, value: str
) -> None:
    monkeypatch.setenv(settings.AGENT_ENV, value)
    before = _agent_count(pg_layout.url)
    if path == "cli":
        with pytest.raises(_Printed, match=r"^error \(agent_required\): "):
            PATHS[path](pg_layout.url, dump)
    else:
        with pytest.raises(AgentRequiredError):
            PATHS[path](pg_layout.url, dump)
    assert _agent_count(pg_layout.url) == before


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("value", INVALID.values(), ids=INVALID.keys())
def test_a_bad_name_is_refused_alike_on_every_path(
    pg_layout: Layout, dump: Path, monkeypatch: pytest.MonkeyPatch, path: str, value: str
) -> None:
    monkeypatch.setenv(settings.AGENT_ENV, value)
    with pytest.raises(InvalidInputError) as expected:  # the refusal of the name, as such
        check_name(value.strip(), f"${settings.AGENT_ENV}")
    message = str(expected.value)
    assert message.startswith(f"${settings.AGENT_ENV}: {value.strip()!r} is no agent name")
    before = _agent_count(pg_layout.url)
    if path == "cli":
        with pytest.raises(_Printed) as printed:
            PATHS[path](pg_layout.url, dump)
        assert " ".join(str(printed.value).split()) == " ".join(
            f"error (invalid_input): {message}".split()
        )
    else:
        with pytest.raises(InvalidInputError) as raised:
            PATHS[path](pg_layout.url, dump)
        assert type(raised.value) is InvalidInputError
        assert str(raised.value) == message
        assert raised.value.details["argument"] == f"${settings.AGENT_ENV}"
    assert _agent_count(pg_layout.url) == before


@pytest.mark.parametrize("path", PATHS)
def test_a_name_between_spaces_is_that_agent_on_every_path(
    pg_layout: Layout, dump: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    name = pg_layout.new_agent()
    with Store.open(pg_layout.url, upgrade=False) as store:
        agents.create(store, name)
    monkeypatch.setenv(settings.AGENT_ENV, f" {name}\n")
    if path == "cli":
        done = CliRunner().invoke(app, ["stats", "--db", pg_layout.url.render_as_string(False)])
        assert done.exit_code == 0, done.output
    else:
        PATHS[path](pg_layout.url, dump)
    with Store.open(pg_layout.url, upgrade=False) as store:
        assert agents.list_agents(store, prefix=name) == [agents.require(store, name)]


def _open_store(url: URL) -> Store:
    from philont.cli.common import open_store

    return open_store(url)


def _with_embedder(url: URL) -> Store:
    from philont.embed.hashing import HashEmbedder

    return Store.open(url, upgrade=False, embedder=HashEmbedder())


@pytest.mark.parametrize("opener", [_open_store, _with_embedder], ids=["open_store", "embedder"])
def test_a_store_refused_for_its_default_agent_is_closed(
    pg_layout: Layout, monkeypatch: pytest.MonkeyPatch, opener: Callable[[URL], Store]
) -> None:
    """The command line's open_store and Store.open with an embedder read the default agent
    after opening the Store: refused there, the Store is closed (its pool released), as for
    an agent nobody has. They were left open (the read sat outside the try that closes)."""
    opened: list[Store] = []
    init = Store.__init__

    def recording(self: Store, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        opened.append(self)

    monkeypatch.setattr(Store, "__init__", recording)
    monkeypatch.setenv(settings.AGENT_ENV, "Bad Name")
    with pytest.raises(InvalidInputError, match=r"^\$PHILONT_AGENT: 'Bad Name' is no agent"):
        opener(pg_layout.url)
    assert opened
    assert all(store.closed for store in opened)

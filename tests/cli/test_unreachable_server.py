"""A PostgreSQL server that cannot be reached is one typed line (backend_unavailable, the URL
with its password hidden) for every command, never a driver traceback. Needs no server: nothing
listens on port 1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont.cli import app
from tests.support import cli_command as _command
from tests.support import cli_paths

pytest.importorskip("psycopg")
runner = CliRunner()
UNREACHABLE = "postgresql+psycopg://someone:s3cret-pw@127.0.0.1:1/memory"
# Commands that only work on an SQLite file say so before connecting; `mcp` serves stdin.
SQLITE_ONLY = {("backup",), ("restore",), ("demo",)}


def _takes_db(path: tuple[str, ...]) -> bool:
    return any("--db" in getattr(p, "opts", ()) for p in _command(path).params)


COMMANDS = [p for p in cli_paths() if _takes_db(p) and p != ("mcp",)]


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_an_unreachable_server_is_one_typed_line(
    path: tuple[str, ...], tool_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    exported = runner.invoke(app, ["export", "in.jsonl", "--db", str(tool_db)])
    assert exported.exit_code == 0, exported.output
    arguments = [
        "in.jsonl" if p.name == "file" else "x"
        for p in _command(path).params
        if p.param_type_name == "argument" and p.required
    ]
    (tmp_path / "script.json").write_text("{}", encoding="utf-8")  # read before --db is
    options = {"--embedder": "hash:8", "--model": "scripted:script.json"}
    extra = [v for opt, value in options.items() if _has(path, opt) for v in (opt, value)]
    args = ["--agent", "someone", *path, *arguments, *extra, "--db", UNREACHABLE, "--yes"]
    if not _has(path, "--yes"):
        args.remove("--yes")
    result = runner.invoke(app, args)
    shown = f"{args}: {result.output}"
    assert result.exit_code == 1, shown
    assert result.exception is None or isinstance(result.exception, SystemExit), shown
    assert re.fullmatch(r"error \([a-z_]+\): [^\n]+\n", result.stderr), shown
    assert "s3cret-pw" not in result.output, shown
    if path not in SQLITE_ONLY:
        assert result.stderr.startswith("error (backend_unavailable): cannot connect to"), shown
        assert "127.0.0.1:1/memory" in result.stderr, shown


def _has(path: tuple[str, ...], option: str) -> bool:
    return any(option in getattr(p, "opts", ()) for p in _command(path).params)

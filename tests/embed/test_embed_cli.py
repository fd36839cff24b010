"""`philont embed`: embeds what is pending, reports, resumes, refuses another model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont.cli import app
from philont.store import Store
from tests.embed.helpers import fill

runner = CliRunner()


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "memory.sqlite"
    with Store.open(db) as store, store.begin() as mem:
        fill(mem, messages=50)
    return db


def _json(*args: str) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, [*args, "--json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_philont_embed_embeds_everything_pending_then_nothing(tmp_path: Path) -> None:
    db = _db(tmp_path)
    code, before = _json("embed", "--db", str(db), "--status")
    assert code == 0 and before["model_id"] is None and before["pending_messages"] == 50
    code, done = _json("embed", "--db", str(db), "--embedder", "hash:32", "--batch-size", "8")
    assert code == 0 and done["complete"] is True
    assert (done["messages"], done["notes"], done["skills"], done["batches"]) == (50, 12, 6, 3 + 7)
    code, again = _json("embed", "--db", str(db), "--embedder", "hash:32")
    assert code == 0 and (again["messages"], again["batches"]) == (0, 0)
    code, after = _json("embed", "--db", str(db), "--status")
    assert after["model_id"] == "philont-hash-v1-32" and after["pending_messages"] == 0


def test_philont_embed_refuses_another_model_unless_asked_to_rebuild(tmp_path: Path) -> None:
    db = _db(tmp_path)
    assert _json("embed", "--db", str(db), "--embedder", "hash:32")[0] == 0
    result = runner.invoke(app, ["embed", "--db", str(db), "--embedder", "hash:64"])
    assert result.exit_code == 1
    assert "embedder_mismatch" in result.output and "--rebuild" in result.output
    code, rebuilt = _json("embed", "--db", str(db), "--embedder", "hash:64", "--rebuild")
    assert code == 0 and rebuilt["rebuilt"] is True and rebuilt["messages"] == 50


def test_philont_embed_without_an_embedder_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["embed", "--db", str(_db(tmp_path))], env={"PHILONT_EMBEDDER": ""})
    assert result.exit_code == 2 and result.output.startswith("error (usage): "), result.output
    assert "--embedder" in result.output


@pytest.mark.parametrize("spec", ["hash:0", "hash:abc"])
def test_philont_embed_with_an_unusable_dimension_says_so_in_one_line(
    tmp_path: Path, spec: str
) -> None:
    result = runner.invoke(app, ["embed", "--db", str(_db(tmp_path)), "--embedder", spec])
    assert result.exit_code == 2, result.output  # a bad value on the command line
    assert result.output.startswith("error (usage): Invalid value for '--embedder'")
    assert "the hash dimension must be a whole number from 8 to 4096" in result.output
    assert len(result.output.splitlines()) == 1

"""`philont import` on a terminal, as a person runs it: a long import shows its progress from
the start (the check of the whole file, the rows of each table, the search indexes); `philont
db upgrade` counts the revisions it runs. Ctrl-C during them: tests/cli/test_ctrl_c.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from philont import migrate, transfer
from philont.schemas.timeline import MessageIn
from philont.store import Store
from tests.cli.terminal import run_in_terminal

MESSAGES = 30_000


def _counts(text: str, label: str) -> list[tuple[float, float]]:
    """Every ``<label> ... done/total`` the progress display showed."""
    found = re.findall(re.escape(label) + r"[^\n\r]*?([\d.]+)/([\d.]+)", text)
    return [(float(a), float(b)) for a, b in found]


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of MESSAGES messages: long enough for the display to show each step part-way."""
    base = tmp_path_factory.mktemp("big")
    source = base / "memory.sqlite"
    with Store.open(source) as store:
        for start in range(0, MESSAGES, 10_000):
            with store.begin() as mem:
                mem.timeline.append_many(
                    [
                        MessageIn(content=f"message {i} about the flat in Berlin")
                        for i in range(start, start + 10_000)
                    ]
                )
    out = base / "big.jsonl"
    transfer.export(source, out)
    return out


def test_a_long_import_shows_each_step_as_it_goes(big_export: Path, tmp_path: Path) -> None:
    target = tmp_path / "new.sqlite"

    run = run_in_terminal(["import", str(big_export), "--db", str(target)], None)

    assert run.status == 0, run.output[-2000:]
    checking = _counts(run.output, "checking the file")
    rows = _counts(run.output, "importing memory_raw_messages")
    assert any(0 < done < total for done, total in checking), checking  # seen part-way
    assert any(0 < done < total for done, total in rows), rows
    assert (MESSAGES, MESSAGES) in rows
    assert _counts(run.output, "rebuilding search indexes")
    assert run.output.index("checking the file") < run.output.index("importing")
    assert f"{MESSAGES} added" in run.output


@pytest.mark.parametrize("fixture", ["v31", "v27", "v2"])
def test_an_upgrade_counts_the_revisions_it_runs(
    copy_fixture: Callable[[str], Path], fixture: str
) -> None:
    """The bar counted against every revision philont ships: an upgrade of the original's v31
    file ended at 8/39, as if it had stopped a fifth of the way. A file at schema version N is
    at philont's revision N, so an upgrade runs the shipped revisions after it."""
    db = copy_fixture(fixture)
    runs = len(migrate.history()) - int(fixture.removeprefix("v"))
    assert runs > 0

    run = run_in_terminal(["db", "upgrade", "--db", str(db)], None)

    assert run.status == 0, run.output[-2000:]
    counts = _counts(run.output, "upgrading")
    assert counts and counts[-1] == (runs, runs), counts
    assert {total for _done, total in counts} == {runs}, counts

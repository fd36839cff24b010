"""Backfill survives a kill (a real process, SIGKILL mid-run) on both backends, and the original
program (schema-31 software, emulated with its own SQL on a connection without extensions)
still appends to and searches a file that holds vectors."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL

from philont import migrate
from philont.db.queries import vectors as q
from philont.embed import HashEmbedder, backfill, codec
from philont.services.search.scoring import Kind
from philont.store import Store
from tests.embed.helpers import fill

BOTH_BACKENDS = True
REPO = Path(__file__).resolve().parents[2]


def _text(target: Path | URL) -> str:
    return target.render_as_string(hide_password=False) if isinstance(target, URL) else str(target)


def test_a_backfill_killed_mid_run_resumes_where_it_stopped(target: Path | URL) -> None:
    with Store.open(target) as store, store.begin() as mem:
        fill(mem, messages=400, notes=0, skills=0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.embed.backfill_worker", _text(target), "20", "60"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    reported = 0
    for line in proc.stdout:  # until it stops mid-batch, past 60 embeddings committed
        if line.startswith("committed"):
            reported = int(line.split()[1])
        if line == "mid-batch\n":
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and 60 <= reported < 400

    with Store.open(target) as store:
        with store.begin(write=False) as mem:
            raw = mem.raw()
            kept = q.count_messages(raw)
            ids = sorted(q.message_vectors(raw, list(range(1, 401))))
        # whole batches only, in id order, vectors and codes together
        assert kept >= reported and kept % 20 == 0 and ids == list(range(1, kept + 1))
        report = backfill(store, HashEmbedder(64), batch_size=20)
        assert report.complete and report.messages == 400 - kept  # nothing embedded twice
        with store.begin(write=False) as mem:
            raw = mem.raw()
            assert q.count_messages(raw) == 400
            blobs = q.message_vectors(raw, [1, kept, kept + 1, 400])
            rows = raw.rows(  # this agent's messages (on PostgreSQL the owner sees all)
                f"SELECT id, session_id, content FROM memory_raw_messages{raw.where()} ORDER BY id"
            )
    # each message is embedded after the message before it in its session
    embedded, last = {}, {}
    for i, session, content in rows:
        prev = last.get(session)
        embedded[i] = content if prev is None else f"{prev[:300]}\n{content}"
        last[session] = content
    for i, blob in blobs.items():
        assert list(codec.unpack(blob)) == pytest.approx(HashEmbedder(64).embed([embedded[i]])[0])


# --- the original program on a file with vectors (SQLite only) ---------------------------------

ORIGINAL_APPEND = (
    "INSERT INTO memory_raw_messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)"
)
ORIGINAL_SEARCH = (
    "SELECT m.* FROM memory_raw_messages m JOIN memory_raw_messages_fts fts"
    " ON fts.rowid = m.rowid WHERE memory_raw_messages_fts MATCH ?"
    " ORDER BY m.timestamp DESC LIMIT ?"
)
ORIGINAL_NOTE = (
    "INSERT INTO memory_notes (id, content, importance, session_id, created_at,"
    " root_pursuit_id) VALUES (?, ?, 0.5, NULL, ?, 'default')"
)
ORIGINAL_NOTE_SEARCH = (
    "SELECT n.* FROM memory_notes n JOIN memory_notes_fts fts ON fts.rowid=n.rowid"
    " WHERE memory_notes_fts MATCH ? ORDER BY n.importance DESC, n.created_at DESC LIMIT ?"
)


def _original(db: Path, statements: list[tuple[str, tuple[Any, ...]]]) -> list[list[Any]]:
    """Run the original's statements on a plain connection (no extension loaded), as it does:
    foreign keys on, one transaction."""
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        results = [conn.execute(sql, params).fetchall() for sql, params in statements]
        conn.commit()
        return results


def test_the_original_program_still_appends_and_searches_a_file_with_vectors(
    copy_fixture: Any,
) -> None:
    db: Path = copy_fixture("v31")
    migrate.upgrade(db)
    emb = HashEmbedder(64)
    with Store.open(db) as store:
        first = backfill(store, emb)
        assert first.complete and first.messages > 0
    skill = _original(db, [("SELECT id FROM memory_skills LIMIT 1", ())])[0][0][0]
    found = _original(
        db,
        [
            (
                ORIGINAL_APPEND,
                ("global", "user", "the quarterly zeppelin inspection", 4_102_444_800_000),
            ),
            (ORIGINAL_SEARCH, ('"zeppelin"', 20)),
            (ORIGINAL_NOTE, ("n-orig", "zeppelin hangar keys are with Ines", 4_102_444_800_001)),
            (ORIGINAL_NOTE_SEARCH, ('"hangar"', 5)),
            ("DELETE FROM memory_skills WHERE id = ?", (skill,)),
        ],
    )
    assert [r[3] for r in found[1]] == ["the quarterly zeppelin inspection"]
    assert [r[1] for r in found[3]] == ["zeppelin hangar keys are with Ines"]
    with closing(sqlite3.connect(str(db))) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.execute("VACUUM")  # the original's maintenance: no object needs an extension
        for table in ("memory_raw_messages_fts", "memory_notes_fts", "memory_skills_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    with Store.open(db, embedder=emb) as store:
        with store.begin() as mem:
            hits = mem.search.messages("zeppelin inspection")
            assert hits[0].content == "the quarterly zeppelin inspection"
            assert mem.search.reports[Kind.MESSAGES].unembedded == 1
        second = backfill(store, emb)
        assert (second.messages, second.notes, second.pruned) == (1, 1, 1)
        with store.begin(write=False) as mem:
            status = mem.embeddings.status()
            assert status.pending_messages == status.pending_notes == status.pending_skills == 0

"""`philont consolidate` and `philont skills judge-report` from the command line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner

from philont import Memory
from philont.cli import app
from philont.db.models import LearningBatch
from philont.learning import CaseBook, JudgeResult, Run, ToolCall
from philont.learning.consolidate import read_cursor
from philont.schemas.learning import Verdict

runner = CliRunner()

FACT = {"action": "store_fact", "namespace": "user.home", "key": "city", "value": "Berlin"}


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def chatty(tool_db: Path) -> Path:
    with Memory.open(tool_db) as mem:
        for i in range(6):
            mem.timeline.append(f"I live in Berlin ({i})", role="user" if i % 2 else "assistant")
    return tool_db


def script(tmp_path: Path, **answers: str) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(answers))
    return f"scripted:{path}"


def test_consolidate_once_writes_the_batch_and_moves_the_cursor(
    chatty: Path, tmp_path: Path
) -> None:
    model = script(tmp_path, extract=json.dumps([FACT]), reflect="[]", summarize="s")
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog",
        "--idle-after", "0",
    )  # fmt: skip
    assert code == 0, output
    assert "consolidated batch 1: 6 messages, 1 facts, 0 notes" in output
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) is not None


def test_consolidate_says_how_many_items_of_the_answer_were_rejected(
    chatty: Path, tmp_path: Path
) -> None:
    # The text line said "1 facts, 0 notes" for an answer of four items, three refused (a
    # namespace not of the tools' form, the reserved one, an empty key), and the log line
    # counted the written only: the refusals were in the --json report alone.
    bad = [
        {**FACT, "namespace": "SYSTEM"},
        {**FACT, "namespace": "system", "key": "last_consolidated_ts"},
        {**FACT, "key": ""},
    ]
    model = script(tmp_path, extract=json.dumps([*bad, FACT]), reflect="[]", summarize="s")
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog",
        "--idle-after", "0",
    )  # fmt: skip
    assert code == 0, output
    assert "6 messages, 1 facts, 0 notes (3 items rejected), skills:" in output, output
    with Memory.open(chatty) as mem:
        assert mem.facts.get("user.home", "city") is not None
        city = mem.facts.get("user.home", "city")
        assert city is not None and city.value == "Berlin"
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--json",
        "--idle-after", "0",
    )  # fmt: skip
    assert code == 0 and json.loads(output)["status"] == "nothing_new"


def test_consolidate_says_which_batch_held_late_messages(chatty: Path, tmp_path: Path) -> None:
    # said an hour before the cursor, after it moved: learned from in a batch of its own
    model = script(tmp_path, extract=json.dumps([FACT]), reflect="[]", summarize="s")
    args = ("consolidate", "--db", str(chatty), "--model", model, "--once", "--idle-after", "0")
    assert run(*args, "--backlog")[0] == 0
    with Memory.open(chatty) as mem:
        cursor = read_cursor(mem.session)
        assert cursor is not None
        mem.timeline.append("I moved to Paris", at=mem.clock() - timedelta(hours=1))
    code, output = run(*args)
    assert code == 0, output
    assert "consolidated batch 2: 1 late messages, 0 facts" in output  # Berlin: unchanged
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) == cursor


def test_consolidate_says_a_late_batch_of_tool_calls_alone_learned_from_its_calls(
    chatty: Path, tmp_path: Path
) -> None:
    # logged an hour before the cursor, after it moved, with no late message: it was reported
    # as a batch of "0 late messages"
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    args = ("consolidate", "--db", str(chatty), "--model", model, "--once", "--idle-after", "0")
    assert run(*args, "--backlog")[0] == 0
    for json_form in (False, True):
        with Memory.open(chatty) as mem:
            for tool in ("fetch", "parse"):
                mem.actions.record(
                    tool, params={}, success=True, at=mem.clock() - timedelta(hours=1)
                )
        code, output = run(*args, *(["--json"] if json_form else []))
        assert code == 0, output
        if json_form:
            report = json.loads(output.splitlines()[0])  # JSON Lines: then nothing_new
            assert (report["late"], report["messages"], report["tool_calls"]) == (True, 0, 2)
        else:
            assert "consolidated batch 2: 2 late tool calls, 0 facts" in output, output


def test_consolidate_once_exits_1_when_the_batch_failed(chatty: Path, tmp_path: Path) -> None:
    model = script(tmp_path, reflect="[]")  # no answer for the extraction: an empty answer
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog",
        "--idle-after", "0",
    )  # fmt: skip
    assert code == 1
    assert "failed" in output and "model_empty_answer" in output
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) is None


def test_consolidate_once_exits_1_while_the_failed_batch_waits_for_its_retry(
    chatty: Path, tmp_path: Path
) -> None:
    # A run inside the failed batch's backoff said "backing_off" and exited 0: a cron job
    # saw every run after the first failure as a success while nothing was learned.
    model = script(tmp_path, reflect="[]")  # an empty extraction answer: the batch fails
    args = ("consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog",
            "--idle-after", "0")  # fmt: skip
    assert run(*args)[0] == 1
    for json_form in ([], ["--json"]):
        code, output = run(*args, *json_form)
        assert code == 1, output
        said = json.loads(output)["status"] if json_form else output
        assert "backing_off" in said, output


@pytest.mark.parametrize(
    ("args", "said"),
    [([], "Missing option '--model'"), (["--model", "gemini:x"], "Invalid value for '--model'")],
)
def test_consolidate_needs_a_usable_model(chatty: Path, args: list[str], said: str) -> None:
    code, output = run("consolidate", "--db", str(chatty), "--once", *args)
    assert code == 2, output
    assert output.startswith(f"error (usage): {said}"), output


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_consolidate_loop_stops_cleanly_on_a_signal(
    chatty: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    proc = subprocess.Popen(
        [sys.executable, "-m", "philont", "consolidate", "--db", str(chatty), "--model", model,
         "--interval", "0.2", "--idle-after", "0", "--backlog"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if line.startswith("nothing_new"):  # a second tick ran: the loop is looping
            break
    proc.send_signal(sig)
    out, errors = proc.communicate(timeout=30)
    assert proc.returncode == 0, errors
    assert any(line.startswith("consolidated batch 1") for line in lines), lines
    assert out.strip().endswith("stopped")


def test_a_consolidate_loop_started_with_ctrl_c_ignored_keeps_it_ignored(
    chatty: Path, tmp_path: Path
) -> None:
    """A loop a script started in the background has SIGINT ignored, so that a Ctrl-C meant
    for the script's foreground command leaves it running (as Python leaves it). It used to
    replace that with its own handler and stop. SIGTERM still stops it."""
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    proc = subprocess.Popen(  # started as a script's shell starts a job with `&`
        ["sh", "-c", "trap '' INT; exec \"$0\" \"$@\"", sys.executable, "-m", "philont",
         "consolidate", "--db", str(chatty), "--model", model,
         "--interval", "0.2", "--idle-after", "0", "--backlog"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    ticks, lines = 0, []
    deadline = time.monotonic() + 60
    while ticks < 4 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:  # it stopped
            break
        lines.append(line)
        if line.startswith("nothing_new"):
            ticks += 1
            if ticks == 1:
                proc.send_signal(signal.SIGINT)  # the loop goes on: three more ticks
    assert ticks == 4 and proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    out, errors = proc.communicate(timeout=30)
    assert proc.returncode == 0, errors
    assert out.strip().endswith("stopped")
    assert f"consolidating; stop with SIGTERM (kill {proc.pid})\n" in lines  # not Ctrl-C
    assert errors.count("stopping") == 1, errors  # the SIGTERM's, not the SIGINT's
    assert "SIGTERM (kill" in errors and "Ctrl-C" not in errors, errors


def test_judge_report_prints_the_agreement_per_skill(tool_db: Path) -> None:
    with Memory.open(tool_db) as mem:
        mem.skills.create("export-csv", "Export CSV", ["csv"], "1. query\n2. write")
        use = mem.actions.record("use_skill", params={"name": "export-csv"}, success=True)
        mem.actions.record("write_file", params={}, success=True)
        call = ToolCall(
            use.id, "global", "use_skill", {"name": "export-csv"}, "", True, use.timestamp
        )
        run_ = Run("export", (call,), "done", "global", "export-csv", use.id)
        CaseBook(mem).record(run_, JudgeResult(Verdict.VERIFIED), judge="test")
        mem.actions.link_skill([use.id], "export-csv")  # attribution decided the retrieval
    code, output = run("skills", "judge-report", "--db", str(tool_db), "--json")
    assert code == 0, output
    rows = json.loads(output)
    assert [(r["skill"], r["verdicts"], r["observed"], r["agreed"]) for r in rows] == [
        ("export-csv", 1, 1, 1),
        (None, 1, 1, 1),
    ]
    code, output = run("skills", "judge-report", "--db", str(tool_db))
    assert code == 0 and "(all)" in output and "100%" in output


def test_the_demo_shows_the_learning_loop(tmp_path: Path) -> None:
    code, output = run("demo", "--db", str(tmp_path / "demo.sqlite"))
    assert code == 0, output
    text = " ".join(output.split())  # rich wraps long lines
    for phrase in (
        "consolidator: anchored",
        "2 facts stored through the store_fact tool's own checks; "
        "skill convert-pdf-invoice-to-csv created as a draft",
        "skill avoid-acting-now-on-later-requests: created",
        "skill send-invoice-email: refused",
        "judge: verified — Back up the lease folder",
        "nas-backup: refused (needs_verified_case)",
        "condensed back-up-folder-to-nas: grade=confirmed, justified by 1 verified case(s)",
    ):
        assert phrase in text, phrase
    with Memory.open(tmp_path / "demo.sqlite") as mem:
        avoid = mem.skills.get("avoid-acting-now-on-later-requests")
        assert avoid is not None and avoid.kind == "negative"
        diet = mem.facts.get("user.preferences", "diet")
        assert diet is not None and diet.value == "vegetarian"


ONCE_INTERRUPTED = """
import os, signal, sys
from philont.cli import app, learning
from philont.llm import ScriptedModel

def extract(prompt):
    os.kill(os.getpid(), signal.{sig})  # stopped while the model thinks
    return "[]"

learning.model_from_spec = lambda spec, base_url=None: ScriptedModel.by_task(
    {{"extract": extract, "reflect": "[]", "summarize": "s"}}
)
app(["consolidate", "--db", sys.argv[1], "--model", "scripted:-", "--once", "--backlog",
     "--idle-after", "0", "--batch-size", "2", "--min-messages", "1", "--json"])
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_consolidate_once_finishes_the_batch_in_progress_on_a_signal(
    chatty: Path, sig: str
) -> None:
    # --once used to die on SIGTERM (and raise on SIGINT) mid-batch, leaving the batch claimed
    # for the lease; like the loop, it now finishes the batch, reports it and stops.
    proc = subprocess.run(
        [sys.executable, "-c", ONCE_INTERRUPTED.format(sig=sig), str(chatty)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    reports = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["status"] for r in reports] == ["consolidated"]  # then stopped (6 messages)
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) is not None


def test_consolidate_says_when_the_models_answer_lost_something(
    chatty: Path, tmp_path: Path
) -> None:
    # The batch counts as done either way; the line used to say only "0 facts".
    cut = json.dumps([FACT, FACT | {"key": "street"}])[:-30]
    model = script(tmp_path, extract=cut, reflect="Sorry, I cannot help with that.")
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog",
        "--idle-after", "0", "--json", "--answer-attempts", "1",
    )  # fmt: skip
    assert code == 0, output
    report = json.loads(output.splitlines()[0])
    assert report["extraction"]["problem"].startswith("the answer was cut off")
    assert report["reflection"]["problem"] == "no JSON array in the answer"
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--idle-after", "0",
    )  # fmt: skip
    assert "nothing_new" in output  # (the first run's line is checked through _line below)


def test_an_unreadable_answer_fails_the_batch_until_its_last_attempt(
    chatty: Path, tmp_path: Path
) -> None:
    model = script(tmp_path, extract=json.dumps([FACT]), reflect="Sorry.", summarize="s")
    args = ["consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog"]
    code, output = run(*args, "--idle-after", "0", "--answer-attempts", "2")
    assert code == 1, output
    assert "model_unreadable_answer" in output and "unreadable answer 1 of 2" in output
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) is None
    code, output = run("consolidate", "--db", str(chatty), "--model", model, "--answer-attempts",
                       "0", "--once")  # fmt: skip
    assert code == 2, output
    assert output.startswith("error (usage): Invalid value for '--answer-attempts': "), output


def test_the_consolidate_line_names_the_answers_problems() -> None:
    from philont.cli.learning import _line
    from philont.schemas.learning import (
        ConsolidationReport,
        ConsolidationStatus,
        ExtractionReport,
        SkillReflectionReport,
    )

    report = ConsolidationReport(
        status=ConsolidationStatus.CONSOLIDATED,
        batch_id=1,
        messages=6,
        extraction=ExtractionReport(tag="t", messages=6, problem="the answer was cut off: …"),
        reflection=SkillReflectionReport(tag="t", messages=6, problem="no JSON array"),
    )
    line = _line(report)
    assert "extraction answer: the answer was cut off" in line
    assert "reflection answer: no JSON array" in line


def test_the_consolidate_line_counts_unreadable_answers_and_outages_apart() -> None:
    from datetime import UTC, datetime

    from philont.cli.learning import _line
    from philont.schemas.learning import ConsolidationReport, ConsolidationStatus

    failed = ConsolidationReport(
        status=ConsolidationStatus.FAILED,
        attempts=3,
        unreadable_answers=1,
        outages=2,
        retry_at=datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
        error="model_http_error: overloaded",
    )
    assert _line(failed) == (
        "failed (retry at 12:00:00) [unreadable answers 1, outages 2]: model_http_error: overloaded"
    )
    done = ConsolidationReport(
        status=ConsolidationStatus.CONSOLIDATED, batch_id=4, messages=2, outages=1
    )
    assert "unreadable answers 0, outages 1" in _line(done)
    assert "outages" not in _line(done.model_copy(update={"outages": 0}))


def test_each_batch_is_one_line_however_long(chatty: Path, tmp_path: Path) -> None:
    # Rich wrapped the line at 80 columns when stdout was not a terminal (a log, a pipe).
    model = script(tmp_path, extract=json.dumps([FACT]), reflect="no JSON here", summarize="s")
    code, output = run(
        "consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog",
        "--idle-after", "0", "--answer-attempts", "1",
    )  # fmt: skip
    assert code == 0, output
    line, *rest = output.splitlines()
    assert len(line) > 80 and line.endswith("reflection answer: no JSON array in the answer")
    assert rest == ["nothing_new"]


@pytest.mark.parametrize(
    "content", [b'{"reflect": "caf\xe9"}', b'{"reflect": "[]", "reflect": "x"}', b"[" * 3_000]
)
def test_a_model_script_that_cannot_be_read_is_one_line(
    chatty: Path, tmp_path: Path, content: bytes
) -> None:
    # A Latin-1 script was a UnicodeDecodeError traceback, a deep one a RecursionError.
    path = tmp_path / "script.json"
    path.write_bytes(content)
    code, output = run("consolidate", "--db", str(chatty), "--model", f"scripted:{path}", "--once")
    assert code == 1, output
    assert output.startswith("error (invalid_input): cannot read the model script"), output
    assert len(output.strip().splitlines()) == 1, output


SIGNALLED_TWICE = """
import os, signal, sys
from philont.cli import app, learning
from philont.llm import ScriptedModel

def extract(prompt):
    os.kill(os.getpid(), signal.{first})  # the batch goes on
    os.kill(os.getpid(), signal.{second})  # stop now
    return "[]"

learning.model_from_spec = lambda spec, base_url=None: ScriptedModel.by_task(
    {{"extract": extract, "reflect": "[]", "summarize": "s"}}
)
app(["consolidate", "--db", sys.argv[1], "--model", "scripted:-", "--backlog",
     "--idle-after", "0", "--batch-size", "2", "--min-messages", "1", "--json", *sys.argv[2:]])
"""


@pytest.mark.parametrize("once", [["--once"], []])
@pytest.mark.parametrize(("first", "second"), [("SIGINT", "SIGINT"), ("SIGTERM", "SIGINT")])
def test_a_second_signal_stops_consolidate_now(
    chatty: Path, once: list[str], first: str, second: str
) -> None:
    # The second Ctrl-C was ignored like the first: the command went on until the batch was
    # written, however long the model took (minutes with a slow server), and said nothing.
    proc = subprocess.run(
        [sys.executable, "-c", SIGNALLED_TWICE.format(first=first, second=second),
         str(chatty), *once],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 130, (proc.stdout, proc.stderr)
    assert proc.stdout == ""  # no batch was written
    assert proc.stderr.startswith("stopping: a batch in progress is written first"), proc.stderr
    assert proc.stderr.rstrip().endswith("interrupted"), proc.stderr
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) is None
        (batch,) = mem.session.scalars(select(LearningBatch)).all()
        assert (batch.status, batch.attempts) == ("failed", 0)  # given up, uncounted


def test_consolidate_once_says_when_it_stopped_at_a_ticks_most(
    tool_db: Path, tmp_path: Path
) -> None:
    # --once stopped after ten batches with exit 0 and nothing said: a history of more looked
    # consolidated when most of it was waiting.
    with Memory.open(tool_db) as mem:
        start = mem.clock() - timedelta(hours=1)
        for i in range(12):
            mem.timeline.append(f"message {i}", at=start + timedelta(seconds=i))
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    args = ["consolidate", "--db", str(tool_db), "--model", model, "--once", "--backlog"]
    args += ["--idle-after", "0", "--batch-size", "1", "--min-messages", "1"]
    code, output = run(*args)
    assert code == 0, output
    assert output.count("consolidated batch") == 10
    assert "stopped after 10 batches, a tick's most: more may wait (run again)" in output
    code, output = run(*args)  # the other two: nothing said
    assert code == 0 and output.count("consolidated batch") == 2, output
    assert "more may wait" not in output


@pytest.mark.parametrize("option", ["--batch-size", "--min-messages", "--answer-attempts"])
@pytest.mark.parametrize("number", [2**31, 2**63 - 1])
def test_a_count_past_the_largest_setting_is_a_usage_error(
    chatty: Path, tmp_path: Path, option: str, number: int
) -> None:
    # --batch-size 9223372036854775807 was taken, then an OverflowError traceback at the claim
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    args = ["consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog"]
    code, output = run(*args, option, str(number))
    assert code == 2, output
    assert output.startswith(f"error (usage): Invalid value for '{option}': "), output


def test_lease_and_max_hold_reach_the_consolidators_schedule(
    chatty: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--lease`` and ``--max-hold`` (seconds) are the schedule's ``lease`` and ``max_hold``;
    left out, the schedule's own defaults. The command had neither option."""
    from philont.cli import learning as cli_learning
    from philont.learning import ConsolidatorConfig

    seen: list[ConsolidatorConfig] = []

    def worker(db: object, model: object, base_url: object, schedule: ConsolidatorConfig,
               *rest: object, **kw: object) -> None:  # fmt: skip
        seen.append(schedule)
        raise typer.Exit(0)

    monkeypatch.setattr(cli_learning, "_worker", worker)
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    base = ["consolidate", "--db", str(chatty), "--model", model, "--once"]
    assert run(*base, "--lease", "2.5", "--max-hold", "90")[0] == 0
    assert run(*base)[0] == 0
    given, default = seen
    assert (given.lease, given.max_hold) == (timedelta(seconds=2.5), timedelta(seconds=90))
    assert (default.lease, default.max_hold) == (
        ConsolidatorConfig().lease,
        ConsolidatorConfig().max_hold,
    )


@pytest.mark.parametrize("option", ["--lease", "--max-hold"])
@pytest.mark.parametrize("seconds", ["0.5", "0", "-1", "0.001", "1e300", "31622401"])
def test_a_lease_or_hold_under_a_second_or_past_a_year_is_a_usage_error(
    chatty: Path, tmp_path: Path, option: str, seconds: str
) -> None:
    """Refused as the schedule refuses it (``ConsolidatorConfig``: a millisecond's lease made
    its renewals a busy loop of writes), before a batch is taken."""
    model = script(tmp_path, extract="[]", reflect="[]", summarize="s")
    args = ["consolidate", "--db", str(chatty), "--model", model, "--once", "--backlog"]
    code, output = run(*args, option, seconds)
    assert code == 2, output
    assert output.startswith(
        f"error (usage): Invalid value for '{option}': must be a duration from 1 second to "
        "366 days, got "
    ), output
    with Memory.open(chatty) as mem:
        assert read_cursor(mem.session) is None  # no batch was taken

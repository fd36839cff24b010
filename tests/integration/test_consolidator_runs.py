"""A batch its limit cuts ends before the run it would split, so the judge (and the reflection)
sees each request with everything done about it; a run longer than a batch is still cut, and
learning goes on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select

from philont.db.models import LearningBatch
from philont.learning import Consolidator, ConsolidatorConfig, JudgeResult, LearningConfig, Run
from philont.learning.window import runs_of
from philont.llm import ScriptedModel
from philont.schemas.learning import ConsolidationStatus, Verdict
from tests.conftest import FakeClock
from tests.integration.learning_helpers import Conversation, UnitFactory, unit_factory

BOTH_BACKENDS = True


@pytest.fixture
def units(engine: Engine, clock: FakeClock) -> UnitFactory:
    return unit_factory(engine, clock)


class RecordingJudge:
    """Verifies every run and keeps what it was shown."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[str, ...], str]] = []

    def judge(self, run: Run) -> JudgeResult:
        self.seen.append(shown(run))
        return JudgeResult(Verdict.VERIFIED, "seen")


def shown(run: Run) -> tuple[str, tuple[str, ...], str]:
    return run.goal, tuple(call.tool_name for call in run.trace), run.result


def consolidate(units: UnitFactory, clock: FakeClock, judge: Any, **schedule: Any) -> list[Any]:
    """Every batch until there is nothing left, an hour after the conversation."""
    clock.advance(hours=1)
    worker = Consolidator(
        units,
        ScriptedModel.by_task({"extract": "[]", "reflect": "[]"}),
        clock=clock,
        judge=judge,
        config=LearningConfig(summary_min_messages=10_000, max_runs_judged=100),
        schedule=ConsolidatorConfig(backlog=True, max_batches_per_tick=100, **schedule),
    )
    return worker.tick()


def every_run(units: UnitFactory) -> list[tuple[str, tuple[str, ...], str]]:
    """The runs of the whole timeline, read at once."""
    from philont.learning.window import load_range

    with units(write=False) as mem:
        start = datetime(2000, 1, 1, tzinfo=UTC)
        window = load_range(mem.session, start, start + timedelta(days=365 * 100), limit=10**6)
    return [shown(run) for run in runs_of(window)]


def batch_sizes(units: UnitFactory) -> list[int]:
    with units(write=False) as mem:
        rows = mem.session.scalars(select(LearningBatch).order_by(LearningBatch.id))
        return [row.message_count for row in rows]


def test_a_run_across_the_batch_limit_is_judged_whole_in_the_next_batch(
    units: UnitFactory, clock: FakeClock
) -> None:
    with units() as mem:
        chat = Conversation(mem, clock, "s1")
        other = Conversation(mem, clock, "s2")
        chat.user("Hello")
        other.user("What time is it?")
        other.assistant("Noon.")
        chat.user("Export the invoices table as CSV")  # a run of four messages
        chat.act("use_skill", name="export-csv")
        chat.act("sql", query="select * from invoices")
        chat.assistant("Querying...")
        chat.act("write_file", path="invoices.csv")
        chat.assistant("Wrote invoices.csv (120 rows)")
        other.user("And the date?")
        chat.user("Now scrape the competitor prices")  # a run with a failing call
        chat.act("http_get", ok=False, url="https://example.invalid")
        chat.assistant("The site did not answer.")
        other.assistant("The 14th.")
        chat.user("Thanks, that is all")
        chat.assistant("You are welcome.")
    judge = RecordingJudge()
    reports = consolidate(units, clock, judge, batch_size=4)  # min_messages 4, the default
    # Cut at 4 messages each, the batches split the export run after "Export..." and the
    # scrape run after "Now scrape...": the judge saw neither run's tool calls, and no run at
    # all. Now a batch ends before the run it would split (s1's export run in the first
    # batch, s2's "And the date?" in the second), and is taken although smaller than
    # min_messages: more messages are waiting.
    assert judge.seen == every_run(units)
    assert batch_sizes(units) == [3, 3, 4]
    assert [r.status for r in reports] == [ConsolidationStatus.CONSOLIDATED] * 3 + [
        ConsolidationStatus.TOO_FEW  # "Thanks" and its answer wait for more
    ]
    assert judge.seen[0] == (
        "Export the invoices table as CSV",
        ("use_skill", "sql", "write_file"),
        "Wrote invoices.csv (120 rows)",
    )


def test_a_run_longer_than_a_batch_is_cut_and_learning_goes_on(
    units: UnitFactory, clock: FakeClock
) -> None:
    with units() as mem:
        chat = Conversation(mem, clock, "s1")
        chat.user("Migrate the database")
        for step in range(3):
            chat.act("sql", query=f"step {step}")
            chat.assistant(f"Step {step} done.")
        chat.user("Thanks")
    reports = consolidate(units, clock, RecordingJudge(), batch_size=2, min_messages=1)
    statuses = [ConsolidationStatus.CONSOLIDATED] * 3 + [ConsolidationStatus.NOTHING_NEW]
    assert [r.status for r in reports] == statuses
    assert batch_sizes(units) == [2, 2, 1]


@pytest.mark.parametrize(
    ("judged", "window", "read"), [(True, 50, 200), (False, 5_000, 200), (False, 50, 200)]
)
def test_a_batch_reads_only_the_tool_calls_its_prompts_can_show(
    units: UnitFactory, clock: FakeClock, judged: bool, window: int, read: int
) -> None:
    """A batch loaded every tool call of its span (50,000: 1.3 s and 56 MB), though its prompts
    show the newest 200, and with a judge the runs' traces. Now it reads the newest of them
    (200; with a judge ``max_window_messages`` if that is more) and counts the rest; a run begun
    before the calls read is not judged (its trace would lack calls), the newer runs are, whole.
    A small ``max_window_messages`` does not cut what the prompts show (it cut it to 50)."""
    with units() as mem:
        chat = Conversation(mem, clock, "s1")
        chat.user("Crawl the site")
        for page in range(230):
            chat.act("fetch", minutes=0.01, page=page)
        chat.assistant("Crawled.")
        chat.user("Now the sitemap")
        for step in range(3):
            chat.act("sitemap", minutes=0.01, step=step)
        chat.assistant("Done.")
    clock.advance(hours=1)
    judge = RecordingJudge() if judged else None
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]"})
    worker = Consolidator(
        units,
        model,
        clock=clock,
        judge=judge,
        config=LearningConfig(summary_min_messages=10_000, max_window_messages=window),
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )
    report = worker.run_once()
    assert (report.status, report.tool_calls) == (ConsolidationStatus.CONSOLIDATED, 233)
    assert report.tool_calls_left_out == 233 - read
    if judge is not None:
        assert judge.seen == [("Now the sitemap", ("sitemap",) * 3, "Done.")]
    reflect = next(p for p in model.prompts if p.startswith("TASK: reflect"))
    first = 233 - read  # the newest calls: 3 sitemaps and the pages from this one
    assert "sitemap" in reflect and '{"page": 229}' in reflect
    assert f'{{"page": {first}}}' in reflect and f'{{"page": {first - 1}}}' not in reflect


def test_a_batch_reads_of_each_message_what_its_prompts_show(
    units: UnitFactory, clock: FakeClock
) -> None:
    """A batch read every message whole (up to 16 MiB each, a thousand to a batch) to show
    ``max_message_chars`` of it; now it reads what the prompts show, and they are the same."""
    from philont.learning.late import Seen, load_batch
    from philont.learning.prompts import extract_prompt
    from philont.learning.window import load_after, read_chars

    texts = ["a\r\n" * 40_000, "b" * 100_000, "short", "\u2028c" * 30]
    with units() as mem:
        chat = Conversation(mem, clock, "s1")
        for text in texts:
            chat.user(text)
    clock.advance(hours=1)
    config = LearningConfig(summary_min_messages=10_000, max_message_chars=25)
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]"})
    worker = Consolidator(
        units, model, clock=clock, config=config,
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )  # fmt: skip
    report = worker.run_once()
    assert report.status == ConsolidationStatus.CONSOLIDATED
    with units(write=False) as mem:
        whole = load_after(mem.session, -1, report.until_ts or 0)
        read, _ = load_batch(
            mem.session, -1, report.until_ts or 0, Seen(), max_chars=read_chars(25)
        )
    assert [t.content for t in whole.turns] == texts
    assert [len(t.content) for t in read.turns] == [52, 52, 5, 52]
    extract = next(p for p in model.prompts if p.startswith("TASK: extract"))
    assert extract == extract_prompt(whole, timezone="UTC", max_chars=25, total=120_000)


@pytest.mark.parametrize("scope", ["session", "range"])
def test_a_host_s_window_reads_of_each_message_what_its_prompts_show(
    units: UnitFactory, clock: FakeClock, scope: str
) -> None:
    """A host's window (``Learner.window``, and every step made of it) read each message whole
    (up to 16 MiB each, ``max_window_messages`` of them) to show ``max_message_chars`` of it;
    now it reads what the prompts show, as a consolidator's batch does (one rule,
    ``window.chars_read``), and the prompts are the same. With a judge, whole (its runs' goals
    and answers are the judge's)."""
    from philont.learning import Learner
    from philont.learning.prompts import extract_prompt
    from philont.learning.window import load_session

    texts = ["a\r\n" * 40_000, "b" * 100_000, "short", "\u2028c" * 30]
    with units() as mem:
        chat = Conversation(mem, clock, "s1")
        for text in texts:
            chat.user(text)
    config = LearningConfig(summary_min_messages=10_000, max_message_chars=25)
    scoped: dict[str, Any] = (
        {"session_id": "s1"}
        if scope == "session"
        else {"since": clock.now - timedelta(hours=1), "until": clock.now}
    )
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]"})
    with units() as mem:
        whole = load_session(mem.session, "s1", limit=100)
        read = Learner(mem, model, config=config).window(**scoped)
        judged = Learner(mem, model, config=config, judge=RecordingJudge()).window(**scoped)
        Learner(mem, model, config=config).extract(**scoped)
    assert [t.content for t in whole.turns] == [t.content for t in judged.turns] == texts
    assert [len(t.content) for t in read.turns] == [52, 52, 5, 52]
    (extract,) = [p for p in model.prompts if p.startswith("TASK: extract")]
    shown = extract_prompt(whole, timezone="UTC", max_chars=25, total=120_000)
    assert extract == shown == extract_prompt(read, timezone="UTC", max_chars=25, total=120_000)

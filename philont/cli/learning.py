"""`philont consolidate` (the idle consolidator) and `philont skills judge-report`."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from philont.cli import inspect as cli_inspect
from philont.cli import values
from philont.cli.common import (
    EXIT_ERROR,
    EXIT_OUT_OF_DATE,
    DbOption,
    JsonOption,
    emit,
    err,
    fail,
    open_store,
    out,
    resolve_existing,
)
from philont.cli.values import value
from philont.errors import PhilontError, SchemaOutOfDateError
from philont.llm import model_from_spec
from philont.schemas import planning

if TYPE_CHECKING:
    from philont.learning import Consolidator, ConsolidatorConfig, LearningConfig
    from philont.memory import Memory
    from philont.schemas.learning import ConsolidationReport, JudgeAgreement
    from philont.store import Store

__all__ = ["consolidate", "judge_report", "skills_app"]


def _line(report: ConsolidationReport) -> str:
    """One line per batch for people."""
    from philont.schemas.learning import ConsolidationStatus

    if report.status != ConsolidationStatus.CONSOLIDATED:
        extra = f" (retry at {report.retry_at:%H:%M:%S})" if report.retry_at else ""
        error = f": {report.error}" if report.error else ""
        failures = f" [{_failures(report)}]" if _failures(report) else ""
        return f"{report.status.value}{extra}{failures}{error}"
    late = "late " if report.late else ""
    parts = []  # what it learned from: a late batch may hold tool calls only
    if report.messages or not report.tool_calls:
        parts.append(f"{report.messages} {late}messages")
    if report.tool_calls:
        unread = f" ({report.tool_calls_left_out} older not read)"
        parts.append(
            f"{report.tool_calls} {late}tool calls{unread if report.tool_calls_left_out else ''}"
        )
    if report.extraction is not None:
        e = report.extraction
        rejected = f" ({e.rejected} items rejected)" if e.rejected else ""
        parts.append(f"{e.facts} facts, {e.notes} notes{rejected}")
    if report.reflection is not None:
        r = report.reflection
        parts.append(f"skills: {r.created} created, {r.updated} updated, {r.refused} refused")
    written = sum(1 for s in report.summaries if s.written)
    if written:
        parts.append(f"{written} summaries")
    if report.verdicts:
        parts.append(f"{len(report.verdicts)} runs judged")
    if _failures(report):  # the failed tries before, and an unreadable answer kept
        parts.append(_failures(report))
    parts.append(f"{report.tokens_used} tokens")
    for step, part in (("extraction", report.extraction), ("reflection", report.reflection)):
        if part is not None and part.problem is not None:  # what the model's answer lost
            parts.append(f"{step} answer: {part.problem}")
    return f"consolidated batch {report.batch_id}: " + ", ".join(parts)


def _failures(report: ConsolidationReport) -> str:
    """The batch's failed tries by kind, ``unreadable answers 1, outages 2`` (none: "")."""
    if not (report.unreadable_answers or report.outages):
        return ""
    return f"unreadable answers {report.unreadable_answers}, outages {report.outages}"


def _print(report: ConsolidationReport, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.model_dump(mode="json"), ensure_ascii=False), flush=True)
    else:
        out.print(Text(_line(report)), soft_wrap=True)  # one line per batch, never wrapped


def consolidate(
    db: DbOption = None,
    model: Annotated[
        str,
        typer.Option(
            envvar="PHILONT_MODEL",
            help="openai:<model>, anthropic:<model> or scripted:<file.json> ($PHILONT_MODEL).",
            parser=values.MODEL,
            metavar="SPEC",
        ),
    ] = ...,  # type: ignore[assignment]  # required: a missing --model is a usage error
    base_url: Annotated[
        str | None,
        typer.Option(
            envvar="PHILONT_MODEL_BASE_URL",
            help="An OpenAI-compatible server's URL.",
            parser=values.URL,
            metavar="URL",
        ),
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="One tick, then exit.")] = False,
    interval: Annotated[
        float, typer.Option(help="Seconds between ticks.", parser=value(values.PositiveSeconds))
    ] = 60.0,
    idle_after: Annotated[
        float,
        typer.Option(help="Seconds of quiet before a batch.", parser=value(values.Seconds)),
    ] = 300.0,
    batch_size: Annotated[
        int, typer.Option(help="Most messages per batch.", parser=value(values.Setting))
    ] = 1_000,
    min_messages: Annotated[
        int,
        typer.Option(help="Fewest new messages worth a batch.", parser=value(values.Setting)),
    ] = 4,
    backlog: Annotated[
        bool, typer.Option("--backlog", help="First run: process the history too.")
    ] = False,
    answer_attempts: Annotated[
        int,
        typer.Option(
            help="Unreadable model answers a batch gets (the last is kept); outages not counted.",
            parser=value(values.Setting),
        ),
    ] = 3,
    lease: Annotated[
        float,
        typer.Option(
            help="Seconds a claimed batch stays this process's before another may take it "
            "over; renewed while the batch is worked on (at least 1).",
            parser=values.LEASE,
        ),
    ] = 600.0,
    max_hold: Annotated[
        float,
        typer.Option(
            help="Seconds after the claim the lease is renewed at most: a hung model call's "
            "batch is then taken over (at least 1).",
            parser=values.MAX_HOLD,
        ),
    ] = 3600.0,
    timezone: Annotated[
        str,
        typer.Option(help="Zone of times said without one.", parser=value(planning.ZoneName)),
    ] = "UTC",
    judge: Annotated[bool, typer.Option("--judge", help="Judge runs (shadow mode).")] = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="Verify-then-condense (implies --judge).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Consolidate the timeline when it has been idle: facts, notes, skills and summaries from
    each new batch of messages. Loops until SIGINT/SIGTERM (a batch in progress is finished
    first; a second signal stops at once); --once runs one tick (exit 1 if a batch failed or waits
    to be retried)."""
    from philont.learning import ConsolidatorConfig, LearningConfig
    from philont.schemas.learning import ConsolidationStatus

    schedule = ConsolidatorConfig(
        idle_after=timedelta(seconds=idle_after),
        batch_size=batch_size,
        min_messages=min_messages,
        backlog=backlog,
        interval=timedelta(seconds=interval),
        answer_attempts=answer_attempts,
        lease=timedelta(seconds=lease),
        max_hold=timedelta(seconds=max_hold),
    )
    config = LearningConfig(timezone=timezone, verify_then_condense=verify)
    store, worker = _worker(db, model, base_url, schedule, config, judge=judge or verify)
    try:
        if once:
            with _stop_on_signals() as stop:  # a signal lets the batch in progress finish
                reports = worker.tick(stop, on_report=lambda report: _print(report, as_json))
            most = schedule.max_batches_per_tick
            if len(reports) == most and reports[-1].status == ConsolidationStatus.CONSOLIDATED:
                err.print(f"stopped after {most} batches, a tick's most: more may wait (run again)")
            failed = (ConsolidationStatus.FAILED, ConsolidationStatus.BACKING_OFF)
            if any(r.status in failed for r in reports):  # backing off: it failed, waits
                raise typer.Exit(EXIT_ERROR)
            return
        _loop(worker, as_json)
    finally:
        store.close()


def _worker(
    db: str | None,
    model: str,
    base_url: str | None,
    schedule: ConsolidatorConfig,
    config: LearningConfig,
    *,
    judge: bool,
) -> tuple[Store, Consolidator]:
    """The Store (a database not at head is refused) and the consolidator on it."""
    from philont import migrate
    from philont.learning import Consolidator, ModelJudge

    url = resolve_existing(db)
    try:
        client = model_from_spec(model, base_url=base_url)  # a bad script file: nothing opened
        migrate.check(url)
        store = open_store(url)
    except SchemaOutOfDateError as exc:
        raise fail(exc, code=EXIT_OUT_OF_DATE) from exc
    except PhilontError as exc:
        raise fail(exc) from exc
    worker = Consolidator.for_store(
        store, client, config=config, schedule=schedule,
        judge=ModelJudge(client) if judge else None,
    )  # fmt: skip
    return store, worker


def _how_to_stop() -> str:
    """What the user can send: Ctrl-C, unless the process ignores it (a job a script started
    with ``&``): SIGTERM then."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return f"SIGTERM (kill {os.getpid()})"
    return "Ctrl-C"


def _stopping() -> str:
    return (
        "stopping: a batch in progress is written first (its model may take minutes); "
        f"{_how_to_stop()} again to stop now, giving it up\n"
    )


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event SIGINT and SIGTERM set (instead of killing the process mid-batch), saying so
    on stderr; a second one stops now (``KeyboardInterrupt``: the batch in progress is given
    up, uncounted, and the command says ``interrupted``, exit 130). The second one used to be
    ignored too: the command went on until the batch was done, however long its model took."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        os.write(2, _stopping().encode())  # not the console: it may be printing right now

    previous = {  # one the process ignores stays ignored (as interrupts.watch leaves it)
        sig: signal.signal(sig, on_signal)
        for sig in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _loop(worker: Consolidator, as_json: bool) -> None:
    with _stop_on_signals() as stop:
        if not as_json:
            out.print(Text(f"consolidating; stop with {_how_to_stop()}"))
        worker.run_forever(stop, on_report=lambda report: _print(report, as_json))
    if not as_json:
        out.print(Text("stopped"))


def _agreement(mem: Memory) -> list[JudgeAgreement]:
    from philont.learning import CaseBook

    book = CaseBook(mem)
    book.observe()
    return book.agreement()


def judge_report(db: DbOption = None, as_json: JsonOption = False) -> None:
    """How often the judge's verdicts agreed with the outcomes attribution observed, per skill
    (verified ↔ success, failed ↔ failure)."""
    from philont import migrate

    url = resolve_existing(db)
    try:
        migrate.check(url)
        with open_store(url) as store:
            rows = store.run(_agreement)
    except SchemaOutOfDateError as exc:
        raise fail(exc, code=EXIT_OUT_OF_DATE) from exc
    except PhilontError as exc:
        raise fail(exc) from exc
    data: list[dict[str, Any]] = [{**r.model_dump(mode="json"), "rate": r.rate} for r in rows]
    if as_json:
        emit(data)
        return
    if not rows:
        out.print("no verdicts yet (run the consolidator with --judge or --verify)")
        return
    table = Table("skill", "verdicts", "observed", "agreed", "agreement")
    for row in data:
        rate = "-" if row["rate"] is None else f"{row['rate']:.0%}"
        table.add_row(
            Text(row["skill"] or "(all)"),
            str(row["verdicts"]),
            str(row["observed"]),
            str(row["agreed"]),
            rate,
        )
    out.print(table)


skills_app = cli_inspect.skills_app
"""``philont skills``: the inspection commands and ``judge-report``."""
skills_app.command("judge-report")(judge_report)

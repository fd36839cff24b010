"""The idle consolidator: when the timeline has been quiet for a while, take the next batch of
messages after the cursor and run the loop over it (extraction, reflection, summaries, and the
judge), one batch at a time.

The cursor is Philont's fact ``system.last_consolidated_ts`` (epoch ms of the last message
processed), so Philont and philont share it. What differs from Philont's consolidator (§10):

* The cursor moves only in the transaction that writes the batch's results: a failed model call
  loses nothing; the batch is retried after a backoff (``retry_base`` doubled per failure of
  the same kind). The two kinds are counted apart, in the batch row's report: an answer that
  could not be read (``unreadable_answers``, at most ``answer_attempts`` of them) and every
  other failure, an outage (``outages``: the model unreachable, erring or silent, storage
  trouble), retried without limit and never spending the answers' budget.
* A batch never splits the messages of one millisecond (:func:`~philont.domain.consolidation.
  batch_end`), nor, when its limit cuts it, a run (:mod:`philont.learning.bounds`).
* The cursor fact is updated in place: no new fact row per batch (Philont superseded it each
  time). Only the very first cursor is a new row.
* A batch is claimed atomically before the model is asked: its row in
  ``philont_learning_batches`` (unique per cursor value) is inserted, or taken over with a
  conditional update when it failed or its claimer's lease ran out. The results are written only
  if the claim is still ours and the cursor has not moved, so two processes never consolidate
  the same batch, and a process that lost its claim writes nothing.
* Messages and tool calls that arrive late (stamped at or before the cursor after it moved
  past their time: a clock stepped back, ``append(at=...)``) are learned from in batches of
  their own, once, the calls with the messages of their time (:mod:`philont.learning.late`);
  the cursor alone, a time, never saw them.
* The claim's lease is renewed while its batch is read and thought on (a heartbeat), but not
  past ``max_hold`` after the claim: a process that died loses it after the lease, one whose
  model call hangs at ``max_hold`` (the last renewal ends the lease there); a slow model keeps
  it up to then.
* No transaction is open while a model thinks: claim, read, think, then write; a unit of work
  that was busy or conflicted (a deadlock) runs again (:func:`philont.db.retry.run_unit`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement

from philont.arguments import checked
from philont.clock import Clock, utc_now
from philont.db.models import Action, LearningBatch, RawMessage
from philont.db.retry import database_failure, is_duplicate, run_unit
from philont.db.types import bumped, to_epoch_ms
from philont.domain.consolidation import retry_delay
from philont.embed.base import Embedder
from philont.errors import InvalidInputError, ModelAnswerError
from philont.learning.batch import Applied, Context, Thought, apply, gather, think
from philont.learning.bounds import next_batch
from philont.learning.config import ConsolidatorConfig, LearningConfig
from philont.learning.cursor import (
    BEFORE_START,
    CURSOR_KEY,
    CURSOR_NAMESPACE,
    expected_cursor,
    read_cursor,
    write_cursor,
)
from philont.learning.late import (
    CALLS_KEY,
    SEEN_KEY,
    Late,
    Seen,
    late_rows,
    load_batch,
    load_late,
    newest_id,
    watermarks,
)
from philont.learning.learner import Config, JudgeOf, Model
from philont.learning.lock import hold_learning_lock
from philont.learning.parse import storable
from philont.learning.prompts import SHOWN_CALLS
from philont.learning.units import UnitsOf
from philont.learning.verify import CaseBook
from philont.learning.window import Window, chars_read
from philont.log import get_logger
from philont.memory import Memory
from philont.schemas.learning import ConsolidationReport, ConsolidationStatus
from philont.store import Store

__all__ = ["CURSOR_KEY", "CURSOR_NAMESPACE", "Consolidator", "read_cursor"]

log = get_logger(__name__)


Status = ConsolidationStatus
NONE_SEEN = Seen()
UNREADABLE_KEY = "unreadable_answers"
"""The key of a batch row's report counting its tries whose answer could not be read."""
OUTAGES_KEY = "outages"
"""The key of a batch row's report counting its tries that failed otherwise (an outage)."""


def _count(report: Any, key: str) -> int:
    """A failure count of a batch row's report (0 when none, or not a count: edited by hand)."""
    value = report.get(key) if isinstance(report, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class _Claim:
    batch_id: int
    after: int
    until: int
    messages: int
    attempts: int
    seen: Seen = NONE_SEEN  # the late-row watermarks (philont.learning.late): claimed, then as read
    late: Late | None = None  # a batch of late rows, the cursor staying
    unreadable: int = 0  # earlier tries whose answer could not be read
    outages: int = 0  # earlier tries that failed otherwise
    kept: Any = None  # the row's report when claimed (a late batch's watermarks stay in it)
    claimed: int | None = None  # the newest message id at the claim (a batch after the cursor)
    taken_at: datetime = field(kw_only=True)  # when claimed (its lease renewed up to max_hold)


class _LostClaim(Exception):
    """The batch is no longer ours (lease taken over, or the cursor moved): write nothing."""


def _update_batch(
    session: Session, where: Sequence[ColumnElement[bool]], returning: Any, **values: Any
) -> Any:
    """Change the batch row only while ``where`` still holds (a compare-and-set between
    processes): the ``returning`` column, or None when another process changed it first."""
    return session.execute(
        update(LearningBatch)
        .where(*where)
        .values(**values)
        .returning(returning)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()


class Consolidator:
    """Runs the loop over the timeline in batches (see the module docstring).

    ``units`` begins units of work on the memory database (:meth:`for_store` builds it from a
    Store). Call :meth:`tick` from a scheduler of your own, or :meth:`run_forever` with a
    stop event; ``philont consolidate`` does the latter. While a batch is read and thought
    on, ``units`` is also called from a second thread, which renews the claim's lease: each
    call must begin a unit of work of its own, on a Session of its own (``store.begin``); one
    inside a caller's transaction (``store.join``: a Session shared by two threads, and a claim
    nobody commits) is refused, ``InvalidInputError`` naming ``units``.
    """

    @checked
    def __init__(
        self,
        units: UnitsOf,
        model: Model,
        *,
        config: Config | None = None,
        schedule: ConsolidatorConfig | None = None,
        judge: JudgeOf | None = None,
        clock: Clock = utc_now,
        owner: str | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        config = LearningConfig() if config is None else config
        schedule = ConsolidatorConfig() if schedule is None else schedule
        self.units = units
        self.embedder = embedder
        self.model = model
        self.config = config
        self.schedule = schedule
        self.judge = judge
        self.clock = clock
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    @classmethod
    @checked
    def for_store(cls, store: Store, model: Model, **kwargs: Any) -> Consolidator:
        """A consolidator whose units of work are ``store.begin()`` (with the same clock)."""
        clock: Clock = kwargs.setdefault("clock", store.clock)
        kwargs.setdefault("embedder", store.embedder)

        def units(*, write: bool = True) -> Memory:
            return store.begin(write=write, clock=clock)

        return cls(units, model, **kwargs)

    # --- one batch ------------------------------------------------------------------------

    def run_once(self) -> ConsolidationReport:
        """Claim and consolidate at most one batch; never raises for a failed batch (it is
        reported, and retried later)."""
        # read first (SQLite: a deferred unit): most ticks find nothing to claim and need no
        # write lock; one that writes after another process wrote is run again, writing
        claim = run_unit(self._unit, self._claim, write=False)
        if isinstance(claim, ConsolidationReport):
            return claim
        try:
            with self._heartbeat(claim):  # the lease renewed while the batch is read and thought
                read = functools.partial(self._read, claim=claim)
                claim, window, context = run_unit(self._unit, read, write=False)
                thought = think(self.model, window, context, self.config, self.judge)
            self._check_answers(claim, thought)
            if thought.unreadable():  # the last try allowed: kept with what could be read
                claim = dataclasses.replace(claim, unreadable=claim.unreadable + 1)
            applied = run_unit(self._unit, lambda mem: self._finish(mem, claim, window, thought))
        except _LostClaim as exc:
            log.warning("consolidator.lost_claim", batch_id=claim.batch_id, reason=str(exc))
            return self._report(claim, Status.LOST_CLAIM, error=str(exc))
        except Exception as exc:  # retried; logged in one line when typed (log.failure)
            # the report says it; a traceback's locals held the batch's messages (on the command
            # line 174 lines of stderr for an answer that could not be read)
            log.failure("consolidator.batch_failed", exc, batch_id=claim.batch_id)
            return self._fail(claim, exc)
        except BaseException as exc:  # interrupted (Ctrl-C, SystemExit): free the batch now
            self._release(claim, exc)
            raise
        return self._report(
            claim,
            Status.CONSOLIDATED,
            messages=len(window.turns),
            tool_calls=len(window.calls) + window.left.count,
            tool_calls_left_out=window.left.count,
            extraction=applied.extraction,
            reflection=applied.reflection,
            summaries=applied.summaries,
            verdicts=applied.verdicts,
            condensed=applied.condensed_report,
            credited=applied.credited,
            observed=applied.observed,
            tokens_used=thought.tokens_used,
        )

    @property
    def _renew_every(self) -> float:
        """Seconds between renewals of a claim's lease while its batch is thought on: a third
        of the lease, so one failed or slow renewal does not lose it."""
        return self.schedule.lease.total_seconds() / 3

    @contextlib.contextmanager
    def _unit(self, *, write: bool = True) -> Iterator[Memory]:
        """A unit of work of ``units``, refused when it is inside a caller's transaction: its
        Session would be used by two threads at once (the heartbeat's and the batch's), and
        a claim must be committed before the model is asked."""
        with self.units(write=write) as mem:
            if mem.joined:
                raise InvalidInputError.of(
                    "units",
                    "began a unit of work inside a caller's transaction (store.join); each "
                    "call must begin one of its own (store.begin, Consolidator.for_store): "
                    "it is called from two threads and its claims must commit",
                )
            yield mem

    @contextlib.contextmanager
    def _heartbeat(self, claim: _Claim) -> Iterator[None]:
        """Renew the claim's lease (``now + lease``, while it is still ours) every
        :attr:`_renew_every` seconds until the block ends, from a thread of its own, each time
        in a unit of work of its own. A claim whose model took longer than the lease was taken
        over by a second process, which lost it in turn to the first once its own lease ran
        out: with batches that outlast the lease, two processes took each other's claims
        without end, each model call wasted. A process that dies stops renewing: its claim
        lapses after the lease. The renewals stop at ``max_hold`` after the claim (the last
        one ends the lease there): a model call that hangs (no time-out, a stuck socket) kept
        the claim renewed for as long as its process lived, and no process learned again."""
        stop = threading.Event()
        held_until = claim.taken_at + max(self.schedule.max_hold, self.schedule.lease)

        def renew(mem: Memory, until: datetime) -> Any:
            return _update_batch(
                mem.session, self._ours(claim), LearningBatch.id, lease_until=until
            )

        def beat() -> None:
            while not stop.wait(self._renew_every):
                until = min(self.clock() + self.schedule.lease, held_until)
                try:
                    if run_unit(self._unit, functools.partial(renew, until=until)) is None:
                        return  # no longer ours: _finish says so
                except Exception as exc:  # tried again at the next beat
                    log.failure("consolidator.renew_failed", exc, batch_id=claim.batch_id)
                    continue
                if until >= held_until:  # held long enough: the lease runs out at held_until
                    log.warning("consolidator.hold_ended", batch_id=claim.batch_id, until=until)
                    return

        thread = threading.Thread(target=beat, name=f"philont-lease-{claim.batch_id}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _read(self, mem: Memory, claim: _Claim) -> tuple[_Claim, Window, Context]:
        """The batch's messages and tool calls, what the prompts need, and the claim with the
        watermarks after the batch (written with it)."""
        calls, chars = self._max_calls, self._max_chars
        if claim.late is None:
            window, seen = load_batch(
                mem.session,
                claim.after,
                claim.until,
                claim.seen,
                max_calls=calls,
                max_chars=chars,
                claimed=claim.claimed,
                max_joining=self.schedule.batch_size,
            )
        else:
            window, seen = load_late(
                mem.session, claim.late, claim.after, max_calls=calls, max_chars=chars
            )
        context = gather(mem, window, self.config, self.judge)
        return dataclasses.replace(claim, seen=seen), window, context

    @property
    def _max_calls(self) -> int:
        """The most tool calls a batch loads, the newest: what its prompts can show (the
        newest :data:`SHOWN_CALLS`), and with a judge the newest ``max_window_messages`` (a
        host's window's bound) when that is more, the runs' traces; a run begun before them is
        not judged."""
        if self.judge is None:
            return SHOWN_CALLS
        return max(SHOWN_CALLS, self.config.max_window_messages)

    @property
    def _max_chars(self) -> int | None:
        """How much of each message a batch reads: what its prompts show of it (all of it with
        a judge: its runs' goals and answers are the judge's, and a verified case keeps them)."""
        return chars_read(self.config, judged=self.judge is not None)

    def _check_answers(self, claim: _Claim, thought: Thought) -> None:
        """An answer nothing could be read from fails the batch (it is asked again after the
        backoff) until the batch's ``answer_attempts``-th such answer, which keeps what could be
        read. Only unreadable answers count: a batch whose model was unreachable for its
        first tries still gets every one of them (they shared one count, and an outage of
        ``answer_attempts`` tries left the first unreadable answer no second ask)."""
        unreadable = thought.unreadable()
        nth = claim.unreadable + 1
        if unreadable and nth < self.schedule.answer_attempts:
            raise ModelAnswerError(
                f"unreadable answer ({'; '.join(unreadable)}); unreadable answer {nth} of "
                f"{self.schedule.answer_attempts}",
                attempt=nth,
            )

    def _report(self, claim: _Claim, status: Status, **kw: Any) -> ConsolidationReport:
        fields: dict[str, Any] = {
            "batch_id": claim.batch_id,
            "after_ts": claim.after,
            "until_ts": claim.until,
            "late": claim.late is not None,
            "messages": claim.messages,
            "attempts": claim.attempts,
            "unreadable_answers": claim.unreadable,
            "outages": claim.outages,
        }
        return ConsolidationReport(status=status, **(fields | kw))

    def _claim(self, mem: Memory) -> _Claim | ConsolidationReport:
        session = mem.session
        now = self.clock()
        # A message stamped later than now (a skewed clock, an import) is neither activity nor
        # part of a batch until its time comes: it would otherwise keep the timeline "not idle"
        # until then, and learning would stop for everything else.
        newest = session.scalar(
            select(func.max(RawMessage.timestamp)).where(RawMessage.timestamp <= now)
        )
        if newest is None:
            return ConsolidationReport(status=Status.NOTHING_NEW)
        if now - newest < self.schedule.idle_after:
            return ConsolidationReport(status=Status.NOT_IDLE)
        cursor = read_cursor(session)
        after = BEFORE_START if cursor is None else cursor
        newest_ms = to_epoch_ms(newest)
        if cursor is None and not self.schedule.backlog:
            return self._anchor(mem, newest_ms, now)
        claimed = newest_id(session)  # what comes after is bounded when it joins the batch
        seen = self._watermarks(session, cursor, after)
        late = late_rows(session, after, seen, self.schedule.batch_size)
        if late is not None:  # stamped at or before the cursor after it moved: first
            return self._take(session, after, after, late.count, now, seen=seen, late=late)
        if newest_ms <= after:
            return ConsolidationReport(status=Status.NOTHING_NEW, after_ts=after)
        batch = next_batch(session, after, now, self.schedule.batch_size)
        if not batch.cut and batch.count < self.schedule.min_messages:
            return ConsolidationReport(status=Status.TOO_FEW, after_ts=after, messages=batch.count)
        return self._take(session, after, batch.until, batch.count, now, seen=seen, claimed=claimed)

    @staticmethod
    def _watermarks(session: Session, cursor: int | None, after: int) -> Seen:
        """The late-row watermarks at the cursor; one none kept yet for (a database consolidated
        by Philont or an older philont) takes what came before as learned from."""
        messages, calls = watermarks(session, after)
        if messages is None:
            messages = 0 if cursor is None else newest_id(session, until_ms=after)
        if calls is None:
            calls = 0 if cursor is None else newest_id(session, until_ms=after, table=Action)
        return Seen(messages, calls)

    def _take(
        self,
        session: Session,
        after: int,
        until: int,
        count: int,
        now: datetime,
        *,
        seen: Seen = NONE_SEEN,
        late: Late | None = None,
        claimed: int | None = None,
    ) -> _Claim | ConsolidationReport:
        """Claim the batch after ``after``: insert its row, or take over a failed or abandoned
        one; every other case is somebody else's batch."""
        lease_until = now + self.schedule.lease
        row = session.scalars(
            select(LearningBatch)
            .where(LearningBatch.after_ts == after)
            .execution_options(populate_existing=True)
        ).first()
        if row is None:
            fresh = _Claim(0, after, until, count, 1, seen, late, claimed=claimed, taken_at=now)
            return self._insert_claim(session, fresh, now)
        if row.status == "done" and read_cursor(session) != expected_cursor(after):
            # done by another process since we read the cursor (PostgreSQL: each statement
            # sees what was committed before it): not ours to take over
            return ConsolidationReport(status=Status.CLAIMED_ELSEWHERE, after_ts=after)
        if row.status == "claimed" and row.lease_until is not None and row.lease_until > now:
            return ConsolidationReport(status=Status.CLAIMED_ELSEWHERE, after_ts=after)
        if row.status == "failed" and row.retry_at is not None and row.retry_at > now:
            return ConsolidationReport(
                status=Status.BACKING_OFF,
                batch_id=row.id,
                after_ts=after,
                attempts=row.attempts,
                unreadable_answers=_count(row.report, UNREADABLE_KEY),
                outages=_count(row.report, OUTAGES_KEY),
                retry_at=row.retry_at,
                error=row.last_error,
            )
        taken = _update_batch(
            session,
            (  # the row as we saw it
                LearningBatch.id == row.id,
                LearningBatch.status == row.status,
                LearningBatch.attempts == row.attempts,
            ),
            LearningBatch.attempts,
            status="claimed",
            owner=self.owner,  # a done row is one of late rows: its attempts start again
            attempts=1 if row.status == "done" else bumped(LearningBatch.attempts),
            claimed_at=now,
            lease_until=lease_until,
            until_ts=until,
            message_count=count,
            retry_at=None,
        )
        if taken is None:
            return ConsolidationReport(status=Status.CLAIMED_ELSEWHERE, after_ts=after)
        again = row.status != "done"  # a done row is one of late rows: its counts start again
        return _Claim(
            row.id,
            after,
            until,
            count,
            taken,
            seen,
            late,
            unreadable=_count(row.report, UNREADABLE_KEY) if again else 0,
            outages=_count(row.report, OUTAGES_KEY) if again else 0,
            kept=row.report,
            claimed=claimed,
            taken_at=now,
        )

    def _insert_claim(
        self, session: Session, claim: _Claim, now: datetime
    ) -> _Claim | ConsolidationReport:
        fresh = LearningBatch(
            after_ts=claim.after,
            until_ts=claim.until,
            message_count=claim.messages,
            status="claimed",
            owner=self.owner,
            attempts=1,
            claimed_at=now,
            lease_until=now + self.schedule.lease,
            tokens_used=0,
        )
        try:
            with session.begin_nested():
                session.add(fresh)
        except IntegrityError as exc:
            if not is_duplicate(exc, LearningBatch.__tablename__, "after_ts"):
                raise  # a host's trigger, a check, ...: no other process's claim
            # another process inserted it first (after_ts is unique)
            return ConsolidationReport(status=Status.CLAIMED_ELSEWHERE, after_ts=claim.after)
        return dataclasses.replace(claim, batch_id=fresh.id)

    def _anchor(self, mem: Memory, newest_ms: int, now: datetime) -> ConsolidationReport:
        """Philont's first run: the cursor starts at the newest message, the past is skipped.
        The batch row of ``BEFORE_START`` makes the anchoring atomic too."""
        claim = self._take(mem.session, BEFORE_START, newest_ms, 0, now)
        if isinstance(claim, ConsolidationReport):
            return claim
        write_cursor(mem, newest_ms)
        report = {  # the past is skipped
            "anchored": True,
            SEEN_KEY: newest_id(mem.session),
            CALLS_KEY: newest_id(mem.session, table=Action),
        }
        self._close(mem.session, claim, tokens=0, report=report)
        log.info("consolidator.anchored", cursor=newest_ms)
        return self._report(claim, Status.ANCHORED)

    def _ours(self, claim: _Claim) -> tuple[ColumnElement[bool], ...]:
        """The batch row is still our claim (one taken over after our lease has a new owner)."""
        return (
            LearningBatch.id == claim.batch_id,
            LearningBatch.owner == self.owner,
            LearningBatch.status == "claimed",
        )

    def _close(
        self, session: Session, claim: _Claim, *, tokens: int, report: dict[str, Any]
    ) -> None:
        done = _update_batch(
            session,
            self._ours(claim),
            LearningBatch.id,
            status="done",
            finished_at=self.clock(),
            lease_until=None,
            tokens_used=tokens,
            last_error=None,
            report=report,
        )
        if done is None:
            raise _LostClaim("another process took the batch over (our lease ran out)")

    def _finish(self, mem: Memory, claim: _Claim, window: Any, thought: Any) -> Applied:
        cursor = read_cursor(mem.session)
        if cursor != expected_cursor(claim.after):
            raise _LostClaim(f"the cursor moved to {cursor} while the batch was worked on")
        applied = apply(mem, window, thought, self.config, judge_name=self._judge_name)
        self._close(
            mem.session,
            claim,
            tokens=thought.tokens_used,
            report={
                "facts": applied.extraction.facts,
                "notes": applied.extraction.notes,
                "skills_created": applied.reflection.created,
                "skills_updated": applied.reflection.updated,
                "summaries": sum(1 for s in applied.summaries if s.written),
                "verdicts": len(applied.verdicts),
                UNREADABLE_KEY: claim.unreadable,
                OUTAGES_KEY: claim.outages,
                SEEN_KEY: claim.seen.messages,
                CALLS_KEY: claim.seen.calls,
            },
        )
        if claim.late is None:  # late rows leave the cursor where it is
            write_cursor(mem, claim.until)
        log.info("consolidator.batch_done", batch_id=claim.batch_id, until=claim.until)
        return applied

    @property
    def _judge_name(self) -> str:
        return getattr(self.judge, "name", "judge") if self.judge is not None else "judge"

    def _fail(self, claim: _Claim, exc: Exception) -> ConsolidationReport:
        """Count the failure by its kind (an unreadable answer, or an outage) and back off by
        the failures of that kind."""
        now = self.clock()
        if isinstance(exc, ModelAnswerError):
            claim = dataclasses.replace(claim, unreadable=claim.unreadable + 1)
            failures = claim.unreadable
        else:
            claim = dataclasses.replace(claim, outages=claim.outages + 1)
            failures = claim.outages
        retry_at = now + retry_delay(
            failures, base=self.schedule.retry_base, cap=self.schedule.retry_max
        )
        # the message may hold a client's or server's text: as it is, a NUL or a lone
        # surrogate in it failed the row's write (the batch stayed claimed until its lease ran
        # out, not backed off) and the report's printing (a traceback on the command line)
        # and a database's error its statement's parameters (the batch's messages): its kind
        shown = database_failure(exc) or exc
        error = storable(f"{getattr(shown, 'code', type(exc).__name__)}: {shown}"[:1_000])
        kept = claim.kept if isinstance(claim.kept, dict) else {}
        report = kept | {UNREADABLE_KEY: claim.unreadable, OUTAGES_KEY: claim.outages}
        try:
            self._mark_failed(claim, retry_at, error, report=report)
        except Exception as exc:  # the claim then lapses with its lease, and the batch is retried
            log.failure("consolidator.fail_not_recorded", exc, batch_id=claim.batch_id)
        return self._report(claim, Status.FAILED, error=error, retry_at=retry_at)

    def _release(self, claim: _Claim, exc: BaseException) -> None:
        """An interrupted batch is not a failed one: give it up at once, uncounted, so the next
        run takes it (instead of finding it claimed until our lease runs out)."""
        error = f"interrupted ({type(exc).__name__}) before it was written"
        try:
            self._mark_failed(claim, self.clock(), error, attempts=claim.attempts - 1)
        except Exception as err:  # the claim then lapses with its lease
            log.failure("consolidator.release_failed", err, batch_id=claim.batch_id)
        log.warning("consolidator.interrupted", batch_id=claim.batch_id)

    def _mark_failed(
        self,
        claim: _Claim,
        retry_at: datetime,
        error: str,
        *,
        attempts: int | None = None,
        report: dict[str, Any] | None = None,
    ) -> None:
        kept: dict[str, Any] = {} if attempts is None else {"attempts": attempts}
        if report is not None:
            kept["report"] = report
        failed = dict(status="failed", owner=None, lease_until=None, retry_at=retry_at, **kept)
        run_unit(
            self._unit,
            lambda mem: _update_batch(
                mem.session, self._ours(claim), LearningBatch.id, last_error=error, **failed
            ),
        )

    # --- scheduling -----------------------------------------------------------------------

    def tick(
        self,
        stop: threading.Event | None = None,
        *,
        on_report: Callable[[ConsolidationReport], None] | None = None,
    ) -> list[ConsolidationReport]:
        """Consolidate batch after batch while there is work (at most
        ``max_batches_per_tick``); for a host's own scheduler. Returns every report;
        ``on_report`` also gets each one as soon as its batch is done (progress)."""
        reports = []
        for _ in range(self.schedule.max_batches_per_tick):
            report = self.run_once()
            if report.status != Status.CONSOLIDATED:  # a batch's apply has just attributed
                report = self._attribute(report)
            reports.append(report)
            if on_report is not None:
                on_report(report)
            if report.status != Status.CONSOLIDATED or (stop is not None and stop.is_set()):
                break
        self._embed(stop)
        return reports

    def _attribute(self, report: ConsolidationReport) -> ConsolidationReport:
        """Decide the skill uses whose attribution window has closed since the last batch, in a
        unit of work of its own (the reflector's run, then the judge's observed outcomes):
        a use whose window was still open at its batch waited for a later batch, and when no
        message came (the conversation's last use) its skill's counts never moved. Each use
        is decided once: the reflector claims it with a compare-and-set (a later batch, or
        another consolidator at the same time, finds it taken), under the learning lock like
        every writer of the loop. A read comes first (:meth:`ReflectorService.due
        <philont.services.reflector.ReflectorService.due>`, :meth:`CaseBook.observable`):
        when nothing is to be decided, as on most idle ticks, neither the lock nor a writing
        unit of work is taken. One run per tick; its counts go into ``report`` (the tick's
        last); a failure is logged and retried next tick, never fails the tick."""

        def due(mem: Memory) -> bool:
            return mem.reflector.due() > 0 or CaseBook(mem).observable()

        def decide(mem: Memory) -> tuple[int, int]:
            hold_learning_lock(mem)
            credited = len(mem.reflector.run().credited)
            return credited, CaseBook(mem).observe()

        try:
            if not run_unit(self._unit, due, write=False):
                return report
            credited, observed = run_unit(self._unit, decide)
        except Exception as exc:
            log.failure("consolidator.attribution_failed", exc)
            return report
        if credited or observed:
            log.info("consolidator.attributed", credited=credited, observed=observed)
        return report.model_copy(update={"credited": credited, "observed": observed})

    def _embed(self, stop: threading.Event | None) -> None:
        """Issue #18: with an embedder, embed what is pending (a few batches per tick); a
        failure is logged and retried next tick, never fails the tick."""
        if self.embedder is None:
            return
        from philont.embed.index import backfill

        try:
            backfill(
                self._unit, self.embedder, max_batches=self.schedule.max_batches_per_tick, stop=stop
            )
        except Exception as exc:
            log.failure("consolidator.embed_failed", exc)

    def run_forever(
        self,
        stop: threading.Event,
        *,
        on_report: Callable[[ConsolidationReport], None] | None = None,
    ) -> None:
        """Tick every ``schedule.interval`` until ``stop`` is set; a batch in progress is
        finished (or failed) first, so stopping leaves no half-written batch."""
        while not stop.is_set():
            try:
                self.tick(stop, on_report=on_report)
            except Exception as exc:  # storage trouble outside a batch: try again next interval
                log.failure("consolidator.tick_failed", exc)
            stop.wait(self.schedule.interval.total_seconds())

"""The loop's steps for a host inside its own unit of work: reflect on a session or a time range,
extract facts and notes, summarize, judge a run, condense verified cases.

Unlike the consolidator, these call the model while the host's transaction is open (on SQLite a
write transaction holds the file's lock meanwhile, on PostgreSQL the agent's learning lock is
held from the Learner's making): use them for one session at a time, or use
:class:`~philont.learning.consolidate.Consolidator`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, NoReturn

from pydantic import PlainValidator

from philont.arguments import checked
from philont.errors import InvalidInputError, SessionNotFoundError
from philont.finds import finds
from philont.learning.batch import Applied, Context, apply, gather, think
from philont.learning.config import LearningConfig
from philont.learning.extract import MemoryWriter, ask_for_memories
from philont.learning.lock import hold_learning_lock
from philont.learning.skills import SkillWriter, ask_for_skills
from philont.learning.summaries import ask_for_summaries, long_sessions, write_summaries
from philont.learning.verify import CaseBook, Judge
from philont.learning.window import Run, Window, chars_read, load_range, load_session
from philont.llm.base import ModelClient
from philont.memory import Memory
from philont.schemas import inputs
from philont.schemas.learning import (
    ExtractionReport,
    JudgeAgreement,
    SkillReflectionReport,
    SummaryReport,
    VerdictRecord,
)
from philont.services.base import Service

__all__ = ["Config", "JudgeOf", "Learner", "Model"]


_SCOPE = ("session_id", "since", "until")


def _no_session(
    _learner: Any,
    *,
    session_id: str,
    since: datetime | None = None,
    until: datetime | None = None,
    **_: Any,
) -> NoReturn:
    """A window (a learning step) of a session id this database cannot hold: its scope
    checked as :meth:`Learner.window` checks it, then the session is not found."""
    if since is not None or until is not None:
        raise InvalidInputError.of_together(_SCOPE, "give a session_id or a time range, not both")
    raise SessionNotFoundError(
        f"session_id: no timeline session {session_id!r}", session_id=session_id
    )


"""The arguments that choose a learning window: one session, or a time range."""


def _model(value: object) -> object:
    if not isinstance(value, ModelClient):
        what = "a model client (complete(prompt) -> Completion)"
        raise ValueError(f"must be {what}, got {value!r:.80}")
    return value


def _config(value: object) -> object:
    if not isinstance(value, LearningConfig):
        raise ValueError(f"must be a LearningConfig, got {value!r:.80}")
    return value


def _judge(value: object) -> object:
    if not isinstance(value, Judge):
        raise ValueError(f"must be a Judge (a name and judge(run)), got {value!r:.80}")
    return value


# The parts a Learner or Consolidator is made of, each refused by name on entry when it is not
# what it must be (a model of None or a config given as a dict used to fail later, on every
# call or batch, as an AttributeError or a model error).
Model = Annotated[ModelClient, PlainValidator(_model)]
Config = Annotated[LearningConfig, PlainValidator(_config)]
JudgeOf = Annotated[Judge, PlainValidator(_judge)]


class Learner(Service):
    """The self-learning loop over one unit of work (flushes, never commits).

    Making it takes the agent's learning lock (:mod:`philont.learning.lock`; PostgreSQL only)
    for the rest of the transaction, so make it first in the unit of work: a unit that stored
    a fact or a note before may deadlock with a consolidator writing the same one (PostgreSQL
    then ends one of them with :class:`~philont.errors.TransactionConflictError`; run it
    again, as :meth:`Store.run <philont.store.Store.run>` does)."""

    @checked
    def __init__(
        self,
        mem: Memory,  # a unit of work, not a Store (AttributeError before)
        model: Model,
        *,
        config: Config | None = None,
        judge: JudgeOf | None = None,
    ) -> None:
        super().__init__(mem)
        config = LearningConfig() if config is None else config
        self.model = model
        self.config = config
        self.judge = judge
        # The agent's learning lock comes first in a transaction, before any key lock
        # (Backend.serialize): taken now, the unit's later writes cannot deadlock with a
        # consolidator, which holds it while it writes the same facts and notes.
        hold_learning_lock(mem)

    @finds("session_id", absent=_no_session)
    def window(
        self,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> Window:
        """One session, or the time range ``since <= t <= until`` (give one or the other): the
        newest ``max_window_messages`` messages and tool calls, of each message what the
        prompts show (all of it with a judge: :func:`~philont.learning.window.chars_read`)."""
        limit = self.config.max_window_messages
        chars = chars_read(self.config, judged=self.judge is not None)
        if session_id is not None:
            if since is not None or until is not None:
                raise InvalidInputError.of_together(
                    _SCOPE, "give a session_id or a time range, not both"
                )
            if not isinstance(session_id, str) or not session_id.strip():
                raise InvalidInputError.of(
                    "session_id", f"must be a non-blank string, got {session_id!r}"
                )
            window = load_session(self.mem.session, session_id, limit=limit, chars=chars)
            if not window.turns and self.mem.timeline.get_session(session_id) is None:
                # a mistyped id used to "learn" from nothing and report 0 messages
                _no_session(self, session_id=session_id)
            return window
        if since is None or until is None:
            raise InvalidInputError.of_together(
                _SCOPE, "give a session_id, or both since and until"
            )
        since, until = inputs.window(since, until, what="learning window")
        assert since is not None and until is not None  # both were given
        return load_range(self.mem.session, since, until, limit=limit, chars=chars)

    def learn(self, window: Window) -> Applied:
        """The whole loop over a window, as the consolidator runs it on a batch."""
        context = gather(self.mem, window, self.config, self.judge)
        thought = think(self.model, window, context, self.config, self.judge)
        name = self.judge.name if self.judge is not None else "judge"
        return apply(self.mem, window, thought, self.config, judge_name=name)

    @finds("session_id", absent=_no_session)
    def reflect(
        self,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> SkillReflectionReport:
        """Ask the model for positive skills and anti-patterns and write them by the rules
        (created, updated, merged, unchanged, refused, rejected — each with its reason)."""
        window = self.window(session_id=session_id, since=since, until=until)
        answer, tokens = ask_for_skills(self.model, window, self.config)
        return SkillWriter(self.mem, self.config).write(
            answer, tag=window.tag, messages=len(window.turns), tokens_used=tokens
        )

    @finds("session_id", absent=_no_session)
    def extract(
        self,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> ExtractionReport:
        """Ask the model for store_fact / store_note actions and write those the tools accept."""
        window = self.window(session_id=session_id, since=since, until=until)
        answer, tokens = ask_for_memories(self.model, window, self.config)
        return MemoryWriter(self.mem, self.config).write(answer, window, tokens_used=tokens)

    @finds("session_id", absent=_no_session)
    def summarize(self, session_id: str) -> list[SummaryReport]:
        """Write (or extend) the summary note of a long session; nothing for a short one."""
        window = self.window(session_id=session_id)
        sessions = long_sessions(self.mem.session, window, self.config)
        return write_summaries(
            self.mem, ask_for_summaries(self.model, window, sessions, self.config)
        )

    def judge_run(self, run: Run) -> VerdictRecord:
        """Have the judge give its verdict on a run and keep it (a verified run becomes a case).
        A run is judged once: one that has a verdict gets it back, and the judge is not asked."""
        if self.judge is None:
            raise InvalidInputError.of("judge", "this Learner was made without one")
        return CaseBook(self.mem)._judged(run, self.judge)

    def condense(self) -> list[SkillReflectionReport]:
        """Condense the verified cases that have no skill yet (verify-then-condense mode)."""
        if not self.config.verify_then_condense:
            raise InvalidInputError.of(
                "config", "condensing needs LearningConfig(verify_then_condense=True)"
            )
        empty = Window("condense", (), ())
        context = Context(pending_cases=tuple(CaseBook(self.mem).pending_cases()))
        thought = think(self.model, empty, context, self.config)
        return apply(self.mem, empty, thought, self.config).condensed

    def judge_report(self) -> list[JudgeAgreement]:
        """The judge's agreement with attribution, per skill and overall (last row)."""
        book = CaseBook(self.mem)
        book.observe()
        return book.agreement()

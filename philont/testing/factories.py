"""factory-boy factories for every table, to seed test data (``pip install 'philont[testing]'``).

    with factories.bound(session):               # or a unit of work: bound(mem)
        fact = factories.FactFactory.create(namespace="user.home", pinned=True)   # -> m.Fact
        factories.RawMessageFactory.create(in_new_session=True)

Persistence is "flush": ids are assigned and the FTS triggers fire, but the caller's transaction
decides whether anything is committed. ``bound`` sets the session for the block and restores the
previous one after it (blocks nest); a host's subclass of any factory here is bound as well.
``Factory.create(...)`` and ``create_batch(...)`` are typed (the model's class); parameter names
follow the read models (``grade=`` for a skill, as ``SkillRecord.grade``). Related rows come
from sub-factories (a message ``in_new_session``, a recipe's skill, a node's reasoning session).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar, cast

import factory
from factory.alchemy import SQLAlchemyModelFactory
from sqlalchemy.orm import Session

from philont.db import models as m
from philont.domain.kinds import FactKind, Role, SkillKind
from philont.domain.maturity import Grade
from philont.memory import Memory

M = TypeVar("M")

BASE_TIME = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def _uuid() -> str:
    return str(uuid.uuid4())


def _at(n: int) -> datetime:
    return BASE_TIME + timedelta(minutes=n)


_SESSION: ContextVar[Session | None] = ContextVar("philont_factory_session", default=None)


def _current_session() -> Session:
    session = _SESSION.get()
    if session is None:
        raise RuntimeError(
            "no session for the factories: use `with factories.bound(session):` (or bind())"
        )
    return session


class _Base(SQLAlchemyModelFactory, Generic[M]):
    """Every factory here (and a host's subclass) takes its session from ``bound``/``bind``."""

    class Meta:
        abstract = True
        sqlalchemy_session_factory = _current_session
        sqlalchemy_session_persistence = "flush"

    @classmethod
    def create(cls, **kwargs: Any) -> M:
        """A flushed row of the model (typed)."""
        return cast(M, super().create(**kwargs))

    @classmethod
    def create_batch(cls, size: int, **kwargs: Any) -> list[M]:
        return cast(list[M], super().create_batch(size, **kwargs))


class RawSessionFactory(_Base[m.RawSession]):
    class Meta:
        model = m.RawSession

    id = factory.LazyFunction(_uuid)
    started_at = factory.Sequence(_at)
    ended_at = None


class RawMessageFactory(_Base[m.RawMessage]):
    class Meta:
        model = m.RawMessage

    session_id = "global"
    role = Role.USER
    content = factory.Sequence(lambda n: f"message number {n} about the Berlin apartment")
    timestamp = factory.Sequence(_at)

    class Params:
        # a session of its own (a RawSessionFactory row) instead of the global one
        in_new_session = factory.Trait(
            session_id=factory.LazyFunction(lambda: RawSessionFactory.create().id)
        )


class NoteFactory(_Base[m.Note]):
    class Meta:
        model = m.Note

    id = factory.LazyFunction(_uuid)
    content = factory.Sequence(lambda n: f"note {n}: the user prefers tea over coffee")
    importance = 0.5
    created_at = factory.Sequence(_at)

    class Params:
        forgotten = factory.Trait(forgotten_at=factory.LazyAttribute(lambda o: o.created_at))


class FactFactory(_Base[m.Fact]):
    class Meta:
        model = m.Fact

    id = factory.LazyFunction(_uuid)
    namespace = "user"
    key = factory.Sequence(lambda n: f"key_{n}")
    value = factory.Sequence(lambda n: f"value {n}")
    confidence = 1.0
    created_at = factory.Sequence(_at)
    last_accessed_at = factory.LazyAttribute(lambda o: o.created_at)
    fact_kind = FactKind.STATE

    class Params:
        pinned = factory.Trait(decay_tau_days=-1.0)
        forgotten = factory.Trait(forgotten_at=factory.LazyAttribute(lambda o: o.created_at))
        superseded = factory.Trait(superseded_by=factory.LazyFunction(_uuid))
        event = factory.Trait(
            fact_kind=FactKind.EVENT, occurred_at=factory.LazyAttribute(lambda o: o.created_at)
        )


class ActionFactory(_Base[m.Action]):
    class Meta:
        model = m.Action

    session_id = "global"
    tool_name = "store_fact"
    params = factory.LazyFunction(dict)
    result = "ok"
    success = True
    timestamp = factory.Sequence(_at)


class SkillFactory(_Base[m.Skill]):
    class Meta:
        model = m.Skill

    id = factory.LazyFunction(_uuid)
    name = factory.Sequence(lambda n: f"skill-{n}")
    description = "Convert a markdown file to a Word document"
    trigger_keywords = factory.LazyFunction(lambda: ["markdown", "word", "pandoc"])
    action_template = "1. run pandoc in.md -o out.docx\n2. check the file opens"
    created_at = factory.Sequence(_at)
    kind = SkillKind.POSITIVE
    maturity = factory.SelfAttribute("grade")  # the column; read models call it grade

    class Params:
        grade = Grade.DRAFT
        deprecated = factory.Trait(grade=Grade.DEPRECATED, failure_count=3, consecutive_failures=3)
        stable = factory.Trait(grade=Grade.STABLE, success_count=6, use_count=6)
        playbook = factory.Trait(grade=Grade.PLAYBOOK)
        negative = factory.Trait(kind=SkillKind.NEGATIVE)


class SkillRecipeFactory(_Base[m.SkillRecipe]):
    """A complete recipe (steps, verification, tool policy) of a new skill."""

    class Meta:
        model = m.SkillRecipe

    skill_id = factory.LazyFunction(lambda: SkillFactory.create().id)
    steps = factory.LazyFunction(lambda: ["pandoc in.md -o out.docx", "open out.docx"])
    verification = "out.docx opens and shows the headings"
    tool_policy = factory.LazyFunction(lambda: ["shell"])
    revision = 1
    updated_at = BASE_TIME


class SkillRevisionFactory(_Base[m.SkillRevision]):
    """A replaced revision of a new skill's recipe, with its outcome counts."""

    class Meta:
        model = m.SkillRevision

    skill_id = factory.LazyFunction(lambda: SkillFactory.create().id)
    revision = 1
    description = "Convert a markdown file to a Word document"
    action_template = "1. run pandoc"
    trigger_keywords = factory.LazyFunction(lambda: ["markdown", "word"])
    steps = factory.LazyFunction(lambda: ["pandoc in.md -o out.docx"])
    verification = None
    tool_policy = factory.LazyFunction(lambda: ["shell"])
    success_count = 1
    failure_count = 2
    created_at = BASE_TIME
    replaced_at = factory.LazyFunction(lambda: BASE_TIME + timedelta(days=1))


class AccessLogEntryFactory(_Base[m.AccessLogEntry]):
    class Meta:
        model = m.AccessLogEntry

    target_type = "fact"
    target_id = factory.LazyFunction(_uuid)
    accessed_at = factory.Sequence(_at)


class CalendarEventFactory(_Base[m.CalendarEvent]):
    class Meta:
        model = m.CalendarEvent

    id = factory.LazyFunction(_uuid)
    title = factory.Sequence(lambda n: f"Event {n}")
    starts_at = factory.Sequence(lambda n: _at(60 * 24 * n))
    timezone = "Europe/Berlin"
    created_at = BASE_TIME


class ScheduleFactory(_Base[m.Schedule]):
    class Meta:
        model = m.Schedule

    id = factory.LazyFunction(_uuid)
    name = factory.Sequence(lambda n: f"reminder-{n}")
    next_run_at = factory.Sequence(lambda n: _at(60 * n))
    action_type = "prompt"
    payload = factory.LazyFunction(lambda: {"message": "drink water"})
    created_at = BASE_TIME

    class Params:
        recurring = factory.Trait(cron_expr="interval:3600000")
        disabled = factory.Trait(enabled=False)


class ScheduleOutcomeFactory(_Base[m.ScheduleOutcome]):
    class Meta:
        model = m.ScheduleOutcome

    id = factory.LazyFunction(_uuid)
    schedule_id = factory.LazyFunction(lambda: ScheduleFactory.create().id)
    fired_at = factory.Sequence(_at)
    duration_ms = 1200
    outcome = "ok"
    text_summary = "sent the reminder"
    created_at = factory.LazyAttribute(lambda o: o.fired_at)


class PursuitFactory(_Base[m.Pursuit]):
    class Meta:
        model = m.Pursuit

    id = factory.LazyFunction(_uuid)
    parent_pursuit_id = "default"
    root_pursuit_id = "default"
    title = factory.Sequence(lambda n: f"pursuit {n}")
    intent = "find a flat in Berlin"
    origin = "user"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class DriveConfigFactory(_Base[m.DriveConfig]):
    class Meta:
        model = m.DriveConfig

    id = factory.LazyFunction(_uuid)
    kind = "curiosity"
    trigger_expr = factory.LazyFunction(lambda: {"idle_minutes": 60})
    action_template = factory.LazyFunction(lambda: {"prompt": "anything new?"})
    root_pursuit_id = "default"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class DriveOutcomeFactory(_Base[m.DriveOutcome]):
    class Meta:
        model = m.DriveOutcome

    id = factory.LazyFunction(_uuid)
    drive_id = factory.LazyFunction(lambda: DriveConfigFactory.create().id)
    fired_at = factory.Sequence(_at)
    trigger_snapshot = factory.LazyFunction(dict)
    injected_action = factory.LazyFunction(dict)
    root_pursuit_id = "default"


class MetaFactory(_Base[m.Meta]):
    class Meta:
        model = m.Meta

    key = factory.Sequence(lambda n: f"key_{n}")
    value = "1"


class RoutingRuleFactory(_Base[m.RoutingRule]):
    class Meta:
        model = m.RoutingRule

    task_signature = factory.Sequence(lambda n: f"sig-{n}")
    trigger_condition = "user asks for a conversion"
    carveout = "none"
    evidence = "two successful runs"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class InitiativeFactory(_Base[m.Initiative]):
    class Meta:
        model = m.Initiative

    id = factory.LazyFunction(_uuid)
    kind = "research"
    driver = "curiosity"
    target_ref = "pursuit:default"
    rationale = "nothing happened for a day"
    utility = 0.4
    budget_estimate = 1000
    created_at = BASE_TIME


class AutonomousBudgetFactory(_Base[m.AutonomousBudget]):
    class Meta:
        model = m.AutonomousBudget

    user_id = "default"
    date = factory.Sequence(lambda n: (BASE_TIME + timedelta(days=n)).date().isoformat())


class PushSubscriptionFactory(_Base[m.PushSubscription]):
    class Meta:
        model = m.PushSubscription

    channel = "telegram"
    peer = factory.Sequence(lambda n: f"peer-{n}")
    created_at = BASE_TIME
    updated_at = BASE_TIME


class PlanFactory(_Base[m.Plan]):
    class Meta:
        model = m.Plan

    id = factory.LazyFunction(_uuid)
    session_id = "global"
    steps = factory.LazyFunction(lambda: ["collect", "compare", "decide"])
    created_at = BASE_TIME
    updated_at = BASE_TIME


class ConfigRuleFactory(_Base[m.ConfigRule]):
    class Meta:
        model = m.ConfigRule

    scope = "global"
    key = factory.Sequence(lambda n: f"rule_{n}")
    value = True
    source = "user"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class ReasoningSessionFactory(_Base[m.ReasoningSession]):
    class Meta:
        model = m.ReasoningSession

    id = factory.LazyFunction(_uuid)
    goal = "decide between two flats"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class ReasoningNodeFactory(_Base[m.ReasoningNode]):
    class Meta:
        model = m.ReasoningNode

    id = factory.LazyFunction(_uuid)
    session_id = factory.LazyFunction(lambda: ReasoningSessionFactory.create().id)
    claim = "the cheaper flat is better"
    kind = "hypothesis"
    created_at = BASE_TIME
    updated_at = BASE_TIME


ALL_FACTORIES: tuple[type[_Base[Any]], ...] = (
    RawSessionFactory,
    RawMessageFactory,
    NoteFactory,
    FactFactory,
    ActionFactory,
    SkillFactory,
    SkillRecipeFactory,
    SkillRevisionFactory,
    AccessLogEntryFactory,
    CalendarEventFactory,
    ScheduleFactory,
    ScheduleOutcomeFactory,
    PursuitFactory,
    DriveConfigFactory,
    DriveOutcomeFactory,
    MetaFactory,
    RoutingRuleFactory,
    InitiativeFactory,
    AutonomousBudgetFactory,
    PushSubscriptionFactory,
    PlanFactory,
    ConfigRuleFactory,
    ReasoningSessionFactory,
    ReasoningNodeFactory,
)


def bind(session: Session | Memory | None) -> None:
    """Point every factory (subclasses included) at ``session`` — a Session or a unit of work;
    None unbinds."""
    _SESSION.set(session.session if isinstance(session, Memory) else session)


@contextmanager
def bound(session: Session | Memory) -> Iterator[Session]:
    """``with bound(session): FactFactory.create(...)`` — bind for the block, then restore
    whatever was bound before (blocks nest)."""
    target = session.session if isinstance(session, Memory) else session
    token = _SESSION.set(target)
    try:
        yield target
    finally:
        _SESSION.reset(token)


def create(factory_cls: type[_Base[M]], **kwargs: Any) -> M:
    """``factory_cls.create(**kwargs)``, typed."""
    return factory_cls.create(**kwargs)

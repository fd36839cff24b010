"""factory-boy factories for every table, for seeding test data (``bind(session)`` first).

Persistence is "flush": ids are assigned and the FTS triggers fire, but the caller's transaction
decides whether anything is committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import factory
from factory.alchemy import SQLAlchemyModelFactory
from sqlalchemy.orm import Session

from philont.db import models as m
from philont.domain.kinds import FactKind, Role, SkillKind
from philont.domain.maturity import Grade

BASE_TIME = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def _uuid() -> str:
    return str(uuid.uuid4())


def _at(n: int) -> datetime:
    return BASE_TIME + timedelta(minutes=n)


class _Base(SQLAlchemyModelFactory):
    class Meta:
        abstract = True
        sqlalchemy_session = None
        sqlalchemy_session_persistence = "flush"


class RawSessionFactory(_Base):
    class Meta:
        model = m.RawSession

    id = factory.LazyFunction(_uuid)
    started_at = factory.Sequence(_at)
    ended_at = None


class RawMessageFactory(_Base):
    class Meta:
        model = m.RawMessage

    session_id = "global"
    role = Role.USER
    content = factory.Sequence(lambda n: f"message number {n} about the Berlin apartment")
    timestamp = factory.Sequence(_at)


class NoteFactory(_Base):
    class Meta:
        model = m.Note

    id = factory.LazyFunction(_uuid)
    content = factory.Sequence(lambda n: f"note {n}: the user prefers tea over coffee")
    importance = 0.5
    created_at = factory.Sequence(_at)

    class Params:
        forgotten = factory.Trait(forgotten_at=factory.LazyAttribute(lambda o: o.created_at))


class FactFactory(_Base):
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


class ActionFactory(_Base):
    class Meta:
        model = m.Action

    session_id = "global"
    tool_name = "store_fact"
    params = factory.LazyFunction(dict)
    result = "ok"
    success = True
    timestamp = factory.Sequence(_at)


class SkillFactory(_Base):
    class Meta:
        model = m.Skill

    id = factory.LazyFunction(_uuid)
    name = factory.Sequence(lambda n: f"skill-{n}")
    description = "Convert a markdown file to a Word document"
    trigger_keywords = factory.LazyFunction(lambda: ["markdown", "word", "pandoc"])
    action_template = "1. run pandoc in.md -o out.docx\n2. check the file opens"
    created_at = factory.Sequence(_at)
    kind = SkillKind.POSITIVE
    maturity = Grade.DRAFT

    class Params:
        deprecated = factory.Trait(
            maturity=Grade.DEPRECATED, failure_count=3, consecutive_failures=3
        )
        stable = factory.Trait(maturity=Grade.STABLE, success_count=6, use_count=6)
        playbook = factory.Trait(maturity=Grade.PLAYBOOK)
        negative = factory.Trait(kind=SkillKind.NEGATIVE)


class AccessLogEntryFactory(_Base):
    class Meta:
        model = m.AccessLogEntry

    target_type = "fact"
    target_id = factory.LazyFunction(_uuid)
    accessed_at = factory.Sequence(_at)


class CalendarEventFactory(_Base):
    class Meta:
        model = m.CalendarEvent

    id = factory.LazyFunction(_uuid)
    title = factory.Sequence(lambda n: f"Event {n}")
    starts_at = factory.Sequence(lambda n: _at(60 * 24 * n))
    timezone = "Europe/Berlin"
    created_at = BASE_TIME


class ScheduleFactory(_Base):
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


class ScheduleOutcomeFactory(_Base):
    class Meta:
        model = m.ScheduleOutcome

    id = factory.LazyFunction(_uuid)
    schedule_id = factory.LazyFunction(_uuid)
    fired_at = factory.Sequence(_at)
    duration_ms = 1200
    outcome = "ok"
    text_summary = "sent the reminder"
    created_at = factory.LazyAttribute(lambda o: o.fired_at)


class PursuitFactory(_Base):
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


class DriveConfigFactory(_Base):
    class Meta:
        model = m.DriveConfig

    id = factory.LazyFunction(_uuid)
    kind = "curiosity"
    trigger_expr = factory.LazyFunction(lambda: {"idle_minutes": 60})
    action_template = factory.LazyFunction(lambda: {"prompt": "anything new?"})
    root_pursuit_id = "default"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class DriveOutcomeFactory(_Base):
    class Meta:
        model = m.DriveOutcome

    id = factory.LazyFunction(_uuid)
    drive_id = factory.LazyFunction(_uuid)
    fired_at = factory.Sequence(_at)
    trigger_snapshot = factory.LazyFunction(dict)
    injected_action = factory.LazyFunction(dict)
    root_pursuit_id = "default"


class MetaFactory(_Base):
    class Meta:
        model = m.Meta

    key = factory.Sequence(lambda n: f"key_{n}")
    value = "1"


class RoutingRuleFactory(_Base):
    class Meta:
        model = m.RoutingRule

    task_signature = factory.Sequence(lambda n: f"sig-{n}")
    trigger_condition = "user asks for a conversion"
    carveout = "none"
    evidence = "two successful runs"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class InitiativeFactory(_Base):
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


class AutonomousBudgetFactory(_Base):
    class Meta:
        model = m.AutonomousBudget

    user_id = "default"
    date = factory.Sequence(lambda n: (BASE_TIME + timedelta(days=n)).date().isoformat())


class PushSubscriptionFactory(_Base):
    class Meta:
        model = m.PushSubscription

    channel = "telegram"
    peer = factory.Sequence(lambda n: f"peer-{n}")
    created_at = BASE_TIME
    updated_at = BASE_TIME


class PlanFactory(_Base):
    class Meta:
        model = m.Plan

    id = factory.LazyFunction(_uuid)
    session_id = "global"
    steps = factory.LazyFunction(lambda: ["collect", "compare", "decide"])
    created_at = BASE_TIME
    updated_at = BASE_TIME


class ConfigRuleFactory(_Base):
    class Meta:
        model = m.ConfigRule

    scope = "global"
    key = factory.Sequence(lambda n: f"rule_{n}")
    value = True
    source = "user"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class ReasoningSessionFactory(_Base):
    class Meta:
        model = m.ReasoningSession

    id = factory.LazyFunction(_uuid)
    goal = "decide between two flats"
    created_at = BASE_TIME
    updated_at = BASE_TIME


class ReasoningNodeFactory(_Base):
    class Meta:
        model = m.ReasoningNode

    id = factory.LazyFunction(_uuid)
    session_id = factory.LazyFunction(_uuid)
    claim = "the cheaper flat is better"
    kind = "hypothesis"
    created_at = BASE_TIME
    updated_at = BASE_TIME


ALL_FACTORIES: tuple[type[_Base], ...] = (
    RawSessionFactory,
    RawMessageFactory,
    NoteFactory,
    FactFactory,
    ActionFactory,
    SkillFactory,
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


def bind(session: Session | None) -> None:
    """Point every factory at ``session`` (None unbinds)."""
    for f in ALL_FACTORIES:
        f._meta.sqlalchemy_session = session  # type: ignore[attr-defined]  # SQLAlchemyOptions


@contextmanager
def bound(session: Session) -> Iterator[None]:
    """``with bound(session): FactFactory(...)`` — bind for the block, then unbind."""
    bind(session)
    try:
        yield
    finally:
        bind(None)


def create(factory_cls: type[_Base], **kwargs: Any) -> Any:
    """Typed convenience wrapper around ``factory_cls(**kwargs)``."""
    return factory_cls(**kwargs)

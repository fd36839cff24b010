"""Every table of Philont's schema v31, one module per layer; importing this registers them."""

from philont.db.base import Base
from philont.db.models.calendar import CalendarEvent, Schedule, ScheduleOutcome
from philont.db.models.knowledge import AccessLogEntry, Fact, Note
from philont.db.models.learning import JudgeVerdict, LearningBatch, LearningCase
from philont.db.models.pursuits import DriveConfig, DriveOutcome, Pursuit
from philont.db.models.recipes import SkillRecipe, SkillRevision
from philont.db.models.skills import Skill
from philont.db.models.system import (
    AutonomousBudget,
    ConfigRule,
    Initiative,
    Meta,
    Plan,
    PushSubscription,
    ReasoningNode,
    ReasoningSession,
    RoutingRule,
)
from philont.db.models.timeline import Action, RawMessage, RawSession
from philont.db.models.vectors import (
    MessageCode,
    MessageVector,
    NoteVector,
    SkillVector,
    VectorIndex,
)

__all__ = [
    "AccessLogEntry",
    "Action",
    "AutonomousBudget",
    "CalendarEvent",
    "ConfigRule",
    "DriveConfig",
    "DriveOutcome",
    "Fact",
    "Initiative",
    "JudgeVerdict",
    "LearningBatch",
    "LearningCase",
    "MessageCode",
    "MessageVector",
    "Meta",
    "Note",
    "NoteVector",
    "Plan",
    "Pursuit",
    "PushSubscription",
    "RawMessage",
    "RawSession",
    "ReasoningNode",
    "ReasoningSession",
    "RoutingRule",
    "Schedule",
    "ScheduleOutcome",
    "Skill",
    "SkillRecipe",
    "SkillRevision",
    "SkillVector",
    "VectorIndex",
]
from philont.db.types import locate

locate(Base.metadata.tables.values())  # where each column is, for reports of lenient reads

"""Closed vocabularies of the memory layers (roles, fact kinds, skill kinds, access
targets, schedule kinds)."""

from __future__ import annotations

import enum


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class FactKind(enum.StrEnum):
    STATE = "state"
    EVENT = "event"


class SkillKind(enum.StrEnum):
    POSITIVE = "positive"
    NEGATIVE = "negative"


class AccessTarget(enum.StrEnum):
    FACT = "fact"
    NOTE = "note"
    SKILL = "skill"


class ScheduleKind(enum.StrEnum):
    ONCE = "once"
    INTERVAL = "interval"
    CRON = "cron"

"""The input types of calendar events and schedules (names, messages, rules, zones, projects):
part of the one set of input types (:mod:`philont.schemas.inputs`), with its rules."""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import AfterValidator, Field, PlainValidator, StrictStr, WithJsonSchema

from philont.domain.timepolicy import validate_timezone
from philont.errors import InvalidInputError
from philont.schemas.inputs import (
    MAX_ID_CHARS,
    NON_BLANK_SCHEMA,
    SPACE_CLASS,
    UNICODE,
    advertised,
    non_blank,
)

__all__ = [
    "MAX_PROJECT_CHARS",
    "Author",
    "CronText",
    "ExternalRef",
    "Project",
    "RRuleText",
    "ScheduleId",
    "ScheduleMessage",
    "ScheduleName",
    "Title",
    "ZoneName",
]

PROJECT_PATTERN: Final = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])")


def _project(value: str) -> str:
    value = value.strip()
    if PROJECT_PATTERN.fullmatch(value) is None:
        raise ValueError(
            "must be kebab-case: 2-60 characters of a-z, 0-9 and '-', without a leading or "
            f"trailing hyphen (e.g. 'berlin-flat'), got {value!r}"
        )
    return value


def _zone(value: str) -> str:
    try:
        return validate_timezone(value)
    except InvalidInputError as exc:
        raise ValueError(exc.message) from exc


ScheduleName = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=100,
        description="The task's name.",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(non_blank),
    UNICODE,
]
Author = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=100,
        description="Who created it (a tool, a user, a job).",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(non_blank),
    UNICODE,
]
ScheduleId = Annotated[
    StrictStr,
    Field(min_length=1, max_length=MAX_ID_CHARS, description="Exact task id."),
    UNICODE,
]
ScheduleMessage = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=4000,
        description="Text to send, or the instruction to carry out.",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(non_blank),
    UNICODE,
]
CronText = Annotated[
    StrictStr,
    Field(
        max_length=100,
        description="5-field cron expression, e.g. '0 9 * * 1-5' (weekdays 09:00).",
    ),
    UNICODE,
]


MAX_PROJECT_CHARS: Final = 60


def _project_or_none(value: object) -> str | None:
    """None, or a kebab-case project name; blank text means none (the original ignored a
    blank project too). At most 60 characters as given, surrounding spaces included (the
    length the schema advertises)."""
    if isinstance(value, str) and len(value) > MAX_PROJECT_CHARS:
        raise ValueError(
            "must be kebab-case: 2-60 characters of a-z, 0-9 and '-', at most 60 as given "
            f"(surrounding spaces included), got {len(value)} characters"
        )
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(
            "must be kebab-case: 2-60 characters of a-z, 0-9 and '-' (e.g. 'berlin-flat'), "
            f"got {value!r}"
        )
    return _project(value)


Project = Annotated[
    str | None,
    PlainValidator(_project_or_none),
    WithJsonSchema(
        {
            "anyOf": [
                {
                    "type": "string",
                    "maxLength": MAX_PROJECT_CHARS,
                    "pattern": rf"^[{SPACE_CLASS}]*(?:{PROJECT_PATTERN.pattern})?[{SPACE_CLASS}]*$",
                },
                {"type": "null"},
            ],
            "description": "kebab-case project name (2-60 characters) to associate; blank or "
            "null for none.",
        }
    ),
]
Title = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=300,
        description="What the event is.",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(non_blank),
    UNICODE,
]
RRuleText = Annotated[
    StrictStr,
    Field(
        max_length=500,
        description="RFC 5545 rule, e.g. FREQ=WEEKLY;BYDAY=MO,WE or FREQ=MONTHLY;BYMONTHDAY=1.",
    ),
    UNICODE,
]
ExternalRef = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="Id in an external calendar (deduplicates).",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(non_blank),
    UNICODE,
]
ZoneName = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=64,
        description="IANA time zone (Europe/Berlin, UTC) used to read times given without an "
        "offset.",
    ),
    AfterValidator(_zone),
    UNICODE,
]

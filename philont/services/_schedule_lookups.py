"""What finding schedules answers when nothing matches: a cancel's refusal of an id and a name
of two schedules, its not-found error listing what is enabled, a schedule id that names
nothing; and the same for a name or id this database cannot hold (``finds``)."""

from __future__ import annotations

import builtins
from typing import Any, Final, NoReturn

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from philont.db.models import Schedule
from philont.db.ordering import code_points
from philont.errors import InvalidInputError, ScheduleNotFoundError
from philont.services._schedule_checks import checked_outcome

ENABLED: ColumnElement[bool] = Schedule.enabled == True  # noqa: E712
_ENABLED_NAMES_SHOWN: Final = 20


def same_schedule(session: Session, id: str, name: str) -> None:
    """Refuse an ``id`` and ``name`` (stripped) given together that name two schedules."""
    owner = session.get(Schedule, id)
    if owner is not None and owner.name != name:
        raise InvalidInputError.of_together(
            ("name", "id"),
            f"id {id!r} is the schedule {owner.name!r}, not {name!r}; give one of them",
        )


def none_enabled(session: Session, name: str | None, id: str | None) -> NoReturn:
    """:class:`~philont.errors.ScheduleNotFoundError` for a cancel that matched nothing,
    listing what is enabled."""
    # Each enabled name once, soonest first, then in code point order on both backends
    # (PostgreSQL refuses DISTINCT ordered by a column it does not select: group and order by
    # each name's earliest run).
    enabled = session.scalars(
        select(Schedule.name)
        .where(ENABLED)
        .group_by(Schedule.name)
        .order_by(func.min(Schedule.next_run_at), code_points(Schedule.name))
    ).all()
    shown = ", ".join(enabled[:_ENABLED_NAMES_SHOWN]) or "none"
    if len(enabled) > _ENABLED_NAMES_SHOWN:
        shown += f", … ({len(enabled) - _ENABLED_NAMES_SHOWN} more)"
    raise ScheduleNotFoundError(
        f"no enabled schedule matches name={name!r} id={id!r}. Currently enabled: {shown}",
        name=name,
        id=id,
        enabled=builtins.list(enabled),
    )


def cancel_unheld(service: Any, *, name: str | None = None, id: str | None = None) -> NoReturn:
    """``cancel`` where the name or the id cannot exist in this database: what it answers
    when nothing matches (a held id of another schedule beside the name is still refused)."""
    if id is not None and "\x00" not in id and name is not None:
        same_schedule(service.session, id, name.strip())
    none_enabled(service.session, name, id)


def no_schedule_id(_service: object, schedule_id: object, **_: object) -> NoReturn:
    raise ScheduleNotFoundError(f"no schedule with id {schedule_id!r}", id=schedule_id)


def no_outcome_schedule(service: object, schedule_id: str, **run: Any) -> NoReturn:
    """``record_outcome`` of a schedule id this database cannot hold: the run checked as the
    method checks it, then the schedule is not found."""
    checked_outcome(**run)
    no_schedule_id(service, schedule_id)

"""`philont calendar list | remove`: inspect stored calendar events and remove one, readable or
not (a row another program wrote badly is listed with the reason, and can be removed by id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from pydantic import Field
from rich import box
from rich.table import Column, Table
from rich.text import Text

from philont.cli.common import (
    DbOption,
    JsonOption,
    emit,
    open_store,
    out,
    read_memory,
    resolve_existing,
)
from philont.cli.values import value
from philont.domain.series import MAX_LISTING_LIMIT, all_day_dates
from philont.domain.timeparse import iso
from philont.errors import CalendarEventNotFoundError
from philont.schemas import inputs

if TYPE_CHECKING:
    from philont.services.calendar import CalendarService

calendar_app = typer.Typer(
    help="Calendar events: list them (unreadable rows included) and remove one by id.",
    no_args_is_help=True,
)

_TITLE_SHOWN = 80
T = TypeVar("T")
Listing = Annotated[int, Field(ge=1, le=MAX_LISTING_LIMIT)]
"""How many events a listing shows (the calendar's own cap)."""


def _calendar(db: str | None, work: Callable[[CalendarService], T], *, write: bool) -> T:
    """``work(calendar)`` in one unit of work, run again when the database was busy or the
    transaction conflicted (:meth:`Store.run <philont.store.Store.run>`)."""
    from philont import migrate

    if not write:  # a file this process may not write is read through a read-only Store
        return read_memory(db, lambda mem: work(mem.calendar))
    url = resolve_existing(db)
    migrate.check(url)  # a typed error reaches Commands, which gives it its exit code
    with open_store(url) as store:
        return store.run(lambda mem: work(mem.calendar), write=write)


@calendar_app.command("list")
def list_events(
    limit: Annotated[
        int, typer.Option(help="Most events to show.", parser=value(Listing), metavar="N")
    ] = 100,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stored events by start time; rows that cannot be read are shown with the reason."""
    page = _calendar(db, lambda calendar: calendar.list(limit=limit), write=False)
    if as_json:
        emit(page.model_dump(mode="json"))
        return
    # The id is what `remove` takes: shown whole, never cut to "54874b3c-…" by a narrow terminal.
    ids = [str(e.id) for e in page.events] + [str(bad.id) for bad in page.skipped]
    table = Table(
        Column("id", no_wrap=True, min_width=max(map(len, ids), default=2)),
        Column("starts (UTC; all-day: its days)", overflow="fold"),
        Column("title", min_width=10, ratio=2, overflow="fold"),
        Column("zone", min_width=7, ratio=1, overflow="fold"),
        Column("rule", min_width=7, ratio=1, overflow="fold"),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for e in page.events:
        days = all_day_dates(e.starts_at, e.ends_at, e.timezone)
        starts = iso(e.starts_at) if days is None else f"{days[0]} (all day)"
        if days is not None and days[1] != days[0]:
            starts = f"{days[0]} to {days[1]} (all day)"
        cells = (e.id, starts, e.title[:_TITLE_SHOWN], e.timezone, e.rrule or "")
        table.add_row(*(Text(c) for c in cells))
    for bad in page.skipped:
        reason = Text(f"unreadable: {bad.reason[:_TITLE_SHOWN]}", style="red")
        table.add_row(Text(str(bad.id)), Text(""), reason, Text(""), Text(""))
    out.print(table)
    shown = len(page.events) + len(page.skipped)
    if page.total > shown:
        out.print(f"… {page.total - shown} more not shown (use --limit)")
    if page.skipped:
        out.print(
            f"{len(page.skipped)} unreadable row(s): remove with `philont calendar remove ID`"
        )


@calendar_app.command("remove")
def remove(
    event_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="The event's id (see `list`).", parser=value(inputs.RecordId)
        ),
    ],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove one event (a whole series), whether or not its stored values can be read."""

    def drop(calendar: CalendarService) -> None:
        if not calendar.delete(event_id):  # raised in the unit of work: it knows the database
            raise CalendarEventNotFoundError(event_id)

    _calendar(db, drop, write=True)
    if as_json:
        emit({"removed": event_id})
    else:
        out.print(f"removed calendar event {event_id}")

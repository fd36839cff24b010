"""`philont agents list | count | rename | delete | export-schema`: the agents of a PostgreSQL
database (one Store, one pool; nothing here costs more with more agents but `list`'s output)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from philont.cli import values
from philont.cli.common import EXIT_NOT_FOUND, DbOption, JsonOption, emit, fail, out
from philont.errors import ConflictError, NotFoundError, PhilontError
from philont.schemas import inputs

if TYPE_CHECKING:
    from philont.store import Store

EXIT_CONFLICT = 5

agents_app = typer.Typer(
    help="The agents of a PostgreSQL database: list, count, rename, delete, move old ones in.",
    no_args_is_help=True,
)


@contextmanager
def _store(db: str | None) -> Iterator[Store]:
    from philont.db.engine import resolve_url
    from philont.store import Store

    try:
        with Store.open(resolve_url(db), upgrade=False) as store:
            yield store
    except NotFoundError as exc:
        raise fail(exc, code=EXIT_NOT_FOUND) from exc
    except ConflictError as exc:
        raise fail(exc, code=EXIT_CONFLICT) from exc
    except PhilontError as exc:
        raise fail(exc) from exc


@agents_app.command("list")
def list_(
    prefix: Annotated[
        str, typer.Option(help="Only names starting with this.", parser=values.AGENT_PREFIX)
    ] = "",
    limit: Annotated[
        int | None,
        typer.Option(help="At most this many.", parser=values.value(inputs.Limit), metavar="N"),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Agents by name, with when each was created."""
    from philont import agents

    with _store(db) as store:
        found = agents.list_agents(store, prefix=prefix, limit=limit)
    rows = [
        {
            "name": a.name,
            "id": a.id,
            "created_at": datetime.fromtimestamp(a.created_at_ms / 1000, UTC).isoformat(),
        }
        for a in found
    ]
    if as_json:
        emit(rows)
        return
    for row in rows:
        out.print(f"{row['name']}\t{row['created_at']}", markup=False)


@agents_app.command("count")
def count(db: DbOption = None, as_json: JsonOption = False) -> None:
    """How many agents the database holds."""
    from philont import agents

    with _store(db) as store:
        n = agents.count(store)
    if as_json:
        emit({"agents": n})
    else:
        out.print(str(n))


@agents_app.command("rename")
def rename(
    old: Annotated[str, typer.Argument(help="The agent's name.", parser=values.AGENT)],
    new: Annotated[str, typer.Argument(help="Its new name (not taken).", parser=values.AGENT)],
    db: DbOption = None,
) -> None:
    """Rename an agent (its memory stays as it is)."""
    from philont import agents

    with _store(db) as store:
        agents.rename(store, old, new)
    out.print(f"renamed {old} to {new}", markup=False)


@agents_app.command("delete")
def delete(
    name: Annotated[
        str, typer.Argument(help="The agent to delete with all its memory.", parser=values.AGENT)
    ],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete every row of one agent, then the agent (one transaction)."""
    from philont import agents

    with _store(db) as store:
        agents.require(store, name)  # a bad database or an unknown agent is said before asking
        if not yes:
            typer.confirm(f"delete agent {name} and all its memory?", abort=True)
        deleted = agents.delete(store, name)
    if as_json:
        emit({"agent": name, "deleted": deleted})
    else:
        out.print(f"deleted {name}: {sum(deleted.values())} rows", markup=False)


@agents_app.command("export-schema")
def export_schema(
    schema: Annotated[
        str,
        typer.Argument(help="The old per-agent schema (revision v034/v035).", parser=values.SCHEMA),
    ],
    file: Annotated[Path, typer.Argument(help="Output file (JSON lines).", parser=values.PATH)],
    db: DbOption = None,
) -> None:
    """Export an agent kept in the old schema-per-agent layout; then `philont --agent NAME
    import FILE` moves it into the shared layout."""
    from philont.db.engine import resolve_url
    from philont.transfer.postgres import export_schema as export_legacy

    try:
        report = export_legacy(resolve_url(db), schema, file)
    except PhilontError as exc:
        raise fail(exc) from exc
    out.print(
        f"exported {sum(report.rows.values())} rows of schema {schema} to {file}", markup=False
    )

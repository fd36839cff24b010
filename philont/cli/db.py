"""`philont db upgrade | current | check | history`: the database schema."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from philont.cli.common import DbOption, JsonOption, out, progress, reached

if TYPE_CHECKING:
    from philont import migrate

db_app = typer.Typer(help="Create, upgrade and inspect the database schema.", no_args_is_help=True)


def _upgrade_with_progress(db: str | None) -> migrate.UpgradeReport:
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    from philont import migrate

    revisions = [rev for rev, _doc in migrate.history()]
    with progress(
        TextColumn("upgrading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rev]}")
    ) as bar:
        # how many revisions run is known once the first has (the chain starts where the
        # database stands: a v031 file runs 8 of them, not every one philont ships)
        task = bar.add_task("upgrade", total=None, rev="")

        def step(rev: str) -> None:
            if bar.tasks[0].total is None:
                bar.update(task, total=len(revisions) - revisions.index(rev))
            bar.update(task, advance=1, rev=rev)
            if bar.tasks[0].completed < (bar.tasks[0].total or 0):
                reached("upgrade:revisions")

        return migrate.upgrade(db, on_step=step)


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Create or upgrade the database to the head revision (backs up a non-empty file first)."""
    report = _upgrade_with_progress(db)
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "applied": report.applied,
                    "stamped": report.stamped,
                    "adopted": report.adopted,
                    "to": report.to_revision,
                    "backup": str(report.backup) if report.backup else None,
                }
            )
        )
    else:
        out.print(f"at {report.to_revision}; applied {len(report.applied)} revision(s)")
        if report.adopted:
            out.print(f"adopted a Philont database at {report.adopted}")
        if report.backup:
            out.print(f"a copy from before the upgrade: {report.backup}")


@db_app.command("current")
def db_current(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Show the revision and memory_meta.schema_version."""
    from philont import migrate

    st = migrate.status(db)
    data = _status_data(st)
    if as_json:
        out.print_json(json.dumps(data))
    else:
        revision = st.revision or "(none)"
        if not st.shipped:  # said, not guessed at: a later release's revision, or not ours
            revision += ", not one this release ships"
        version = st.schema_version or ("(none)" if st.shipped else "(unknown)")
        out.print(f"revision {revision} (head {st.head}); schema_version {version}")


@db_app.command("check")
def db_check(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Exit 0 at head, 3 (with the command that fixes it, on stderr) when not."""
    from philont import migrate

    st = migrate.check(db)
    if as_json:
        out.print_json(json.dumps(_status_data(st)))
    else:
        out.print(f"ok: at head {st.head}")


def _status_data(st: migrate.Status) -> dict[str, object]:
    return {
        "revision": st.revision,
        "head": st.head,
        "schema_version": st.schema_version,
        "at_head": st.at_head,
        "shipped": st.shipped,
    }


@db_app.command("history")
def db_history(as_json: JsonOption = False) -> None:
    """List the revision scripts shipped with philont, oldest first (reads no database)."""
    from philont import migrate

    rows = migrate.history()
    if as_json:
        out.print_json(json.dumps([{"revision": r, "doc": d} for r, d in rows]))
        return
    for rev, doc in rows:
        out.print(f"{rev}  {doc.splitlines()[0] if doc else ''}")

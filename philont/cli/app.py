"""`philont` command line: the main job (`demo`) and database operations (`db ...`)."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from philont import interrupts, migrate, settings
from philont.cli import agents as cli_agents
from philont.cli import embed as cli_embed
from philont.cli import inspect as cli_inspect
from philont.cli import learning as cli_learning
from philont.cli import ops as cli_ops
from philont.cli import values
from philont.cli.calendar import calendar_app
from philont.cli.common import Commands, DbOption, JsonOption, out, progress, reached
from philont.db.engine import require_file, resolve_url, sqlite_path
from philont.errors import BackendError, InvalidDatabaseError
from philont.logsetup import configure
from philont.schemas import stored

app = typer.Typer(
    cls=Commands,
    help="Long-term memory for AI agents, in one SQLite file (or PostgreSQL: many agents).",
    no_args_is_help=True,
)
db_app = typer.Typer(help="Create, upgrade and inspect the database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(cli_agents.agents_app, name="agents")
app.add_typer(cli_inspect.facts_app, name="facts")
app.add_typer(cli_inspect.notes_app, name="notes")
app.add_typer(cli_inspect.skills_app, name="skills")
app.add_typer(calendar_app, name="calendar")
app.command()(cli_inspect.stats)
app.command()(cli_inspect.timeline)
app.command()(cli_inspect.prefix)
app.command()(cli_inspect.recall)
app.command()(cli_ops.backup)
app.command()(cli_ops.restore)
app.command()(cli_ops.export)
app.command("import")(cli_ops.import_)
cli_learning.register(app, cli_inspect.skills_app)
app.command("embed")(cli_embed.embed)


@app.callback()
def _main(
    ctx: typer.Context,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="With a PostgreSQL --db URL: the agent to work as. Default $PHILONT_AGENT.",
            parser=values.AGENT,
            metavar="NAME",
        ),
    ] = None,
) -> None:
    configure(logging.INFO if verbose else logging.WARNING)
    if agent is not None:
        # every Store's default agent on PostgreSQL, for this command only: a command run
        # in-process (a test, a host) must not leave its agent to the rest of the process
        before = os.environ.get(settings.AGENT_ENV)
        os.environ[settings.AGENT_ENV] = agent
        ctx.call_on_close(lambda: _restore_env(settings.AGENT_ENV, before))


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _upgrade_with_progress(db: str | None) -> migrate.UpgradeReport:
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    total = len(migrate.history())
    with progress(
        TextColumn("upgrading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rev]}")
    ) as bar:
        task = bar.add_task("upgrade", total=total, rev="")

        def step(rev: str) -> None:
            bar.update(task, advance=1, rev=rev)
            if bar.tasks[0].completed < total:
                reached("upgrade:revisions")

        return migrate.upgrade(db, on_step=step)


@app.command()
def demo(
    db: DbOption = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Varies the small talk; same seed, same story.",
            parser=values.value(stored.Int64),
            metavar="N",
        ),
    ] = 7,
) -> None:
    """Main job: play a scripted multi-session conversation on a fresh SQLite file (or --db)
    and show what the memory does — decay, history, honest skill grades, recall, reminders."""
    from philont.demo import run

    path = run(_demo_file(db), seed=seed, console=out)
    counts = cli_inspect.layer_counts(path)
    out.print(f"\n[bold]memory database[/bold] {escape(str(path))}")
    out.print("  " + ", ".join(f"{label}: {n}" for label, n in counts.items()))
    out.print(f"  inspect it: philont stats --db {escape(str(path))}")


def _demo_file(db: str | None) -> Path | None:
    """The SQLite file the demo plays on (None: a new temporary one)."""
    if db is None:
        return None
    url = resolve_url(db)  # an empty path, a NUL character, ...: refused by name
    require_file(url, "the demo")
    path = sqlite_path(url)
    if path is None:
        raise InvalidDatabaseError(f"the demo plays on an SQLite file, not {url.drivername}")
    return path


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
                    "to": report.to_revision,
                    "backup": str(report.backup) if report.backup else None,
                }
            )
        )
    else:
        out.print(f"at {report.to_revision}; applied {len(report.applied)} revision(s)")


@db_app.command("current")
def db_current(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Show the revision and memory_meta.schema_version."""
    st = migrate.status(db)
    data = _status_data(st)
    if as_json:
        out.print_json(json.dumps(data))
    else:
        out.print(
            f"revision {st.revision or '(none)'} (head {st.head}); "
            f"schema_version {st.schema_version or '(none)'}"
        )


@db_app.command("check")
def db_check(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Exit 0 at head, 3 (with the command that fixes it, on stderr) when not."""
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
    }


@db_app.command("history")
def db_history(as_json: JsonOption = False) -> None:
    """List the revision scripts shipped with philont, oldest first (reads no database)."""
    rows = migrate.history()
    if as_json:
        out.print_json(json.dumps([{"revision": r, "doc": d} for r, d in rows]))
        return
    for rev, doc in rows:
        out.print(f"{rev}  {doc.splitlines()[0] if doc else ''}")


@app.command()
def mcp(db: DbOption = None) -> None:
    """Serve the eleven memory tools over MCP (stdio). Needs the extra:
    pip install 'philont\\[mcp]'."""  # \\[ : help texts are Rich markup
    try:
        from philont.mcp.server import run
    except ImportError as exc:
        raise BackendError(f"the MCP server needs `pip install 'philont[mcp]'` ({exc})") from exc
    run(db)


def main() -> None:
    """Run the command line: Ctrl-C stops a command with one line and exit 130, except once
    its work is permanent (:mod:`philont.interrupts`); after the command, it changes nothing."""
    with interrupts.watch() as state:
        try:
            app()
        finally:
            state.past = True  # the command is over: its outcome stands
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # ... also while Python shuts down

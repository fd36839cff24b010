"""The `philont` group: its own options, and every command, each loaded when it is run.

``philont --help`` lists the commands from :data:`COMMANDS` and :data:`GROUPS` (name and the
first paragraph of its help) without importing them; a command's module (and what it needs:
SQLAlchemy, Alembic, pydantic, numpy, ...) is imported when the command is run, asked for its
own help, or looked at (``group.commands[name]``). tests/cli/test_help_text.py checks that the
listing is the one the loaded commands give.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from philont import settings
from philont.cli.common import Commands
from philont.cli.parsers import AGENT


@dataclass(frozen=True)
class Lazy:
    """A command (a function) or a group (a ``typer.Typer``): where it is, and the first
    paragraph of its help on one line, as ``philont --help`` lists it (:func:`listed_help`)."""

    where: str
    help: str

    def load(self) -> Any:
        module, _, name = self.where.partition(":")
        return getattr(importlib.import_module(f"philont.cli.{module}"), name)


# In the order they were registered: the order --help lists them in.
COMMANDS = {
    "stats": Lazy("inspect:stats", "Rows per layer, file size and FTS index health."),
    "timeline": Lazy("inspect:timeline", "Messages of the raw timeline, oldest first."),
    "search": Lazy(
        "inspect:search",
        "Messages of the timeline matching keywords or a question, best first.",
    ),
    "prefix": Lazy("inspect:prefix", "The memory prefix the agent would get in its system prompt."),
    "recall": Lazy(
        "inspect:recall", "What the timeline retriever would put in context for this message."
    ),
    "backup": Lazy(
        "ops:backup",
        "Online backup (consistent while the agent writes) into the sibling backups/ directory.",
    ),
    "restore": Lazy(
        "ops:restore",
        "Verify a backup, keep the current file as a backup, then put the backup in place.",
    ),
    "export": Lazy(
        "ops:export",
        "Export every layer as versioned JSON lines (to a file, or with - to stdout).",
    ),
    "import": Lazy(
        "ops:import_",
        "Import an export file (or with - stdin); refuses a non-empty database unless --merge. "
        "All or nothing.",
    ),
    "consolidate": Lazy(
        "learning:consolidate",
        "Consolidate the timeline when it has been idle: facts, notes, skills and summaries from "
        "each new batch of messages. Loops until SIGINT/SIGTERM (a batch in progress is finished "
        "first; a second signal stops at once); --once runs one tick (exit 1 if a batch failed or "
        "waits to be retried).",
    ),
    "embed": Lazy(
        "embed:embed",
        "Embed pending messages, notes and skills for semantic recall (resumable).",
    ),
    "demo": Lazy(
        "jobs:demo",
        "Main job: play a scripted multi-session conversation on a fresh SQLite file (or --db) "
        "and show what the memory does — decay, history, honest skill grades, recall, reminders.",
    ),
    "mcp": Lazy(
        "jobs:mcp",
        "Serve the eleven memory tools over MCP (stdio). Needs the extra: "
        "pip install 'philont\\[mcp]'.",
    ),
}
GROUPS = {
    "db": Lazy("db:db_app", "Create, upgrade and inspect the database schema."),
    "agents": Lazy(
        "agents:agents_app",
        "The agents of a PostgreSQL database: list, count, rename, delete, move old ones in.",
    ),
    "facts": Lazy("inspect:facts_app", "Facts (layer 2) with their decay scores."),
    "notes": Lazy("inspect:notes_app", "Notes (layer 1)."),
    "skills": Lazy("learning:skills_app", "Skills (layer 3): grades, counts, revisions."),
    "calendar": Lazy(
        "calendar:calendar_app",
        "Calendar events: list them (unreadable rows included) and remove one by id.",
    ),
}


def _nothing() -> None:
    """(a callback, so that typer makes a group of one command)"""


def listed_help(text: str) -> str:
    """The first paragraph of a help text on one line: what a list of commands shows (typer's
    Rich listing keeps a paragraph's line breaks, which then break the table's column)."""
    return " ".join(inspect.cleandoc(text).split("\n\n")[0].split())


def build(name: str) -> Any:
    """The click command ``name``, made by typer as it makes every command of a group; its
    ``short_help`` and its subcommands' (what a listing shows) are :func:`listed_help` of
    their help."""
    holder = typer.Typer()
    holder.callback()(_nothing)
    if name in GROUPS:
        holder.add_typer(GROUPS[name].load(), name=name)
    else:
        holder.command(name)(COMMANDS[name].load())
    command = typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]
    _help_as_written(command)
    return command


def _help_as_written(command: Any) -> None:
    """``command``'s help and its subcommands': listed on one line (:func:`listed_help`), a
    flag shown without a type (:func:`_bare_flags`)."""
    command.short_help = listed_help(command.help or "")
    _bare_flags(command, command.context_class(command))
    for sub in getattr(command, "commands", {}).values():
        _help_as_written(sub)


def _bare_flags(command: Any, ctx: Any) -> None:
    """A flag (``--once``, ``--help``) takes no value; typer 0.29's help shows its type
    (``<bool>``) as if it took one. An empty metavar shows it bare."""
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class LazyCommands(dict[str, Any]):
    """``{name: click command}``, each made (:func:`build`) when first looked up."""

    def __getitem__(self, name: str) -> Any:
        command = super().__getitem__(name)
        if command is None:
            command = build(name)
            super().__setitem__(name, command)
        return command

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default  # noqa: SIM401 (self.get: this)

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return iter([(name, self[name]) for name in self])

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return iter([self[name] for name in self])


class Philont(Commands):
    """The ``philont`` group: its commands are :class:`LazyCommands`; while it writes its own
    help it lists them by name and help (:data:`COMMANDS`, :data:`GROUPS`), loading none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lazy = LazyCommands(self.commands)
        for name in (*COMMANDS, *GROUPS):
            dict.setdefault(lazy, name, None)
        self.commands = self._lazy = lazy
        self._listing = False

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing and dict.get(self._lazy, cmd_name) is None:
            return _listed(cmd_name)
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self._lazy)  # the names: typer's own asks for every command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _bare_flags(self, ctx)
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _listed(name: str) -> Any:
    """A stand-in for ``name`` in the help's list of commands: its name and help only."""
    if name in GROUPS:
        return TyperGroup(name=name, help=GROUPS[name].help)
    return TyperCommand(name=name, help=COMMANDS[name].help)


app = typer.Typer(
    cls=Philont,
    help="Long-term memory for AI agents, in one SQLite file (or PostgreSQL: many agents).",
    no_args_is_help=True,
)


@app.callback()
def _main(
    ctx: typer.Context,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log progress (INFO); by default warnings only.")
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="With a PostgreSQL --db URL: the agent to work as. Default $PHILONT_AGENT.",
            parser=AGENT,
            metavar="NAME",
        ),
    ] = None,
) -> None:
    import logging

    from philont.logsetup import configure

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

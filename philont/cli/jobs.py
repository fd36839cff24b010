"""`philont demo` (the main job: a scripted conversation) and `philont mcp` (the MCP server)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from philont.cli import inspect as cli_inspect
from philont.cli import values
from philont.cli.common import DbOption, out
from philont.errors import BackendError, InvalidDatabaseError
from philont.schemas import stored


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
    from philont.db.engine import require_file, resolve_url, sqlite_path

    if db is None:
        return None
    url = resolve_url(db)  # an empty path, a NUL character, ...: refused by name
    require_file(url, "the demo")
    path = sqlite_path(url)
    if path is None:
        raise InvalidDatabaseError(f"the demo plays on an SQLite file, not {url.drivername}")
    return path


def mcp(
    db: DbOption = None,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="Serve the SQLite file read-only: write tools answer database_read_only "
            "(a file this process may not write is served so without it).",
        ),
    ] = False,
) -> None:
    """Serve the eleven memory tools over MCP (stdio). Needs the extra:
    pip install 'philont\\[mcp]'."""  # \\[ : help texts are Rich markup
    try:
        from philont.mcp.server import run
    except ImportError as exc:
        raise BackendError(f"the MCP server needs `pip install 'philont[mcp]'` ({exc})") from exc
    run(db, read_only=read_only)

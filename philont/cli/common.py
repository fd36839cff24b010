"""Shared pieces of the command line: options, output, errors and exit codes."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.engine import URL

from philont.db.engine import resolve_url, sqlite_path
from philont.errors import PhilontError

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

# Exit codes: 0 ok · 1 error · 2 bad usage · 3 database not at head · 4 not found
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_OUT_OF_DATE = 3
EXIT_NOT_FOUND = 4

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db", help="Database path or URL (default: $MEMORY_DB_PATH or ~/.philont/memory/...)"
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def emit(data: Any) -> None:
    """Print JSON on stdout (one document)."""
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def fail(exc: PhilontError, *, code: int = EXIT_ERROR) -> typer.Exit:
    """Report a typed error on stderr and return the Exit to raise."""
    # Messages quote user text, paths and hints like `pip install 'philont[postgres]'`: they
    # are never read as rich markup.
    err.print(f"[red]error[/red] ({exc.code}): {escape(str(exc))}", markup=True)
    return typer.Exit(code)


def resolve_existing(db: str | None) -> URL:
    """The database URL, refusing (exit 1) an SQLite file that does not exist yet."""
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        err.print(
            f"[red]error[/red]: no database at {escape(str(path))}; create it with "
            "`philont db upgrade`"
        )
        raise typer.Exit(EXIT_ERROR)
    return url

"""`philont backup | restore | export | import`: file-level operations with progress displays."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from philont import backup as backups
from philont import transfer
from philont.cli.common import (
    EXIT_NOT_FOUND,
    DbOption,
    JsonOption,
    emit,
    err,
    fail,
    out,
    resolve_existing,
)
from philont.errors import ConflictError, NotFoundError, PhilontError

EXIT_CONFLICT = 5


@contextmanager
def _table_progress(verb: str) -> Iterator[Callable[[str, int, int], None]]:
    with Progress(
        TextColumn(f"{verb} {{task.description}}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=True,
    ) as progress:
        tasks: dict[str, TaskID] = {}

        def update(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = progress.add_task(table, total=max(total, 1))
            progress.update(tasks[table], completed=done)

        yield update


def backup(
    keep: Annotated[int | None, typer.Option(min=1, help="Keep only the newest N backups.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Online backup (consistent while the agent writes) into the sibling backups/ directory."""
    url = resolve_existing(db)
    try:
        path = backups.backup(url, keep=keep)
    except PhilontError as exc:
        raise fail(exc) from exc
    if as_json:
        emit({"backup": str(path)})
    else:
        out.print(f"backup written: {path}")


def restore(
    file: Annotated[Path, typer.Argument(help="A backup file to restore.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Verify a backup, keep the current file as a backup, then put the backup in place."""
    if not file.exists():
        raise fail(NotFoundError(f"no such backup file: {file}"), code=EXIT_NOT_FOUND)
    try:
        report = backups.restore(file, db)
    except PhilontError as exc:
        raise fail(exc) from exc
    data = {
        "restored_from": str(report.restored_from),
        "database": str(report.database),
        "previous_kept_as": str(report.safety_backup) if report.safety_backup else None,
        "revision": report.revision,
    }
    if as_json:
        emit(data)
    else:
        out.print(
            f"restored {report.restored_from} into {report.database} "
            f"(previous file kept as {data['previous_kept_as']})"
        )


def export(
    file: Annotated[Path, typer.Argument(help="Output file (JSON lines).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export every layer as versioned JSON lines."""
    url = resolve_existing(db)
    try:
        with _table_progress("exporting") as progress:
            report = transfer.export(url, file, progress=progress)
    except PhilontError as exc:
        raise fail(exc) from exc
    total = sum(report.rows.values())
    if as_json:
        emit({"file": str(file), "rows": report.rows})
    else:
        out.print(f"exported {total} rows from {len(report.rows)} tables to {file}")


def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `philont export`.")],
    merge: Annotated[
        bool, typer.Option("--merge", help="Merge into a non-empty database by id.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import an export file; refuses a non-empty database unless --merge. All or nothing."""
    if not file.exists():
        raise fail(NotFoundError(f"no such file: {file}"), code=EXIT_NOT_FOUND)
    try:
        with _table_progress("importing") as progress:
            report = transfer.import_(
                db, file, mode="merge" if merge else "refuse", progress=progress
            )
    except ConflictError as exc:
        raise fail(exc, code=EXIT_CONFLICT) from exc
    except PhilontError as exc:
        raise fail(exc) from exc
    if as_json:
        emit({"inserted": report.inserted, "skipped": report.skipped})
    else:
        out.print(
            f"imported {sum(report.inserted.values())} rows; skipped "
            f"{sum(report.skipped.values())} already present"
        )

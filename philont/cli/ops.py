"""`philont backup | restore | export | import`: file-level operations with progress displays."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, TaskID, TextColumn

from philont.cli import values
from philont.cli.common import (
    DbOption,
    JsonOption,
    emit,
    err,
    interrupted,
    out,
    progress,
    reached,
    resolve_existing,
)

if TYPE_CHECKING:
    from philont.backup import RestoreReport
    from philont.transfer import ImportReport


@contextmanager
def _table_progress(verb: str, left: str) -> Iterator[Callable[[str, int, int], None]]:
    """A bar per table as its rows go (``importing memory_notes 3000/12000``); an import's
    first pass, which checks the whole file before writing anything, as the share of the file
    read (``checking the file 41.2/100.0 MB``), and the search indexes an SQLite import
    rebuilds at the end. Ctrl-C ends the command with ``interrupted: LEFT`` on stderr (what was
    left as it was) and exit 130."""
    from philont import transfer

    phases = {transfer.CHECKING: "checking", transfer.INDEXING: "indexing"}  # besides rows
    try:
        with progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}")
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def update(table: str, done: int, total: int) -> None:
                if table == transfer.CHECKING:
                    label, count = "checking the file", f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
                elif table == transfer.INDEXING:
                    label, count = "rebuilding search indexes", f"{done}/{total}"
                else:
                    label, count = f"{verb} {table}", f"{done}/{total}"
                if done < total:
                    reached(f"{verb}:{phases.get(table, 'rows')}")
                if table not in tasks:
                    tasks[table] = bar.add_task(label, total=max(total, 1), count=count)
                bar.update(tasks[table], completed=done, count=count)

            yield update
    except KeyboardInterrupt:
        raise interrupted(left) from None


@contextmanager
def _step_progress(left: str) -> Iterator[Callable[[str, int, int], None]]:
    """A bar per step of a backup or a restore as it goes (``copying 41.2/100.0 MB``,
    ``verifying 3/7``: the integrity check, then each search index), on stderr when it is a
    terminal. Ctrl-C ends the command with ``interrupted: LEFT`` (what was left as it was) and
    exit 130; the steps past the point of no return hold it instead (philont.interrupts)."""
    from philont import backup as backups

    try:
        with progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}")
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def update(step: str, done: int, total: int) -> None:
                big = step == backups.COPYING and total > 1
                count = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if big else f"{done}/{total}"
                if step not in tasks:
                    tasks[step] = bar.add_task(step, total=max(total, 1), count=count)
                bar.update(tasks[step], completed=done, total=max(total, 1), count=count)

            yield update
    except KeyboardInterrupt:
        raise interrupted(left) from None


def backup(
    keep: Annotated[
        int | None,
        typer.Option(
            help="Keep only the newest N ordinary backups of this database (never deletes the "
            "-pre-restore and -pre-upgrade safety copies, nor another database's backups).",
            parser=values.value(values.Positive),
            metavar="N",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Online backup (consistent while the agent writes) into the sibling backups/ directory."""
    from philont import backup as backups

    with _step_progress("no backup was taken") as steps:
        path = backups.backup(resolve_existing(db), keep=keep, progress=steps)
    if as_json:
        emit({"backup": str(path)})
    else:
        out.print(f"backup written: {path}", markup=False)


def restore(
    file: Annotated[Path, typer.Argument(help="A backup file to restore.", parser=values.PATH)],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Verify a backup, keep the current file as a backup, then put the backup in place."""
    from philont import backup as backups
    from philont import migrate

    with _step_progress("the database was left as it was") as steps:
        report = backups.restore(file, db, progress=steps)
    head, at_head = migrate.head_revision(), report.revision in migrate.heads_for("sqlite")
    data = {
        "restored_from": str(report.restored_from),
        "database": str(report.database),
        "previous_kept_as": str(report.safety_backup) if report.safety_backup else None,
        "revision": report.revision,
        "at_head": at_head,
    }
    if as_json:
        emit(data)
        return
    out.print(
        f"restored {report.restored_from} into {report.database} ({_kept(report)})",
        markup=False,
    )
    if not at_head:  # an older backup, a Philont v1 file: every command says 3
        out.print(
            f"it is at revision {report.revision}, head is {head}: run `philont db upgrade "
            f"--db {shlex.quote(str(report.database))}` before using it (it keeps a "
            "-pre-upgrade copy)",
            markup=False,
        )


def _kept(report: RestoreReport) -> str:
    """What became of the file a restore replaced, as the command says it."""
    if report.safety_backup is None:
        return "there was no previous database"
    if report.previous_was_corrupt:
        return f"the previous file was damaged; its bytes are kept as {report.safety_backup}"
    return f"previous file kept as {report.safety_backup}"


STDIO = "-"


def export(
    file: Annotated[
        str,
        typer.Argument(help="Output file (JSON lines); - for stdout.", parser=values.FILE),
    ],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export every layer as versioned JSON lines (to a file, or with - to stdout)."""
    from philont import transfer

    url = resolve_existing(db)
    to_stdout = file == STDIO
    left = "the output is incomplete" if to_stdout else f"{file} was not written"
    with _table_progress("exporting", left) as progress:
        report = transfer.export(url, sys.stdout if to_stdout else Path(file), progress=progress)
        reached("exporting:done")
    total = sum(report.rows.values())
    # With -, stdout carries the export itself: the summary goes to stderr.
    if as_json:
        summary = json.dumps({"file": file, "rows": report.rows}, ensure_ascii=False)
        print(summary, file=sys.stderr if to_stdout else sys.stdout)
    else:
        shown = "stdout" if to_stdout else escape(file)
        (err if to_stdout else out).print(
            f"exported {total} rows from {len(report.rows)} tables to {shown}"
        )


def import_(
    file: Annotated[
        str,
        typer.Argument(help="A file written by `philont export`; - for stdin.", parser=values.FILE),
    ],
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="Add to a non-empty database: a row whose id exists is skipped when identical"
            " (re-importing is harmless); if any differs (e.g. another database's message ids)"
            " nothing is imported (error import_merge_conflict).",
        ),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import an export file (or with - stdin); refuses a non-empty database unless --merge.
    All or nothing."""
    from philont import transfer

    source = sys.stdin if file == STDIO else Path(file)
    with _table_progress("importing", "nothing imported; the database is as it was") as progress:
        report = transfer.import_(
            db, source, mode="merge" if merge else "refuse", progress=progress
        )
        reached("importing:done")
    if as_json:
        emit(_import_data(report))
    else:
        out.print(_import_summary(report.totals()), markup=False, soft_wrap=True)
        for warning in report.warnings:
            err.print(f"warning: {warning}", markup=False, soft_wrap=True)
        if report.warnings_total > len(report.warnings):
            more = report.warnings_total - len(report.warnings)
            err.print(f"warning: {more} more like these", markup=False)


def _import_data(report: ImportReport) -> dict[str, object]:
    """``--json`` of an import: per table and in total, the file's rows and what became of
    them (``file_rows = inserted + replaced + skipped + kept + not_imported``)."""
    from philont.transfer.format import OUTCOMES

    tables = {
        name: {"file_rows": n} | {o: getattr(report, o).get(name, 0) for o in OUTCOMES}
        for name, n in report.file_rows.items()
    }
    return {
        "tables": tables,
        "totals": report.totals(),
        "replaced_ids": report.replaced_ids,
        "warnings": report.warnings,
        "warnings_total": report.warnings_total,
    }


def _import_summary(totals: dict[str, int]) -> str:
    """One line (never wrapped): what became of every row of the file, each kind named."""
    added, replaced = totals["inserted"], totals["replaced"]
    parts = [f"{added} added"]
    if replaced:
        parts.append(f"{replaced} bootstrap rows replaced ('global' session, root pursuit)")
    if totals["skipped"]:
        parts.append(f"{totals['skipped']} skipped (already there, identical)")
    if totals["kept"]:
        parts.append(f"{totals['kept']} bootstrap rows kept as the database has them")
    if totals["not_imported"]:
        parts.append(f"{totals['not_imported']} memory_meta rows not imported (schema record)")
    return f"imported {added + replaced} of {totals['file_rows']} rows: {'; '.join(parts)}"

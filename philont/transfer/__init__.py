"""Export and import of every memory layer as versioned JSON lines (raw stored values)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from sqlalchemy import Table
from sqlalchemy.engine import URL

from philont.db.engine import database_name, is_postgres, resolve_url
from philont.db.retry import typed_errors
from philont.errors import InvalidInputError
from philont.log import get_logger
from philont.transfer.export import export
from philont.transfer.files import removed_on_failure
from philont.transfer.format import (
    CHECKING,
    INDEXING,
    PROGRESS_EVERY,
    DbTarget,
    ExportReport,
    ExportRowTooLongError,
    ExportTextNotUtf8Error,
    ImportForeignKeyError,
    ImportFormatError,
    ImportReport,
    Mode,
    Outcome,
    Progress,
    export_tables,
    sqlite_file,
)
from philont.transfer.gate import check_row
from philont.transfer.keys import SeenKeys
from philont.transfer.load import load_sqlite
from philont.transfer.merge import ImportFactConflictError, ImportMergeConflictError, Incoming
from philont.transfer.reader import (
    Reader,
    Reopen,
    check_pg_row,
    file_position,
    file_size,
    reopenable,
    source,
)

__all__ = [
    "CHECKING",
    "INDEXING",
    "ExportReport",
    "ExportRowTooLongError",
    "ExportTextNotUtf8Error",
    "ImportFactConflictError",
    "ImportForeignKeyError",
    "ImportFormatError",
    "ImportMergeConflictError",
    "ImportReport",
    "Outcome",
    "export",
    "export_tables",
    "import_",
]

log = get_logger(__name__)


def import_(
    db: DbTarget,
    src: str | os.PathLike[str] | TextIO,
    *,
    mode: Mode = "refuse",
    progress: Progress | None = None,
    agent: str | None = None,
) -> ImportReport:
    """Import an export file into ``db`` in one transaction (all or nothing). ``src``: a path
    (text or ``os.PathLike``) or a text stream; anything else is refused naming ``src``.

    The whole file is validated first, nothing touched (``ImportFormatError(line_number,
    reason)``): its format, then every value against the types and rules a service write applies
    (:mod:`philont.transfer.gate`), and every unique key once (a repeat names both lines). The
    rows are then read again from the file the check read (a path is opened once), compared
    with it as they are read: a file another process wrote in between is refused
    (``ImportFormatError``, "the file changed after it was checked"). Then
    the target is upgraded to head inside the transaction that loads the rows: any refusal
    (the file's, or the target's below) leaves an older target as it was, an SQLite file byte
    for byte (not switched to WAL before the commit, its ``-pre-upgrade`` copy removed again;
    one that commits keeps it: ``report.upgrade.backup``). Every row of the file gets one outcome
    (:func:`philont.transfer.merge.place_row`), counted per table in the report, which adds up:
    ``file_rows = inserted + replaced + skipped + kept + not_imported``. ``memory_meta`` rows
    describe the source's schema and are never imported (``not_imported``: the target keeps its
    own). ``mode="refuse"`` raises ``ConflictError`` when the target holds anything but the
    bootstrap rows, whose file versions then replace the target's (``replaced``);
    ``mode="merge"`` adds the file's rows to a non-empty target: a row whose primary key the
    target holds is skipped when it is the same row (every column of the file's row equal:
    merging the same file again changes nothing), a bootstrap row in another version is
    ``kept`` as the target has it, and any other refuses the whole import when it differs
    (``ImportMergeConflictError``, counts per table and the first ids with their lines: two
    databases' counter ids, such as message or action ids, name different rows; import into a
    new database instead), and also when a fact's current version in the file and a different
    current version in the target would leave its key with two current values
    (``ImportFactConflictError``). Nothing is ever dropped silently. Explicit ids keep
    AUTOINCREMENT ids (and the file's ``sqlite_sequence`` high-water marks); ``_rowid`` keeps
    the rowids external-content FTS keys on (renumbered only when taken, in merge). Every FTS5
    index is rebuilt and ``foreign_key_check`` must pass before the commit
    (``ImportForeignKeyError`` names the lines of the rows at fault). ``progress(table, done,
    total)`` reports the first pass as :data:`CHECKING` (bytes of the file), then each table's
    rows, then (SQLite) :data:`INDEXING` (full-text indexes rebuilt). No line is read past
    ``MAX_LINE_CHARS``. A target file the import created is removed again when the import
    fails, unless by then it is someone else's too (open elsewhere, or holding any table: this
    import's schema went with its transaction, so one there is another's, such as a concurrent
    import of the same path that succeeded).

    A value the gate imports as it is but that deserves a look (a one-shot's ``once@<zone>``
    whose zone this machine's tzdata lacks) is a warning in ``report.warnings``, naming its
    line, never a refusal of the whole file.

    Into PostgreSQL the file becomes one agent's (``agent``, else ``$PHILONT_AGENT``; created
    when missing) in one transaction that holds that agent's writers off (other agents go on):
    values the database would change (NUL in text, a non-integer in a BIGINT column) are
    refused while validating, with the line number; ``_rowid`` is ignored; an existing primary
    key follows the same merge rule (``ON CONFLICT DO NOTHING``, then compared); the agent's id
    counters move past the file's ``sequences`` and the largest id; a foreign key violation
    (checked row by row, parents come first in the file) rolls everything back
    (``philont.transfer.postgres.import_agent``).
    """
    if mode not in ("refuse", "merge"):
        raise InvalidInputError.of("mode", f"must be 'refuse' or 'merge', got {mode!r}", mode=mode)
    read = source(src)
    url = resolve_url(db)
    with typed_errors("transfer.import_failed", where=database_name(url)):
        return _import(url, read, mode, progress, agent)


def _import(
    url: URL, src: Path | TextIO, mode: Mode, progress: Progress | None, agent: str | None
) -> ImportReport:
    postgres = is_postgres(url)
    path = None if postgres else sqlite_file(url)[1]
    known = {t.name: t for t in export_tables()}
    report = ImportReport()
    if postgres:  # the agent named before the file is read (it was after a whole first pass)
        from philont.transfer.postgres import agent_name

        agent = agent_name(agent)
    with reopenable(src) as reopen:
        totals = _validate(reopen, known, report, postgres=postgres, progress=progress)
        report.file_rows = dict(totals)
        incoming = Incoming(reopen, known, mode, totals, report, progress)
        with removed_on_failure(path):
            if postgres:
                from philont.transfer.postgres import import_agent

                import_agent(url, incoming, agent=agent)
            else:
                load_sqlite(url, incoming)
    log.info(
        "transfer.imported",
        db=database_name(url),
        mode=mode,
        **report.totals(),
        warnings=report.warnings_total,
    )
    return report


def _validate(
    reopen: Reopen,
    known: dict[str, Table],
    report: ImportReport,
    *,
    postgres: bool,
    progress: Progress | None,
) -> dict[str, int]:
    """The first pass: every line checked, nothing written; rows per table (and the rows'
    warnings in ``report``). Its progress is
    reported as ``progress(CHECKING, bytes read, file size)`` (for a file: a stream without
    one, such as ``io.StringIO``, reports none)."""
    totals: dict[str, int] = {}
    with reopen() as fh, SeenKeys() as seen:
        size = None if progress is None else file_size(fh)
        try:
            for n, (number, name, row) in enumerate(Reader(fh, known), 1):
                if postgres:
                    check_pg_row(number, name, row)
                warning = check_row(number, name, row)
                if warning is not None:
                    report.warn(number, warning)
                seen.add(number, name, row)
                totals[name] = totals.get(name, 0) + 1
                if size is not None and progress is not None and n % PROGRESS_EVERY == 0:
                    progress(CHECKING, min(file_position(fh) or 0, size), size)
        except ImportFormatError:
            seen.flush()  # a repeated key on an earlier line is the first error
            raise
        seen.flush()
        if size is not None and progress is not None:
            progress(CHECKING, size, size)
    return totals

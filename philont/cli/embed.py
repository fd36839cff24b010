"""`philont embed`: embed what is pending (or rebuild), in committed batches with a progress bar;
a killed run is resumed by the next one. `--status` only reports."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from philont.cli import values
from philont.cli.common import (
    DbOption,
    JsonOption,
    emit,
    fail,
    open_store,
    out,
    progress,
    reached,
    resolve_existing,
)
from philont.embed.base import BATCH_SIZE
from philont.errors import InvalidInputError, PhilontError
from philont.schemas import inputs

__all__ = ["embed"]


def embed(
    db: DbOption = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            envvar="PHILONT_EMBEDDER",
            # help texts are Rich markup: \\[ keeps a bracket
            help="hash[:DIM], model2vec:DIR, fastembed:MODEL or openai:MODEL\\[@URL]"
            " ($PHILONT_EMBEDDER).",
            parser=values.EMBEDDER,
            metavar="SPEC",
        ),
    ] = None,
    batch_size: Annotated[
        int,
        typer.Option(
            help="Texts per model call and commit.", parser=values.value(inputs.Limit), metavar="N"
        ),
    ] = BATCH_SIZE,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Drop the stored vectors first (another model).")
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Also fill gaps below the last embedded message.")
    ] = False,
    status: Annotated[bool, typer.Option("--status", help="Only report the index.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Embed pending messages, notes and skills for semantic recall (resumable)."""
    if embedder is None and not status:
        raise values.usage_error(
            InvalidInputError("give --embedder SPEC (or set $PHILONT_EMBEDDER)")
        )
    url = resolve_existing(db)
    store = open_store(url)
    try:
        if status:
            report = store.run(lambda mem: mem.embeddings.status(), write=False)
            _show(report.model_dump(mode="json"), as_json)
            return
        assert embedder is not None  # --status, or a usage error above
        from philont.embed import backfill, embedder_from_spec

        model = embedder_from_spec(embedder)
        with progress(
            TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        ) as bar:
            task = bar.add_task("embed", total=None)
            done = backfill(
                store,
                model,
                batch_size=batch_size,
                rebuild=rebuild,
                full=full,
                progress=lambda n, total: _shown(bar, task, n, total),
            )
        _show(done.model_dump(mode="json"), as_json)
    except PhilontError as exc:
        raise fail(exc) from exc
    finally:
        store.close()


def _shown(bar: Progress, task: TaskID, done: int, total: int) -> None:
    bar.update(task, completed=done, total=total)
    if done < total:
        reached("embed:batches")


def _show(data: dict[str, object], as_json: bool) -> None:
    if as_json:
        emit(data)
        return
    for key, value in data.items():
        out.print(f"{key}: {value}", markup=False)

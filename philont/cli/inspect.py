"""`philont stats | facts | notes | skills | timeline | prefix`: read-only inspection commands."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import URL

from philont import migrate
from philont.cli.common import (
    EXIT_USAGE,
    DbOption,
    JsonOption,
    emit,
    err,
    fail,
    open_store,
    out,
    resolve_existing,
)
from philont.db.engine import connect_read_only, is_postgres
from philont.domain.timeparse import parse_time
from philont.errors import FactNotFoundError, PhilontError, SkillNotFoundError
from philont.memory import Memory
from philont.schemas import inputs

T = TypeVar("T")

facts_app = typer.Typer(help="Facts (layer 2) with their decay scores.", no_args_is_help=True)
notes_app = typer.Typer(help="Notes (layer 1).", no_args_is_help=True)
skills_app = typer.Typer(help="Skills (layer 3): grades, counts, revisions.", no_args_is_help=True)

FTS_TABLES = ("memory_raw_messages_fts", "memory_notes_fts", "memory_skills_fts")
LAYER_TABLES = {
    "timeline": "memory_raw_messages",
    "sessions": "memory_raw_sessions",
    "actions": "memory_actions",
    "notes": "memory_notes",
    "facts": "memory_facts",
    "skills": "memory_skills",
    "skill revisions": "philont_skill_revisions",
    "calendar": "memory_calendar",
    "schedules": "memory_schedules",
    "access log": "memory_access_log",
    "pursuits": "memory_pursuits",
}


def _add(table: Table, *cells: str) -> None:
    """Add a row of plain text (no rich markup: values like '[state …]' must show as they are)."""
    table.add_row(*(Text(c) for c in cells))


def _run(db: str | None, work: Callable[[Memory], T]) -> T:
    """``work(mem)`` in one unit of work on this command's Store (a database not at head is
    refused), run again when the database was busy or the transaction conflicted with a
    concurrent one (:meth:`Store.run <philont.store.Store.run>`): ``work`` only reads and
    returns what the command prints."""
    url = resolve_existing(db)
    migrate.check(url)
    with open_store(url) as store:
        return store.run(work)


def layer_counts(path: str | Path) -> dict[str, int]:
    """Rows per layer, read-only (tables a database lacks are left out)."""
    with closing(connect_read_only(path)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            label: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for label, t in LAYER_TABLES.items()
            if t in tables
        }


def stats(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Rows per layer, file size and FTS index health."""
    url = resolve_existing(db)
    st = migrate.status(url)
    if is_postgres(url):
        path, size, rows, fts = _pg_stats(url)
    else:
        path, size, rows, fts = _sqlite_stats(url.database or "")
    data = {
        "database": path,
        "revision": st.revision,
        "schema_version": st.schema_version,
        "size_bytes": size,
        "rows": rows,
        "fts": fts,
    }
    if as_json:
        emit(data)
        return
    out.print(
        f"[bold]{escape(path)}[/bold]  {size / 1024:.0f} KiB  revision {st.revision} "
        f"(schema_version {st.schema_version})"
    )
    table = Table("layer", "rows")
    for label, n in rows.items():
        _add(table, label, str(n))
    out.print(table)
    for name, state in fts.items():
        shown = "[green]ok[/green]" if state == "ok" else f"[red]{escape(state)}[/red]"
        out.print(f"FTS {name}: {shown}")
    if any(v != "ok" for v in fts.values()):
        raise typer.Exit(1)


def _pg_stats(url: URL) -> tuple[str, int, dict[str, int], dict[str, str]]:
    """Where, bytes (of philont's tables, every agent's), the agent's rows per layer and (no)
    FTS health on PostgreSQL; its GIN search indexes are kept by PostgreSQL itself."""

    def work(mem: Memory) -> tuple[dict[str, int], int, str | None]:
        raw = mem.raw()
        rows = {
            label: int(raw.rows(f"SELECT count(*) FROM {t}{raw.where()}")[0][0])
            for label, t in LAYER_TABLES.items()
        }
        names = list(LAYER_TABLES.values())
        size = raw.rows(
            "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0)"
            f" FROM unnest({raw.mark}::text[]) AS t",
            [names],
        )[0][0]
        return rows, int(size), mem.agent

    with open_store(url) as store:
        rows, size, agent = store.run(work, write=False)
    where = url.set(query={}).render_as_string(hide_password=True)
    return f"{where} (agent {agent})", size, rows, {}


def _sqlite_stats(path: str) -> tuple[str, int, dict[str, int], dict[str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        fts: dict[str, str] = {}
        for name in sorted(t for t in tables if t.endswith("_fts")):
            try:
                conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")
                fts[name] = "ok"
            except sqlite3.DatabaseError as exc:
                fts[name] = f"BROKEN: {exc}"
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = pages * conn.execute("PRAGMA page_size").fetchone()[0]
    return path, int(size), layer_counts(path), fts


def _fact_row(f: Any, score: float) -> dict[str, Any]:
    return {
        "namespace": f.namespace,
        "key": f.key,
        "value": f.value,
        "score": round(score, 4),
        "pinned": f.pinned,
        "time": f.time_tag(),
        "id": f.id,
        "active": f.active,
    }


@facts_app.command("list")
def facts_list(
    namespace: Annotated[
        str, typer.Argument(help="Namespace; 'user.*' includes children; '*' all")
    ] = "*",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Current facts, highest decay score first."""
    # the list_facts tool's own argument type: the same values refused with the same message
    namespace = inputs.check(inputs.NamespaceSelector, namespace, "namespace")
    prefix = namespace.endswith(".*")
    records = _run(
        db, lambda mem: mem.facts.list(namespace.removesuffix(".*"), prefix=prefix, ranked=True)
    )
    rows = [_fact_row(f, f.score or 0.0) for f in records]
    if as_json:
        emit(rows)
        return
    if not rows:  # as the tool says it: a namespace with no facts is not an empty table
        err.print(f"no facts in {namespace}", markup=False)
        return
    table = Table("fact", "value", "score", "time")
    for r in rows:
        name = f"{r['namespace']}.{r['key']}" + (" 📌" if r["pinned"] else "")
        _add(
            table,
            name,
            json.dumps(r["value"], ensure_ascii=False)[:60],
            f"{r['score']:.3f}",
            r["time"],
        )
    out.print(table)


def _check_fact_address(namespace: str, key: str) -> None:
    """The get_fact tool's argument types: a lookup refused as the tool refuses it."""
    inputs.check(inputs.NamespaceLookup, namespace, "namespace")
    inputs.check(inputs.FactKeyLookup, key, "key")


@facts_app.command("get")
def facts_get(namespace: str, key: str, db: DbOption = None, as_json: JsonOption = False) -> None:
    """One fact's current value (refreshes its access time, as a read by the agent would)."""
    _check_fact_address(namespace, key)

    def work(mem: Memory) -> dict[str, Any]:
        f = mem.facts.get(namespace, key)
        if f is None:
            raise FactNotFoundError(namespace, key)
        return _fact_row(f, mem.facts.score(f))

    row = _run(db, work)
    if as_json:
        emit(row)
    else:
        out.print(
            escape(f"{namespace}.{key} = {json.dumps(row['value'], ensure_ascii=False)}  ")
            + escape(row["time"])
            + f"  score {row['score']:.3f}"
        )


@facts_app.command("history")
def facts_history(
    namespace: str, key: str, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """Every version of a fact, current first, with its decay score."""
    _check_fact_address(namespace, key)
    rows = _run(
        db,
        lambda mem: [_fact_row(f, mem.facts.score(f)) for f in mem.facts.history(namespace, key)],
    )
    if not rows:
        raise FactNotFoundError(namespace, key, active=False)
    if as_json:
        emit(rows)
        return
    table = Table("state", "value", "score", "time")
    for r in rows:
        _add(
            table,
            "current" if r["active"] else "old",
            json.dumps(r["value"], ensure_ascii=False)[:60],
            f"{r['score']:.3f}",
            r["time"],
        )
    out.print(table)


@notes_app.command("list")
def notes_list(
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The most important notes."""
    notes = [n.model_dump(mode="json") for n in _run(db, lambda mem: mem.notes.list(limit=limit))]
    if as_json:
        emit(notes)
        return
    for n in notes:
        out.print(f"({n['importance']:.1f}) {escape(n['content'])}")


@skills_app.command("list")
def skills_list(
    all_: Annotated[bool, typer.Option("--all", help="Include deprecated skills.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Skills ranked by score, with grade and counts."""
    listed = _run(db, lambda mem: mem.skills.list(200, include_deprecated=all_))
    skills = [s.model_dump(mode="json") for s in listed]
    if as_json:
        emit(skills)
        return
    table = Table("skill", "grade", "kind", "used", "ok", "failed", "callable")
    for s in skills:
        _add(
            table,
            s["name"],
            s["grade"],
            s["kind"],
            str(s["use_count"]),
            str(s["success_count"]),
            str(s["failure_count"]),
            "yes" if s["callable"] else "no",
        )
    out.print(table)


@skills_app.command("show")
def skills_show(name: str, db: DbOption = None, as_json: JsonOption = False) -> None:
    """One skill: grade, counts, template, recipe and its revisions."""

    def work(mem: Memory) -> dict[str, Any]:
        skill = mem.skills.get(name)
        if skill is None:
            raise SkillNotFoundError(f"no skill named {name!r}", name=name)
        revisions = [r.model_dump(mode="json") for r in mem.skills.revisions(name)]
        return {**skill.model_dump(mode="json"), "revisions": revisions}

    data = _run(db, work)
    revisions = data["revisions"]
    if as_json:
        emit(data)
        return
    out.print(
        f"[bold]{escape(name)}[/bold] — {data['grade']} ({data['kind']}), used {data['use_count']}"
        f"×, {data['success_count']} ok / {data['failure_count']} failed"
    )
    out.print(escape(data["description"]))
    out.print(escape(data["action_template"]))
    for r in revisions:
        out.print(
            f"  revision {r['revision']}: {r['success_count']} ok / {r['failure_count']} "
            f"failed{' (current)' if r['current'] else ''}"
        )


def timeline(
    since: Annotated[str | None, typer.Option(help="ISO-8601 time or epoch ms")] = None,
    until: Annotated[str | None, typer.Option(help="ISO-8601 time or epoch ms")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session id")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10000)] = 50,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Messages of the raw timeline, oldest first."""
    try:
        start, end = inputs.window(
            parse_time(since, field="--since"), parse_time(until, field="--until", end_of_day=True)
        )
    except PhilontError as exc:  # a bad option value is bad usage
        raise fail(exc, code=EXIT_USAGE) from exc
    msgs = _run(
        db,
        lambda mem: mem.timeline.query(
            since=start,
            until=end,
            limit=limit,
            order="desc",
            session_ids=[session] if session else None,
        ),
    )
    rows = [m.model_dump(mode="json") for m in reversed(msgs)]
    if as_json:
        emit(rows)
        return
    for m in rows:
        out.print(
            f"{m['timestamp'][:19]} {escape('[' + m['session_id'][:12] + ']')} {m['role']}: "
            f"{escape(m['content'])}"
        )


def prefix(
    environment: Annotated[str | None, typer.Option(help="Host environment line")] = None,
    budget: Annotated[int, typer.Option(min=100, max=100000, help="Token cap")] = 2000,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The memory prefix the agent would get in its system prompt."""
    from philont.services.prefix import PrefixLimits

    limits = PrefixLimits(budget_tokens=budget)
    result = _run(db, lambda mem: mem.prefix.build(environment=environment, limits=limits))
    if as_json:
        emit(
            {
                "text": result.text,
                "tokens": result.tokens,
                "sections": [s.model_dump() for s in result.sections],
            }
        )
        return
    out.print(result.text, markup=False, highlight=False)
    out.print(f"[dim]{result.tokens} tokens; omitted {result.omitted} item(s)[/dim]")


@notes_app.command("search")
def notes_search(
    query: str,
    limit: Annotated[int, typer.Option(min=1, max=100)] = 10,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Notes matching a question or keywords, best first."""
    hits = [
        h.model_dump(mode="json") for h in _run(db, lambda m: m.search.notes(query, limit=limit))
    ]
    if as_json:
        emit(hits)
        return
    if not hits:
        out.print("no matching notes")
    for h in hits:
        out.print(f"({h['score']:.2f}) {escape(h['content'])}")


def recall(
    query: Annotated[str, typer.Argument(help="The user's message for this turn.")],
    recent: Annotated[int, typer.Option(min=1, max=500, help="Recent messages cap")] = 30,
    recent_budget: Annotated[int, typer.Option(min=0)] = 8000,
    recall_budget: Annotated[int, typer.Option(min=0)] = 4000,
    session: Annotated[str | None, typer.Option(help="Restrict to one session id")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """What the timeline retriever would put in context for this message."""

    def work(mem: Memory) -> tuple[Any, Any]:
        hit = mem.recall_trigger.detect(query)
        return hit, mem.retriever.retrieve(
            query,
            recent_limit=recent,
            recent_budget_tokens=recent_budget,
            recall_budget_tokens=recall_budget,
            session_ids=[session] if session else None,
        )

    hit, result = _run(db, work)
    data = result.model_dump(mode="json")
    data["recall_trigger"] = hit.snippet if hit else None
    if as_json:
        emit(data)
        return
    if hit:
        out.print(f"[yellow]recall trigger:[/yellow] {escape(hit.snippet)}")
    for m in result.messages:
        style = {"recall": "magenta", "separator": "dim", "recent": "white"}[m.section]
        out.print(f"[{style}]{m.section:9}[/{style}] {m.role}: {escape(m.content[:200])}")
    out.print(
        f"[dim]recent {result.recency_count} msgs / {result.recent_tokens} tokens · recalled "
        f"{result.recall_count} msgs / {result.recall_tokens} tokens · total "
        f"{result.total_tokens}[/dim]"
    )

"""`philont stats | facts | notes | skills | timeline | search | prefix`: read-only
inspection commands."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import Field
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from philont.cli import values
from philont.cli.common import (
    DbOption,
    JsonOption,
    emit,
    err,
    open_store,
    out,
    read_memory,
    resolve_existing,
)
from philont.cli.values import value
from philont.errors import (
    FactNotFoundError,
    PhilontError,
)
from philont.schemas import inputs

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from philont.memory import Memory

LimitOption = Annotated[
    int, typer.Option(help="Most results to show.", parser=value(inputs.Limit), metavar="N")
]
SessionOption = Annotated[
    str | None,
    typer.Option(help="Only this session id.", parser=value(inputs.SessionId), metavar="ID"),
]
Budget = Annotated[int, Field(ge=100, le=100_000)]
"""The prefix's token cap (``PrefixLimits.budget_tokens`` needs room for its frame)."""

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


def layer_counts(path: str | Path) -> dict[str, int]:
    """Rows per layer, read-only (tables a database lacks are left out)."""
    from philont.db.engine import connect_read_only

    with closing(connect_read_only(path)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            label: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for label, t in LAYER_TABLES.items()
            if t in tables
        }


def stats(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Rows per layer, file size and FTS index health."""
    from philont import migrate
    from philont.db.engine import is_postgres

    url = resolve_existing(db)
    st = migrate.readable_status(url)  # a database this release cannot read is refused
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
        color = "green" if state == "ok" else "yellow" if state == READ_ONLY_FTS else "red"
        out.print(f"FTS {name}: [{color}]{escape(state)}[/{color}]")
    if any(v not in ("ok", READ_ONLY_FTS) for v in fts.values()):
        raise typer.Exit(1)


def _pg_stats(url: URL) -> tuple[str, int, dict[str, int], dict[str, str]]:
    """Where, bytes (of philont's tables, every agent's), the agent's rows per layer and (no)
    FTS health on PostgreSQL; its GIN search indexes are kept by PostgreSQL itself."""
    from philont.db.engine import database_name

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
    return f"{database_name(url)} (agent {agent})", size, rows, {}


READ_ONLY_FTS = "unchecked: the database is read-only"
"""An FTS index ``stats`` cannot check: its ``integrity-check`` is an INSERT, refused there."""


def _stats_connection(path: str) -> sqlite3.Connection:
    """A connection that may write (the FTS check is an INSERT command), or a read-only one
    when SQLite cannot open the file so (:func:`philont.db.engine.connect_read_only` reads a
    WAL file in a directory that is not writable, or says why it cannot)."""
    from philont.db.connections import connect
    from philont.db.engine import connect_read_only

    conn = connect(path)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.OperationalError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_CANTOPEN:
            raise
        return connect_read_only(path)
    return conn


def _sqlite_stats(path: str) -> tuple[str, int, dict[str, int], dict[str, str]]:
    with closing(_stats_connection(path)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        fts: dict[str, str] = {}
        for name in sorted(t for t in tables if t.endswith("_fts")):
            try:
                conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")
                fts[name] = "ok"
            except sqlite3.DatabaseError as exc:
                readonly = getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY
                fts[name] = READ_ONLY_FTS if readonly else f"BROKEN: {exc}"
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
        str,
        typer.Argument(
            help="Namespace; 'user.*' includes children; '*' all",
            # the list_facts tool's own argument type: refused with the same message (a
            # legacy database's name that '*' lists is a filter too: inputs.HeldNamespaceSelector)
            parser=value(inputs.HeldNamespaceSelector),
        ),
    ] = "*",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Current facts, highest decay score first."""
    # the selector whole ('user.*' included): the service reads it as the argument type did
    records = read_memory(db, lambda mem: mem.facts.list(namespace, ranked=True))
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


# The get_fact tool's argument types: a lookup refused as the tool refuses it (a legacy
# database's name that list shows is read by name: inputs.HeldNamespace).
NamespaceArgument = Annotated[str, typer.Argument(parser=value(inputs.HeldNamespace))]
KeyArgument = Annotated[str, typer.Argument(parser=value(inputs.HeldFactKey))]


@facts_app.command("get")
def facts_get(
    namespace: NamespaceArgument, key: KeyArgument, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """One fact's current value (refreshes its access time, as a read by the agent would)."""

    def work(mem: Memory) -> dict[str, Any]:
        f = mem.facts.get(namespace, key)
        if f is None:
            raise FactNotFoundError(namespace, key, near=mem.facts.names_near(namespace, key))
        return _fact_row(f, mem.facts.score(f))

    row = read_memory(db, work)
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
    namespace: NamespaceArgument, key: KeyArgument, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """Every version of a fact, current first, with its decay score."""

    def work(mem: Memory) -> list[dict[str, Any]]:
        rows = [_fact_row(f, mem.facts.score(f)) for f in mem.facts.history(namespace, key)]
        if not rows:  # raised in the unit of work: it knows the database
            raise FactNotFoundError(
                namespace, key, active=False, near=mem.facts.names_near(namespace, key)
            )
        return rows

    rows = read_memory(db, work)
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
    limit: LimitOption = 20,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The most important notes."""
    notes = [
        n.model_dump(mode="json") for n in read_memory(db, lambda mem: mem.notes.list(limit=limit))
    ]
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
    listed = read_memory(db, lambda mem: mem.skills.list(200, include_deprecated=all_))
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
def skills_show(
    name: Annotated[str, typer.Argument(parser=value(inputs.SkillNameLookup))],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One skill: grade, counts, template, recipe and its revisions."""

    def work(mem: Memory) -> dict[str, Any]:
        skill = mem.skills.get(name)
        if skill is None:
            from philont.services.skill_base import no_skill  # SQLAlchemy: not for --help

            no_skill(mem.skills, name)
        revisions = [r.model_dump(mode="json") for r in mem.skills.revisions(name)]
        return {**skill.model_dump(mode="json"), "revisions": revisions}

    data = read_memory(db, work)
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


TIME_HELP = "ISO-8601 time, a date, or epoch ms"
SinceOption = Annotated[
    datetime | None, typer.Option(help=TIME_HELP, parser=values.SINCE, metavar="TIME")
]
UntilOption = Annotated[
    datetime | None, typer.Option(help=TIME_HELP, parser=values.UNTIL, metavar="TIME")
]


def _window(
    since: datetime | None, until: datetime | None
) -> tuple[datetime | None, datetime | None]:
    """``--since``/``--until`` as a time window; ``--until`` before ``--since`` (a combination
    of two values) is a usage error."""
    try:
        return inputs.window(since, until, names=("--since", "--until"))
    except PhilontError as exc:
        raise values.usage_error(exc) from exc


def timeline(
    since: SinceOption = None,
    until: UntilOption = None,
    session: SessionOption = None,
    limit: LimitOption = 50,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Messages of the raw timeline, oldest first."""
    start, end = _window(since, until)
    msgs = read_memory(
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


def search(
    query: Annotated[
        str, typer.Argument(help="Keywords or a question.", parser=value(inputs.Query))
    ],
    since: SinceOption = None,
    until: UntilOption = None,
    session: SessionOption = None,
    limit: LimitOption = 10,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Messages of the timeline matching keywords or a question, best first.

    The agent's own keyword search (`mem.search.messages`): a turn right after a match may
    come with it, lifted by the match, though it holds none of the words."""
    start, end = _window(since, until)
    hits = read_memory(
        db,
        lambda mem: mem.search.messages(
            query,
            limit=limit,
            since=start,
            until=end,
            session_ids=[session] if session else None,
        ),
    )
    rows = [h.model_dump(mode="json") for h in hits]
    if as_json:
        emit(rows)
        return
    if not rows:
        out.print("no matching messages")
    for h in rows:
        out.print(
            f"{h['timestamp'][:19]} {escape('[' + h['session_id'][:12] + ']')} #{h['id']} "
            f"{h['role']}: {escape(h['content'])}"
        )


def prefix(
    environment: Annotated[
        str | None, typer.Option(help="Host environment line", parser=value(inputs.Content))
    ] = None,
    budget: Annotated[
        int, typer.Option(help="Token cap", parser=value(Budget), metavar="TOKENS")
    ] = 2000,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The memory prefix the agent would get in its system prompt."""
    from philont.services.prefix import PrefixLimits

    limits = PrefixLimits(budget_tokens=budget)
    result = read_memory(db, lambda mem: mem.prefix.build(environment=environment, limits=limits))
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
    query: Annotated[str, typer.Argument(parser=value(inputs.Query))],
    limit: LimitOption = 10,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Notes matching a question or keywords, best first."""
    hits = [
        h.model_dump(mode="json")
        for h in read_memory(db, lambda m: m.search.notes(query, limit=limit))
    ]
    if as_json:
        emit(hits)
        return
    if not hits:
        out.print("no matching notes")
    for h in hits:
        out.print(f"({h['score']:.2f}) {escape(h['content'])}")


def recall(
    query: Annotated[
        str, typer.Argument(help="The user's message for this turn.", parser=value(inputs.Query))
    ],
    recent: Annotated[
        int, typer.Option(help="Recent messages cap", parser=value(inputs.Count), metavar="N")
    ] = 30,
    recent_budget: Annotated[
        int, typer.Option(help="Tokens of recent messages (0: none)", parser=value(inputs.Count))
    ] = 8000,
    recall_budget: Annotated[
        int, typer.Option(help="Tokens of recalled messages", parser=value(inputs.Count))
    ] = 4000,
    session: SessionOption = None,
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

    hit, result = read_memory(db, work)
    data = result.model_dump(mode="json")
    data["recall_trigger"] = hit.snippet if hit else None
    if as_json:
        emit(data)
        return
    if hit:
        out.print(f"[yellow]recall trigger:[/yellow] {escape(hit.snippet)}")
    for m in result.messages:
        style = {"recall": "magenta", "separator": "dim", "recent": "white"}[m.section]
        out.print(f"[{style}]{m.section:9}[/{style}] {escape(m.role)}: {escape(m.content[:200])}")
    out.print(
        f"[dim]recent {result.recency_count} msgs / {result.recent_tokens} tokens · recalled "
        f"{result.recall_count} msgs / {result.recall_tokens} tokens · total "
        f"{result.total_tokens}[/dim]"
    )

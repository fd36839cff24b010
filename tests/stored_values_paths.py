"""The read paths over a memory seeded by :mod:`tests.stored_values`: every service read, the
prefix, search and the retriever, the eleven tools, the commands, the export and its gate.
Each path says which tables it reads; the ones that show many rows are listings, which must
still show the untouched control rows whatever one other row holds. Writes are rolled back
(tools run inside the unit of work), so one file serves every case."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from philont.domain.kinds import AccessTarget
from philont.errors import PhilontError
from philont.store import Store
from tests.stored_values import CONTROL_FACT, CONTROL_WORDS, NOW, VICTIM_FACT


@dataclass
class Ctx:
    """What a read path works on: the file, a Store on it, the seeded ids, a scratch dir."""

    path: Path
    store: Store
    ids: dict[str, Any]
    scratch: Path


@dataclass(frozen=True)
class ReadPath:
    """``run(ctx)`` returns what it shows. ``tables``: what it reads (None: every table).
    ``listing``: it shows many rows, so it must succeed and still show the control row of each
    table in ``shows``; any other path may refuse the victim row with a typed error (a
    :class:`~philont.errors.PhilontError`). ``command``: a ``philont`` command (slow: run on a
    sample of the cases unless the heavy variant runs)."""

    name: str
    run: Callable[[Ctx], object]
    tables: frozenset[str] | None
    listing: bool = False
    shows: tuple[str, ...] = ()
    command: bool = False
    file: bool = False  # needs the SQLite file (the export)


PATHS: list[ReadPath] = []


def path(
    name: str, *tables: str, listing: bool = False, shows: tuple[str, ...] = ()
) -> Callable[[Callable[[Ctx], object]], Callable[[Ctx], object]]:
    def register(fn: Callable[[Ctx], object]) -> Callable[[Ctx], object]:
        PATHS.append(ReadPath(name, fn, frozenset(tables) if tables else None, listing, shows))
        return fn

    return register


def _mem(ctx: Ctx, fn: Callable[[Any], object]) -> object:
    """``fn(mem)`` in a unit of work that is rolled back (what a path writes is not kept)."""
    with ctx.store.begin() as mem:
        shown = fn(mem)
        mem.rollback()
        return shown


FACTS = ("memory_facts", "memory_access_log")
SKILLS = ("memory_skills", "philont_skill_recipes", "philont_skill_revisions")
TIMELINE = ("memory_raw_messages", "memory_raw_sessions")
SCHEDULES = ("memory_schedules", "schedule_outcomes")
LEARNING = ("philont_learning_batches", "philont_cases", "philont_judge_verdicts")
VECTORS = (
    "philont_vector_index",
    "philont_message_codes",
    "philont_message_vectors",
    "philont_note_vectors",
    "philont_skill_vectors",
)
LATER = NOW + timedelta(days=1)


@path("facts.list", *FACTS, listing=True, shows=("memory_facts",))
def _facts_list(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.facts.list("*", include_expired=True),
            m.facts.list("user", prefix=True, ranked=True),
            m.facts.list("*", as_of=NOW),
            m.facts.count(),
            m.facts.events(),
            m.facts.forget_candidates(threshold=1.0),
            m.facts.get(*CONTROL_FACT),
            m.facts.history(*CONTROL_FACT),
        ],
    )


@path("facts.get", *FACTS)
def _facts_get(ctx: Ctx) -> object:
    fact = ctx.ids["fact"]
    return _mem(
        ctx,
        lambda m: [
            m.facts.get(*VICTIM_FACT),
            m.facts.get_by_id(fact, include_forgotten=True),
            m.facts.history(*VICTIM_FACT),
            m.facts.as_of(*VICTIM_FACT, NOW),
            m.access.recent_for(AccessTarget.FACT, fact),
            m.access.count_for(AccessTarget.FACT, fact),
        ],
    )


@path("facts.write", *FACTS)
def _facts_write(ctx: Ctx) -> object:
    fact = ctx.ids["fact"]
    return _mem(
        ctx,
        lambda m: [
            m.facts.pin(fact),
            m.facts.set_tau(fact, 12.0),
            m.facts.store(*VICTIM_FACT, "Hamburg"),  # supersedes the victim
            m.facts.forget(fact),
            m.facts.unforget(fact),
            m.facts.sweep(threshold=0.0),
        ],
    )


@path("notes", "memory_notes", listing=True, shows=("memory_notes",))
def _notes(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.notes.list(limit=10, include_forgotten=True),
            m.notes.search("note"),
            m.notes.count(),
            m.notes.latest_session_summary(),
        ],
    )


@path("notes.get", "memory_notes")
def _notes_get(ctx: Ctx) -> object:
    note = ctx.ids["note"]
    return _mem(ctx, lambda m: [m.notes.get(note), m.notes.forget(note), m.notes.unforget(note)])


@path("skills", *SKILLS, listing=True, shows=("memory_skills",))
def _skills(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.skills.list(include_deprecated=True),
            m.skills.list(callable_only=True),
            m.skills.get("fold-paper"),
        ],
    )


@path("skills.get", *SKILLS)
def _skills_get(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.skills.get("brew-tea"),
            m.skills.is_callable("brew-tea"),
            m.skills.revisions("brew-tea"),
        ],
    )


@path("skills.write", *SKILLS)
def _skills_write(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.skills.record_usage("brew-tea"),
            m.skills.record_outcome("brew-tea", success=True),
            m.skills.record_outcome("brew-tea", success=False, retrieved_at=NOW),
            m.skills.revise_recipe("brew-tea", verification="smell"),
            m.skills.set_grade("brew-tea", "stable", reason="test"),
            m.skills.apply_disuse(now=NOW + timedelta(days=400)),
        ],
    )


@path("timeline", *TIMELINE, listing=True, shows=("memory_raw_messages",))
def _timeline(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.timeline.list_sessions(),
            m.timeline.messages("s-control"),
            m.timeline.query(limit=50),
            m.timeline.last_message("user"),
            m.timeline.count(),
        ],
    )


@path("timeline.session", *TIMELINE)
def _timeline_session(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [m.timeline.get_session("s-victim"), m.timeline.messages("s-victim")],
    )


@path("actions", "memory_actions", listing=True, shows=("memory_actions",))
def _actions(ctx: Ctx) -> object:
    return _mem(ctx, lambda m: [m.actions.query(), m.actions.recent_failures(), m.actions.count()])


@path("calendar", "memory_calendar", listing=True, shows=("memory_calendar",))
def _calendar(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.calendar.list(),
            m.calendar.upcoming(timedelta(days=30), now=NOW),
            m.calendar.count(),
        ],
    )


@path("calendar.get", "memory_calendar")
def _calendar_get(ctx: Ctx) -> object:
    event = ctx.ids["event"]
    return _mem(ctx, lambda m: [m.calendar.get(event), m.calendar.find_by_external_ref("ext-1")])


@path("schedules", *SCHEDULES, listing=True, shows=("memory_schedules",))
def _schedules(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.schedules.list(),
            m.schedules.due_between(NOW - timedelta(days=1), NOW + timedelta(days=2)),
        ],
    )


@path("schedules.get", *SCHEDULES)
def _schedules_get(ctx: Ctx) -> object:
    schedule = ctx.ids["schedule"]
    return _mem(
        ctx,
        lambda m: [
            m.schedules.get(schedule),
            m.schedules.find_by_name("feed-cat"),
            m.schedules.outcomes(schedule),
            m.schedules.claim_due(LATER),
        ],
    )


@path(
    "search",
    *TIMELINE,
    "memory_notes",
    *SKILLS,
    listing=True,
    shows=("memory_raw_messages", "memory_notes", "memory_skills"),
)
def _search(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.search.messages("kangaroos platypus", limit=10),
            m.search.messages("platypus", since=NOW - timedelta(days=1), as_of=LATER),
            m.search.notes("quokka wombat note", include_forgotten=True),
            m.search.notes("note", as_of=LATER),
            m.search.skills("tea paper crane quokka", include_deprecated=True),
            m.search.skills("paper", as_of=LATER),
        ],
    )


@path("retriever", *TIMELINE, listing=True, shows=("memory_raw_messages",))
def _retriever(ctx: Ctx) -> object:
    return _mem(
        ctx,
        lambda m: [
            m.retriever.retrieve("kangaroos"),
            m.retriever.retrieve("platypus", around=NOW),
            m.recall_trigger.recall("remember when we talked about the platypus"),
        ],
    )


@path(
    "prefix",
    *FACTS,
    "memory_notes",
    *SKILLS,
    listing=True,
    shows=("memory_facts", "memory_notes", "memory_skills"),
)
def _prefix(ctx: Ctx) -> object:
    return _mem(ctx, lambda m: m.prefix.build(environment="test", now=NOW).text)


@path("learning", *LEARNING, "memory_actions")
def _learning(ctx: Ctx) -> object:
    from philont.learning.verify import CaseBook

    def run(m: Any) -> object:
        book = CaseBook(m)
        return [book.verdicts(), book.pending_cases(), book.agreement(), book.observe()]

    return _mem(ctx, run)


@path("reflector", "memory_actions", *SKILLS, *TIMELINE)
def _reflector(ctx: Ctx) -> object:
    return _mem(ctx, lambda m: m.reflector.run())


@path("embeddings", *VECTORS)
def _embeddings(ctx: Ctx) -> object:
    return _mem(ctx, lambda m: m.embeddings.status())


# --- the eleven tools, each over the tables it reads -----------------------------------------

TOOL_CALLS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("get_fact", {"namespace": "user.home", "key": "city"}, FACTS),
    ("get_fact", {"namespace": "user.work", "key": "employer"}, FACTS),
    ("list_facts", {"namespace": "user"}, FACTS),
    ("store_fact", {"namespace": "user.home", "key": "city", "value": "Munich"}, FACTS),
    ("search_notes", {"query": "quokka note"}, ("memory_notes",)),
    ("search_skills", {"query": "tea paper"}, SKILLS),
    ("use_skill", {"name": "brew-tea"}, SKILLS),
    ("recall_sessions", {"query": "kangaroos platypus"}, TIMELINE),
    (
        "create_calendar_event",
        {"title": "Lunch", "starts_at": "2026-05-03T12:00:00Z", "timezone": "UTC"},
        ("memory_calendar",),
    ),
    ("list_upcoming", {"days": 30}, ("memory_calendar",)),
    (
        "schedule_reminder",
        {"name": "feed-cat", "message": "feed again", "interval_ms": 7_200_000},
        SCHEDULES,
    ),
    ("cancel_schedule", {"name": "water-plants"}, SCHEDULES),
]


def _tool(name: str, args: dict[str, Any]) -> Callable[[Ctx], object]:
    def run(ctx: Ctx) -> object:
        from philont import tools

        result = _mem(ctx, lambda m: tools.call(name, args, db=m))
        if getattr(result, "error_code", None) == "internal_error":
            raise AssertionError(f"{name} failed untyped: {result.error}")  # type: ignore[attr-defined]
        json.dumps(getattr(result, "data", None), allow_nan=False)  # strict JSON, no infinity
        return getattr(result, "text", result)

    return run


for _name, _args, _tables in TOOL_CALLS:
    PATHS.append(ReadPath(f"tool {_name}", _tool(_name, _args), frozenset(_tables)))


# --- the commands (a CliRunner each; any exception that is not a typed exit is a failure) ----

COMMANDS: list[tuple[list[str], tuple[str, ...] | None]] = [
    (["facts", "list"], FACTS),
    (["facts", "list", "--json"], FACTS),
    (["facts", "get", "user.home", "city"], FACTS),
    (["facts", "history", "user.home", "city"], FACTS),
    (["notes", "list"], ("memory_notes",)),
    (["notes", "list", "--json"], ("memory_notes",)),
    (["notes", "search", "quokka"], ("memory_notes",)),
    (["skills", "list"], SKILLS),
    (["skills", "show", "brew-tea"], SKILLS),
    (["skills", "judge-report"], LEARNING),
    (["calendar", "list"], ("memory_calendar",)),
    (["timeline", "--limit", "100"], TIMELINE),
    (["recall", "kangaroos"], TIMELINE),
    (["search", "kangaroos"], TIMELINE),
    (["prefix"], (*FACTS, "memory_notes", *SKILLS)),
    (["stats"], None),
    (["db", "check"], None),
    (["backup"], None),
]


def _not_json(name: str) -> object:
    raise AssertionError(f"--json wrote {name}, which is not JSON")


def _command(args: list[str]) -> Callable[[Ctx], object]:
    def run(ctx: Ctx) -> object:
        from typer.testing import CliRunner

        from philont.cli import app

        result = CliRunner().invoke(app, [*args, "--db", str(ctx.path)])
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"philont {' '.join(args)}: {result.exception!r}") from (
                result.exception
            )
        if "--json" in args and result.exit_code == 0:  # strict JSON: no NaN or Infinity
            json.loads(result.stdout, parse_constant=_not_json)
        return result.output

    return run


for _args_, _tables_ in COMMANDS:
    PATHS.append(
        ReadPath(
            f"philont {' '.join(_args_)}",
            _command(_args_),
            None if _tables_ is None else frozenset(_tables_),
            command=True,
        )
    )


# --- the export, and what the import's gate makes of each exported row -----------------------


def _export(ctx: Ctx) -> object:
    from philont import transfer
    from philont.transfer.format import ImportFormatError
    from philont.transfer.gate import check_row

    out = ctx.scratch / f"export-{uuid.uuid4().hex}.jsonl"
    transfer.export(ctx.path, out)
    refused = []
    lines = out.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines[1:-1], start=2):
        item = json.loads(line)
        try:
            check_row(number, item["table"], item["row"])
        except ImportFormatError as exc:  # typed: the import says which line and column
            refused.append(exc.message)
    out.unlink()
    return refused


PATHS.append(ReadPath("export", _export, None, file=True))


# --- running them --------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    path: str
    error: BaseException

    def __str__(self) -> str:
        return f"{self.path}: {type(self.error).__name__}: {str(self.error)[:300]}"


def check_paths(ctx: Ctx, table: str, *, commands: bool, sqlite_only: bool = True) -> list[Failure]:
    """Run every read path that reads ``table`` (the commands too when ``commands``; with
    ``sqlite_only`` False, none that needs an SQLite file); what went wrong: an untyped error,
    a listing that failed or no longer shows a control row."""
    failures = []
    for read in PATHS:
        if read.tables is not None and table not in read.tables:
            continue
        if (read.command and not commands) or (read.file and not sqlite_only):
            continue
        try:
            shown = str(read.run(ctx))
        except PhilontError as exc:
            if read.listing:
                failures.append(Failure(read.name, exc))
            continue
        except Exception as exc:
            failures.append(Failure(read.name, exc))
            continue
        for shown_table in read.shows:
            if CONTROL_WORDS[shown_table] not in shown:
                failures.append(
                    Failure(
                        read.name,
                        AssertionError(f"{shown_table}'s control row is gone from: {shown}"),
                    )
                )
    return failures

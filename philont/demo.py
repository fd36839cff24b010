"""`philont demo`: a scripted multi-session conversation that shows what the memory does.

No network and no model: a fixed script drives the real services and tools on a real SQLite
file, with a simulated clock so weeks pass in a second. ``--seed`` varies the small talk, not
the behaviour; the same seed prints the same story.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from philont import tools
from philont.demo_learning import learning_scenes
from philont.memory import Memory
from philont.store import Store

START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
SMALL_TALK = [
    "Morning! Coffee first, then work.",
    "It is raining again in Berlin.",
    "Quick one before my meeting.",
    "Thanks, that helped a lot.",
]


@dataclass
class DemoClock:
    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


class Demo:
    """Plays the script against one database and narrates it."""

    def __init__(self, db: Path, console: Console, seed: int) -> None:
        self.db = db
        self.out = console
        self.rng = random.Random(seed)
        self.clock = DemoClock()
        self.store = Store.open(db, clock=self.clock)

    @contextmanager
    def turn(self) -> Iterator[Memory]:
        with self.store.begin() as mem:
            yield mem

    def say(self, mem: Memory, role: str, text: str) -> None:
        mem.timeline.append(text, role=role)
        who = "[cyan]user[/cyan]" if role == "user" else "[green]assistant[/green]"
        self.out.print(f"  {who}: {escape(text)}")

    def tool(self, mem: Memory, tool: str, **arguments: object) -> tools.ToolResult:
        result = tools.call(tool, arguments, db=mem)
        mark = "✓" if result.ok else "✗"
        first = result.text.splitlines()[0] if result.text else ""
        self.out.print(f"  [dim]tool {tool} {mark}[/dim] {escape(first[:110])}")
        return result

    def host_action(self, mem: Memory, tool_name: str, ok: bool, note: str) -> None:
        """An action of the host agent (a shell command, a file write...), logged for the
        reflector to attribute."""
        mem.actions.record(tool_name, params={"note": note}, success=ok, result=note)
        self.out.print(f"  [dim]action {tool_name} {'✓' if ok else '✗'}[/dim] {escape(note)}")

    def heading(self, text: str) -> None:
        self.out.print(
            f"\n[bold magenta]{escape(text)}[/bold magenta]  "
            f"[dim]{self.clock.now:%Y-%m-%d %H:%M} UTC[/dim]"
        )

    def explain(self, text: str) -> None:
        self.out.print(f"  [yellow]→ {escape(text)}[/yellow]")

    # -- the script ---------------------------------------------------------------------------

    def run(self) -> None:
        self.session_one()
        self.session_two()
        self.session_three()
        self.session_four()
        self.session_five()
        learning_scenes(self)

    def session_one(self) -> None:
        self.heading("Session 1 — getting to know each other")
        with self.turn() as mem:
            self.say(mem, "user", self.rng.choice(SMALL_TALK))
            self.say(mem, "user", "I live in Paris, and right now I'm working from a café.")
            self.tool(mem, "store_fact", namespace="user.home", key="city", value="Paris")
            self.tool(
                mem,
                "store_fact",
                namespace="context",
                key="location",
                value="a café",
                confidence=1.0,
            )
            self.say(
                mem,
                "user",
                "Let's talk about my plan to rent a flat in Berlin: "
                "Kastanienallee 12, 62 m², €1,450 warm.",
            )
            self.tool(
                mem,
                "store_fact",
                namespace="project.berlin_flat",
                key="candidate",
                value="Kastanienallee 12, 62 m², €1,450 warm",
            )
            self.say(mem, "assistant", "Noted: Kastanienallee is good value for Prenzlauer Berg.")

    def session_two(self) -> None:
        self.clock.advance(days=3)
        self.heading("Session 2 — three days later: decay and superseding")
        with self.turn() as mem:
            for ns, key in (("user.home", "city"), ("context", "location")):
                rec = mem.facts.list(ns, ranked=True)[0]
                self.explain(
                    f"{ns}.{key} scores {rec.score:.3f} "
                    + (
                        "(user.* facts never decay)"
                        if ns.startswith("user")
                        else "(context facts fade within days)"
                    )
                )
            self.say(mem, "user", "Good news: I moved to Berlin!")
            self.tool(mem, "store_fact", namespace="user.home", key="city", value="Berlin")
            history = mem.facts.history("user.home", "city")
            self.explain(
                "history of user.home.city: "
                + " ← ".join(
                    f"{h.value} ({'current' if h.active else 'superseded'})" for h in history
                )
            )

    def session_three(self) -> None:
        self.clock.advance(days=1)
        self.heading("Session 3 — a skill is fetched, but fetching is not success")
        with self.turn() as mem:
            mem.skills.create(
                "unzip-archive",
                "Unpack a zip archive into a folder",
                "zip unzip",
                "1. unzip -d <folder> <file.zip>\n2. list the folder",
            )
            mem.skills.create(
                "scrape-with-regex",
                "Scrape prices from HTML with regexes",
                "scrape prices html",
                "1. curl the page\n2. grep the price",
            )
            self.say(mem, "user", "Can you unpack the lease documents zip?")
            self.tool(mem, "use_skill", name="unzip-archive")
            self.clock.advance(minutes=1)
            self.tool(mem, "use_skill", name="unzip-archive")
            skill = mem.skills.get("unzip-archive")
            assert skill is not None
            self.explain(
                f"fetched twice: use_count={skill.use_count}, "
                f"successes={skill.success_count}, grade={skill.grade} (not confirmed)"
            )
        with self.turn() as mem:
            self.clock.advance(minutes=1)
            self.host_action(mem, "shell", True, "unzip -d lease lease.zip → 4 files")
            self.clock.advance(minutes=1)
            self.host_action(mem, "shell", True, "ls lease → contract.pdf, rules.pdf, …")
            self.clock.advance(minutes=10)
            self.say(mem, "user", "Do it again for the photos zip, please.")
            self.tool(mem, "use_skill", name="unzip-archive")
            self.clock.advance(minutes=1)
            self.host_action(mem, "shell", True, "unzip -d photos photos.zip → 31 files")
            self.clock.advance(hours=1)
            report = mem.reflector.run()
            for c in report.credited:
                self.explain(f"reflector: {c.skill} credited {c.outcome} — {c.reason}")
            skill = mem.skills.get("unzip-archive")
            assert skill is not None
            self.explain(f"unzip-archive now: successes={skill.success_count}, grade={skill.grade}")

    def session_four(self) -> None:
        self.clock.advance(days=2)
        self.heading("Session 4 — a skill that keeps failing is deprecated")
        with self.turn() as mem:
            for attempt in range(3):
                self.say(mem, "user", f"Check the flat prices again (try {attempt + 1}).")
                self.tool(mem, "use_skill", name="scrape-with-regex")
                self.clock.advance(minutes=1)
                self.host_action(mem, "shell", False, "grep found no price: the page is JS")
                self.clock.advance(hours=1)
            report = mem.reflector.run()
            failures = sum(1 for c in report.credited if c.outcome == "failure")
            skill = mem.skills.get("scrape-with-regex")
            assert skill is not None
            self.explain(f"reflector recorded {failures} failure(s): grade={skill.grade}")
            self.tool(mem, "use_skill", name="scrape-with-regex")

    def session_five(self) -> None:
        self.clock.advance(days=20)
        self.heading("Session 5 — weeks later: recall and a reminder")
        with self.turn() as mem:
            for _ in range(12):
                self.clock.advance(minutes=2)
                mem.timeline.append(self.rng.choice(SMALL_TALK), role="user")
            question = "Remember when we talked about the flat on Kastanienallee? Was it warm rent?"
            self.say(mem, "user", question)
            hit = mem.recall_trigger.detect(question)
            if hit is not None:
                self.explain(f"recall trigger fired on {hit.snippet!r}")
            ctx = mem.retriever.retrieve(question, recent_limit=6)
            recalled = [m for m in ctx.messages if m.section == "recall"]
            self.explain(
                f"context: {ctx.recency_count} recent + {ctx.recall_count} recalled "
                f"messages, {ctx.total_tokens} tokens"
            )
            old_turn = next((m for m in recalled if "Kastanienallee 12" in m.content), None)
            if old_turn is not None:
                self.explain(
                    f"the old turn is back in context ({old_turn.timestamp:%Y-%m-%d}): "
                    f"{old_turn.content[:80]}"
                )
            self.tool(
                mem,
                "schedule_reminder",
                name="call-landlord",
                message="Call the landlord about the deposit",
                at=(self.clock.now + timedelta(minutes=30)).isoformat(),
            )
        self.clock.advance(minutes=31)
        with self.turn() as mem:
            for claim in mem.schedules.claim_due():
                self.explain(
                    f"reminder due: {claim.schedule.name} — {claim.schedule.payload.get('message')}"
                )


def run(db: Path | None = None, *, seed: int = 7, console: Console | None = None) -> Path:
    """Play the demo on ``db`` (default: a new temporary file) and return its path."""
    console = console or Console()
    if db is None:
        db = Path(tempfile.mkdtemp(prefix="philont-demo-")) / "memory.sqlite"
    demo = Demo(db, console, seed)
    try:
        demo.run()
    finally:
        demo.store.close()
    return db

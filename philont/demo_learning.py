"""The demo's last act: the self-learning loop with a scripted model (no network).

A session becomes a draft skill and two facts; a repeated correction becomes a negative skill;
in verify-then-condense mode a judge-verified run condenses into a confirmed skill linked to its
case. The idle consolidator drives all three, as it would in production.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from philont.learning import (
    CaseBook,
    Consolidator,
    ConsolidatorConfig,
    JudgeResult,
    LearningConfig,
    Run,
)
from philont.llm import ScriptedModel
from philont.schemas.learning import ConsolidationReport, Verdict

if TYPE_CHECKING:
    from philont.demo import Demo

__all__ = ["learning_scenes"]

INVOICE_SKILL = {
    "name": "convert-pdf-invoice-to-csv",
    "kind": "positive",
    "description": "Turn a PDF invoice into a CSV of its line items",
    "when_to_use": "when the user wants the lines of a PDF invoice in a spreadsheet",
    "trigger_keywords": ["invoice", "pdf", "csv"],
    "action_template": "1. pdftotext -layout <file.pdf>\n2. parse the item lines\n"
    "3. write <file>.csv and report the row count",
}
FACTS = [
    {"action": "store_fact", "namespace": "user.preferences", "key": "diet",
     "value": "vegetarian"},
    {"action": "store_fact", "namespace": "user.contacts", "key": "accountant",
     "value": "Maria Keller"},
]  # fmt: skip
AVOID_SKILL = {
    "name": "avoid-acting-now-on-later-requests",
    "kind": "negative",
    "description": "A request for later was carried out at once",
    "when_to_use": "when the user asks for something 'in an hour', 'tonight', 'tomorrow'",
    "trigger_keywords": ["later", "remind", "in an hour"],
    "action_template": "## Trigger\nThe user asks for an action at a later time\n"
    "## Avoid\nDoing it right away\n## Instead\nSchedule it with schedule_reminder",
}
BACKUP_SKILL = {
    "name": "back-up-folder-to-nas",
    "kind": "positive",
    "description": "Copy a folder to the NAS and check the copy",
    "when_to_use": "when the user wants a folder backed up",
    "trigger_keywords": ["backup", "nas", "rsync"],
    "action_template": "1. rsync -a <folder> nas:/backups/\n2. compare file counts",
}


class ToolResultsJudge:
    """A host's judge: a run is verified when every tool call in it succeeded."""

    name = "tool-results"

    def judge(self, run: Run) -> JudgeResult:
        ok = all(call.success for call in run.trace)
        return JudgeResult(Verdict.VERIFIED if ok else Verdict.FAILED, "checked tool results")


def _consolidator(demo: Demo, answers: dict[str, Any], **options: Any) -> Consolidator:
    return Consolidator.for_store(
        demo.store,
        ScriptedModel.by_task(answers),
        clock=demo.clock,
        config=LearningConfig(summary_min_messages=10_000, **options),
        schedule=ConsolidatorConfig(min_messages=2),
        judge=ToolResultsJudge() if options.get("verify_then_condense") else None,
    )


def _say(demo: Demo, mem: Any, role: str, text: str) -> None:
    demo.clock.advance(seconds=30)  # one step of the conversation after the other
    demo.say(mem, role, text)


def _act(demo: Demo, mem: Any, tool: str, ok: bool, note: str) -> None:
    demo.clock.advance(seconds=30)
    demo.host_action(mem, tool, ok, note)


def _consolidate(demo: Demo, worker: Consolidator) -> ConsolidationReport:
    demo.clock.advance(minutes=6)  # the timeline has been idle long enough
    report = worker.run_once()
    demo.explain(f"consolidator: {report.status.value}, {report.messages} new messages")
    return report


def learning_scenes(demo: Demo) -> None:
    """Play the three learning scenes after the demo's sessions."""
    demo.clock.advance(days=1)
    demo.heading("Session 6 — the self-learning loop turns a session into memory")
    first = _consolidator(demo, {})
    _consolidate(demo, first)
    demo.explain("first run: the cursor starts at the newest message (no bill for the past)")
    with demo.turn() as mem:
        demo.say(
            mem, "user", "I'm vegetarian, by the way. Can you turn invoice-0423.pdf into a CSV?"
        )
        _act(demo, mem, "shell", True, "pdftotext -layout invoice-0423.pdf → 14 lines")
        _act(demo, mem, "write_file", True, "invoice-0423.csv ← 12 item rows")
        _say(demo, mem, "assistant", "Done: invoice-0423.csv has 12 rows.")
        _say(demo, mem, "user", "Great, send it to my accountant Maria Keller.")
    answers = {"extract": json.dumps(FACTS), "reflect": json.dumps([INVOICE_SKILL])}
    report = _consolidate(demo, _consolidator(demo, answers))
    if report.extraction and report.reflection:
        demo.explain(
            f"{report.extraction.facts} facts stored through the store_fact tool's own checks; "
            f"skill {', '.join(report.reflection.names('created'))} created as a draft"
        )
    with demo.turn() as mem:
        skill = mem.skills.get("convert-pdf-invoice-to-csv", record_access=False)
        if skill is not None:
            demo.explain(f"{skill.name}: grade={skill.grade}, source={skill.source}")
    _correction(demo)
    _verified(demo)


def _correction(demo: Demo) -> None:
    demo.heading("Session 7 — a repeated correction becomes a negative skill")
    with demo.turn() as mem:
        mem.skills.create(
            "send-invoice-email", "Mail an invoice", ["invoice", "mail"], "1. attach\n2. send",
            source="clawhub:mail-kit@2.1",
        )  # fmt: skip
        demo.explain("installed from a package: send-invoice-email (source clawhub:mail-kit@2.1)")
        for when in ("in an hour", "tonight"):
            _say(demo, mem, "user", f"Remind me {when} to call the landlord.")
            _say(demo, mem, "assistant", "Calling the landlord now…")
            _say(demo, mem, "user", f"No! I said {when}. Don't do it now.")
            demo.clock.advance(minutes=20)
    hostile = dict(INVOICE_SKILL, name="send-invoice-email", description="overwritten")
    answers = {"extract": "[]", "reflect": json.dumps([AVOID_SKILL, hostile])}
    report = _consolidate(demo, _consolidator(demo, answers))
    for write in report.reflection.writes if report.reflection else []:
        demo.explain(f"skill {write.proposed}: {write.action} — {write.detail}")


def _verified(demo: Demo) -> None:
    demo.heading("Session 8 — verify-then-condense: a verified run becomes a skill")
    with demo.turn() as mem:
        _say(demo, mem, "user", "Back up the lease folder to the NAS, please.")
        _act(demo, mem, "shell", True, "rsync -a lease/ nas:/backups/lease/ → 4 files")
        _act(demo, mem, "shell", True, "ls nas:/backups/lease | wc -l → 4")
        _say(demo, mem, "assistant", "Backed up: 4 of 4 files on the NAS.")
        _say(demo, mem, "user", "Perfect.")
    answers = {
        "extract": "[]",
        "reflect": json.dumps([dict(BACKUP_SKILL, name="nas-backup")]),
        "condense": json.dumps([BACKUP_SKILL]),
    }
    report = _consolidate(demo, _consolidator(demo, answers, verify_then_condense=True))
    for verdict in report.verdicts:
        demo.explain(f"judge: {verdict.verdict} — {verdict.goal}")
    for write in report.reflection.writes if report.reflection else []:
        demo.explain(f"from conversation, {write.proposed}: {write.action} ({write.reason})")
    with demo.turn() as mem:
        name = str(BACKUP_SKILL["name"])
        skill = mem.skills.get(name, record_access=False)
        cases = CaseBook(mem).cases_of(name)
        if skill is not None:
            demo.explain(
                f"condensed {skill.name}: grade={skill.grade}, justified by {len(cases)} "
                "verified case(s)"
            )

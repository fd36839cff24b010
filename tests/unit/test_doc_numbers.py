"""The numbers README.md and docs/*.md (learning.md and the reference pages README links to)
state as behaviour (defaults, limits, timeouts, counts) are the code's: each phrase is written
here from the constant it states, so changing the constant without the docs (or the docs
without the constant) fails; and the command line's defaults are the services' they pass on."""

from __future__ import annotations

import inspect
import re
from datetime import timedelta
from pathlib import Path

import pytest
import typer.main

from philont import settings
from philont.cli import app
from philont.db import checkpoint, nesting, pg_layout, retry, stored_values
from philont.db.schema import metadata
from philont.domain import query, recurrence
from philont.domain.attribution import AttributionWindow
from philont.domain.similarity import DUPLICATE_THRESHOLD
from philont.domain.skill_rules import DEFAULT_MAX_DRAFTS
from philont.learning import ConsolidatorConfig, LearningConfig, parse
from philont.learning.config import MIN_LEASE
from philont.llm.base import MAX_TOKENS_PER_CALL
from philont.mcp.depth import MAX_MESSAGE_DEPTH
from philont.mcp.lines import MAX_BATCH_MESSAGES
from philont.schemas import inputs
from philont.services.prefix import PrefixLimits
from philont.services.retriever import TimelineRetriever
from philont.services.search import scoring
from philont.tools import handlers, registry
from philont.transfer import load
from philont.transfer.format import MAX_LINE_CHARS

ROOT = Path(__file__).resolve().parents[2]


def _text(name: str) -> str:
    """The document with every run of white space (line breaks included) as one space."""
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def _n(value: int) -> str:
    return f"{value:,}"


RETRIEVE = inspect.signature(TimelineRetriever.retrieve).parameters
LEARNING, SCHEDULE = LearningConfig(), ConsolidatorConfig()
WINDOW = AttributionWindow()

README = [
    f"`busy_timeout` ({settings.BUSY_TIMEOUT_MS // 1000} s;",
    f"`busy_timeout={settings.BUSY_TIMEOUT_MS}`",
    f"(up to {settings.MIGRATION_BUSY_TIMEOUT_MS // 60_000} minutes, saying so",
    f"{retry.DEFAULT_ATTEMPTS} attempts in all with a jittered backoff",
    f"one limit policy — 1..{_n(inputs.MAX_LIMIT)} —",
    f"every `--limit` is the one limit policy (1..{_n(inputs.MAX_LIMIT)})",
    f"at most {_n(inputs.MAX_ARGUMENT_BYTES)} bytes of UTF-8 JSON",
    f"cut at a line to {_n(registry.MAX_RESULT_CHARS)} characters",
    f"`list_upcoming` shows {handlers.UPCOMING_SHOWN} and says how many more",
    f"from 0 to 2^{MAX_TOKENS_PER_CALL.bit_length() - 1} (`MAX_TOKENS_PER_CALL`",
    f"into {pg_layout.PARTITIONS} partitions (a fixed number)",
    f"all {sum(not t.startswith('philont_') for t in metadata.tables)} tables of Philont's schema",
    f"(`recent_budget_tokens={RETRIEVE['recent_budget_tokens'].default}`, at most"
    f" `recent_limit={RETRIEVE['recent_limit'].default}`",
    f"(`recall_budget_tokens={RETRIEVE['recall_budget_tokens'].default}`, from the best"
    f" `recall_candidates={RETRIEVE['recall_candidates'].default}` matches",
    f"most `max_hold` ({SCHEDULE.max_hold // timedelta(hours=1)} hour) after the claim",
]

REFERENCE = {  # what README's reference pages state (moved from README, or said in both)
    "docs/python-api.md": [
        f"a `busy_timeout_ms` outside 0..2**{(inputs.MAX_BUSY_TIMEOUT_MS + 1).bit_length() - 1}-1",
        f"`attempts` outside 1..{inputs.MAX_ATTEMPTS}",
    ],
    "docs/concurrency.md": [
        f"(first after {nesting.FIRST_LOOK_S * 1000:g} ms, then at most every"
        f" {nesting.LONGEST_LOOK_S:g} s, `pg_blocking_pids`)",
        f"`busy_timeout` ({settings.BUSY_TIMEOUT_MS // 1000} s;",
        f"{retry.DEFAULT_ATTEMPTS} attempts in all with a jittered backoff",
    ],
    "docs/databases.md": [
        f"ends after {checkpoint.IDLE_S:g} s without any",
        f"stays on at {_n(checkpoint.SAFETY_PAGES)} pages",
        f"`busy_timeout={settings.BUSY_TIMEOUT_MS}`",
        f"(up to {settings.MIGRATION_BUSY_TIMEOUT_MS // 60_000} minutes, saying so",
        f"in memory, up to {load.SPILL_BYTES >> 20} MiB of pages, instead of writing them",
    ],
    "docs/tools.md": [
        f"a search query: at most {_n(inputs.MAX_QUERY_CHARS)} characters",
        f"only its first {_n(query.MAX_SCAN_CHARS)} are read",
        f"`list_upcoming` shows {handlers.UPCOMING_SHOWN} lines",
        f"at most its first {handlers.UPCOMING_PER_SERIES} occurrences there",
        f"up to {inputs.MAX_TEXT_CHARS >> 20} Mi characters per message or note",
        f"nests at most {stored_values.MAX_JSON_DEPTH} levels",
        f"deeper than {MAX_MESSAGE_DEPTH} levels of arrays and objects",
        f"a batch of more than {MAX_BATCH_MESSAGES} messages",
        f"(`interval_ms` {recurrence.MIN_INTERVAL_MS}..{_n(recurrence.MAX_INTERVAL_MS)},",
        f"at most {_n(inputs.MAX_ARGUMENT_BYTES)} bytes of UTF-8 JSON",
        f"cut at a line to {_n(registry.MAX_RESULT_CHARS)} characters",
        f"`list_upcoming` shows {handlers.UPCOMING_SHOWN} and says how many more",
        f"when it fits what a model reads back ({_n(registry.MAX_RESULT_CHARS)} characters)",
    ],
    "docs/cli.md": [
        f"A line is at most {MAX_LINE_CHARS >> 20} Mi characters",
        f"every `--limit` is the one limit policy (1..{_n(inputs.MAX_LIMIT)})",
    ],
    "docs/search.md": [
        f"per word its best {scoring.CANDIDATES_PER_TERM} matches, a word too common for bm25 its"
        f" newest {scoring.PRESENCE_WINDOW})",
        f"(`recent_budget_tokens={RETRIEVE['recent_budget_tokens'].default}`, at most"
        f" `recent_limit={RETRIEVE['recent_limit'].default}`",
        f"(`recall_budget_tokens={RETRIEVE['recall_budget_tokens'].default}`, from the best"
        f" `recall_candidates={RETRIEVE['recall_candidates'].default}` matches",
    ],
    "docs/postgresql.md": [
        f"into {pg_layout.PARTITIONS} partitions (a fixed number)",
    ],
}

LEARNING_DOC = [
    f"the first {_n(parse.MAX_ANSWER_CHARS)} characters are read",
    f"the first {parse.MAX_ITEMS} items are used",
    f"(`more than {parse.MAX_ITEMS} items`, counted in the report)",
    f'("At most {parse.MAX_ITEMS} actions, the most important first")',
    f"`max_prompt_chars` ({_n(LEARNING.max_prompt_chars)}) bounds every prompt",
    f"≥ 5, default {DEFAULT_MAX_DRAFTS})",
    f"`idle_after` ({SCHEDULE.idle_after.seconds // 60} min) old",
    f"at most `batch_size` ({_n(SCHEDULE.batch_size)})",
    f"at least `min_messages` ({SCHEDULE.min_messages})",
    f"its claimer's lease ({SCHEDULE.lease.seconds // 60} min)",
    f"`max_hold` ({SCHEDULE.max_hold // timedelta(hours=1)} hour, "
    f"{SCHEDULE.max_hold // SCHEDULE.lease} default leases;",
    f"a `lease` or `max_hold` under {MIN_LEASE.total_seconds():g} second (a lease of a",
    f"`answer_attempts`-th unreadable answer ({SCHEDULE.answer_attempts};",
    f"{retry.DEFAULT_ATTEMPTS} attempts in all (`philont.db.retry.run_unit`",
    f"the next user turn, {WINDOW.max_duration.seconds // 60} min or {WINDOW.max_actions} actions)",
    f"near-duplicate (≥ {DUPLICATE_THRESHOLD}) of a same-kind",
    f"any count above {_n(inputs.MAX_SETTING)} (`MAX_SETTING`)",
    f"a duration over {inputs.MAX_SETTING_DURATION.days} days)",
]


@pytest.mark.parametrize(
    ("doc", "phrase"),
    [("README.md", p) for p in README]
    + [(doc, p) for doc, phrases in REFERENCE.items() for p in phrases]
    + [("docs/learning.md", p) for p in LEARNING_DOC],
)
def test_the_number_the_docs_state_is_the_codes(doc: str, phrase: str) -> None:
    assert phrase in _text(doc), f"{doc} no longer says: {phrase}"


@pytest.mark.parametrize("doc", ["README.md", "docs/concurrency.md"])
def test_the_pool_the_docs_describe_is_the_stores(doc: str, tmp_path: Path) -> None:
    from philont import Store

    said = re.search(
        r"pool holds (\d+) connections \(SQLAlchemy's (\d+) \+ (\d+) overflow\).*?"
        r"timeout \((\d+) s\)",
        _text(doc),
    )
    assert said is not None
    total, size, overflow, timeout = (int(g) for g in said.groups())
    with Store.open(tmp_path / "m.sqlite") as store:
        pool = store.engine.pool
        assert (pool.size(), pool._max_overflow, pool._timeout) == (size, overflow, timeout)  # type: ignore[attr-defined]
    assert total == size + overflow


def _defaults(*path: str) -> dict[str, object]:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return {p.name: p.default for p in command.params if p.name is not None}


def test_the_command_lines_defaults_are_the_services() -> None:
    recall = _defaults("recall")
    assert recall["recent"] == RETRIEVE["recent_limit"].default
    assert recall["recent_budget"] == RETRIEVE["recent_budget_tokens"].default
    assert recall["recall_budget"] == RETRIEVE["recall_budget_tokens"].default
    assert _defaults("prefix")["budget"] == PrefixLimits().budget_tokens


MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_the_similarity_floor_readme_gives_an_embedder_that_states_none() -> None:
    from philont.embed import HashEmbedder
    from philont.embed.base import KNOWN_FLOORS, similarity_floor

    text = _text("README.md")
    assert "gets `4 / sqrt(dimension)` (at most 0.95)" in text
    assert f"all-MiniLM-L6-v2's measured floor ({KNOWN_FLOORS[MINILM]})" in text
    for dimension in (8, 16, 64, 384):
        assert similarity_floor(HashEmbedder(dimension)) == min(4 / dimension**0.5, 0.95)


def test_the_readmes_tools_are_the_tools() -> None:
    from philont import tools

    text = _text("README.md")
    listed = re.search(r"## The (\w+) model tools `([a-z_ ·]+)`", text)
    assert listed is not None
    names = listed.group(2).split(" · ")
    assert sorted(names) == sorted(t["name"] for t in tools.anthropic_tools())
    words = ["ten", "eleven", "twelve", "thirteen"]
    assert listed.group(1) == words[len(names) - 10]
    assert text.count(f"the same {listed.group(1)} tools") == 1

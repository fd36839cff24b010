"""Keyword-recall benchmark: evidence recall@k on LoCoMo, a Chinese set, and retrieval latency.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_recall.py                  # the four dev conversations
    .venv/bin/python scripts/bench_recall.py --compare before default   # paired difference
    .venv/bin/python scripts/bench_recall.py --config NAME    # another named configuration
    .venv/bin/python scripts/bench_recall.py --misses         # where evidence is missed
    .venv/bin/python scripts/bench_recall.py --baseline       # + the original, + a plain OR query
    .venv/bin/python scripts/bench_recall.py --data PATH ...  # other LoCoMo-format files/folders
    .venv/bin/python scripts/bench_recall.py --retriever      # also the TimelineRetriever window
    .venv/bin/python scripts/bench_recall.py --no-context     # also ours without context scores
    .venv/bin/python scripts/bench_recall.py --zh [--baseline]  # the Chinese set only
    .venv/bin/python scripts/bench_recall.py --scale 100000   # retrieve() latency vs raw sqlite3
    .venv/bin/python scripts/bench_recall.py --embedder NAME  # keyword, vector, fused (#18)
    .venv/bin/python scripts/bench_recall.py --embedder NAME --scale 100000  # fused latency
    .venv/bin/python scripts/bench_recall.py --url postgresql+psycopg://u:p@host/db [--agent A]
        # SQLite and PostgreSQL side by side (LoCoMo and the Chinese set; the agent, default
        # bench_recall, is deleted and recreated in the layout the URL's search_path names)

Each conversation lives in a database of its own (see ``_recall_data``); every question of
categories 1-4 is asked as a recall query at the conversation's end (its ``now``), and evidence
recall@k is the share of its evidence turns among the first k hits, averaged over questions.
Figures are pooled over every question, with a percentile-bootstrap 95% interval (questions
resampled, seeded), per conversation and per category; ``--compare A B`` gives the paired
difference B - A per question with its interval. The Chinese set and the share of questions
with no hit at all (zero%) are reported with every run.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import _bench_common as bc
import _bench_embed
from _recall_baselines import baseline, plain_or
from _recall_data import (
    DEV_DATA,
    ZH_DATA,
    Conversation,
    Question,
    load_paths,
    load_zh,
    pg_database,
    sqlite_database,
)
from _recall_misses import print_misses
from _recall_scale import pct, scale
from sqlalchemy.engine import make_url

from philont.domain.ranking import RankingOptions
from philont.memory import Memory
from philont.services.search import SearchService
from philont.store import Store

KS = (5, 10, 20)
DEFAULT_AGENT = "bench_recall"

# --- configurations --------------------------------------------------------------------------

CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-context": {"context_weights": ()},
    "before": {"ranking": RankingOptions.none()},
}
"""Named sets of :class:`SearchService` options. ``default``: the service as it ships;
``before``: every mechanism of issue #16 off (the starting point)."""

Searcher = Callable[[Memory, str, datetime], list[int]]


def options_of(name: str) -> dict[str, Any]:
    """A named configuration's options, or an ad-hoc one: ``default`` or ``before`` with some
    :class:`RankingOptions` fields changed, written ``BASE:field=value,field=value``."""
    if name in CONFIGS:
        return CONFIGS[name]
    base, _, changes = name.partition(":")
    if base not in CONFIGS or not changes:
        raise argparse.ArgumentTypeError(f"unknown configuration {name!r}")
    options = dict(CONFIGS[base])
    ranking = options.get("ranking", RankingOptions())
    fields: dict[str, Any] = {}
    for item in changes.split(","):
        key, _, value = (part.strip() for part in item.partition("="))
        if not hasattr(ranking, key):
            raise argparse.ArgumentTypeError(f"RankingOptions has no field {key!r}")
        kind = type(getattr(ranking, key))
        fields[key] = value not in ("0", "false") if kind is bool else kind(value)
    options["ranking"] = replace(ranking, **fields)
    return options


def configured(name: str) -> Searcher:
    """Ours with the named configuration's options."""
    options = options_of(name)

    def search(mem: Memory, question: str, now: datetime) -> list[int]:
        hits = SearchService(mem, **options).messages(question, limit=max(KS), now=now)
        return [h.id for h in hits]

    return search


def retriever_window(mem: Memory, question: str, now: datetime) -> list[int]:
    """Message ids of the whole retriever window (recall section first)."""
    result = mem.retriever.retrieve(question, now=now)
    return [m.message_id for m in result.messages if m.message_id is not None]


# --- measuring -------------------------------------------------------------------------------


@dataclass
class Score:
    """One searcher's answers: per question, its hits in order and the time taken."""

    questions: list[Question] = field(default_factory=list)
    ranked: list[list[int]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def add(self, q: Question, ids: list[int], seconds: float) -> None:
        self.questions.append(q)
        self.ranked.append(list(ids))
        self.latencies.append(seconds)

    def recalls(self, k: int, keep: Callable[[Question], bool] = lambda q: True) -> list[float]:
        """Each kept question's evidence recall@k, in question order."""
        return [
            len(q.evidence & set(ids[:k])) / len(q.evidence)
            for q, ids in zip(self.questions, self.ranked, strict=True)
            if keep(q)
        ]

    def zero(self) -> float:
        return sum(1 for ids in self.ranked if not ids) / max(len(self.ranked), 1)

    def found(self, k: int = 10) -> int:
        """Questions with at least one evidence message in the top k."""
        return sum(1 for r in self.recalls(k) if r > 0)

    def row(self) -> dict[str, float]:
        lat = sorted(self.latencies) or [0.0]
        return {
            **{f"R@{k}": statistics.fmean(self.recalls(k) or [0.0]) for k in KS},
            "zero": self.zero(),
            "p50_ms": pct(lat, 50) * 1000,
            "p95_ms": pct(lat, 95) * 1000,
        }


def run(
    conversations: list[Conversation],
    searchers: dict[str, Searcher],
    opener: Callable[[Conversation], AbstractContextManager[Store]] = sqlite_database,
) -> dict[str, Score]:
    scores = {name: Score() for name in searchers}
    for conv in conversations:
        now = conv.now
        with opener(conv) as store, store.begin(write=False) as mem:
            for q in conv.questions:
                for name, search in searchers.items():
                    start = time.perf_counter()
                    ids = search(mem, q.text, now)
                    scores[name].add(q, ids, time.perf_counter() - start)
    return scores


# --- reporting -------------------------------------------------------------------------------


def _ci(values: Sequence[float], signed: bool = False) -> str:
    mean, lo, hi = bc.bootstrap_interval(values)
    if signed:
        return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def _conversations(scores: dict[str, Score]) -> list[str]:
    first = next(iter(scores.values()))
    return list(dict.fromkeys(q.conversation for q in first.questions))


def _categories(scores: dict[str, Score]) -> list[Any]:
    first = next(iter(scores.values()))
    return sorted({q.category for q in first.questions}, key=str)


def _width(scores: dict[str, Score]) -> int:
    return max(12, *(len(name) + 2 for name in scores))


def print_scores(title: str, scores: dict[str, Score]) -> None:
    """Pooled recall with 95% intervals, then recall@10 per conversation and per category."""
    w = _width(scores)
    print(f"\n{title}")
    print(f"pooled, bootstrap 95% intervals ({bc.BOOTSTRAP_RESAMPLES} resamples of questions):")
    print(f"{'':<{w}}" + "".join(f"{f'R@{k}':>24}" for k in KS) + f"{'zero%':>8}{'p50 ms':>8}")
    for name, s in scores.items():
        r = s.row()
        cells = "".join(f"{_ci(s.recalls(k)):>24}" for k in KS)
        print(f"{name:<{w}}{cells}{100 * r['zero']:>8.1f}{r['p50_ms']:>8.2f}")
    convs = _conversations(scores)
    if len(convs) > 1:
        print("recall@10 per conversation:")
        print(f"{'':<{w}}" + "".join(f"{c:>10}" for c in convs) + f"{'spread':>10}")
        for name, s in scores.items():
            values = [
                statistics.fmean(s.recalls(10, lambda q, c=c: q.conversation == c)) for c in convs
            ]
            cells = "".join(f"{v:>10.3f}" for v in values)
            print(f"{name:<{w}}{cells}{max(values) - min(values):>10.3f}")
    cats = _categories(scores)
    if len(cats) <= 8:
        print("recall@10 per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):")
        for name, s in scores.items():
            cells = "  ".join(
                f"{c}: {_ci(s.recalls(10, lambda q, c=c: q.category == c))}"
                f" n={len(s.recalls(10, lambda q, c=c: q.category == c))}"
                for c in cats
            )
            print(f"  {name:<{w}} {cells}")
    for other, label in (("baseline", "the original"), ("plain-or", "a plain OR query")):
        if other in scores and "ours" in scores:
            for k in KS:
                b = statistics.fmean(scores[other].recalls(k))
                o = statistics.fmean(scores["ours"].recalls(k))
                ratio = f"{o / b:.2f}x" if b > 0 else f"inf ({other} finds nothing)"
                print(f"  recall@{k}: ours {o:.3f} vs {label} {b:.3f} -> {ratio}")


def print_compare(a_name: str, b_name: str, a: Score, b: Score) -> None:
    """B - A paired by question: pooled with intervals, per conversation, per category."""
    print(f"\n{b_name} - {a_name}, paired by question (bootstrap 95% intervals):")

    def diffs(k: int, keep: Callable[[Question], bool] = lambda q: True) -> list[float]:
        return [y - x for x, y in zip(a.recalls(k, keep), b.recalls(k, keep), strict=True)]

    print("  pooled " + "  ".join(f"R@{k} {_ci(diffs(k), signed=True)}" for k in KS))
    ten = diffs(10)
    up, down = sum(1 for d in ten if d > 0), sum(1 for d in ten if d < 0)
    print(f"  recall@10 better on {up} question(s), worse on {down}, of {len(ten)}")
    convs = list(dict.fromkeys(q.conversation for q in a.questions))
    if len(convs) > 1:
        per = {c: statistics.fmean(diffs(10, lambda q, c=c: q.conversation == c)) for c in convs}
        helped = sum(1 for v in per.values() if v > 0)
        hurt = sum(1 for v in per.values() if v < 0)
        print(
            "  R@10 per conversation: "
            + "  ".join(f"{c} {v:+.3f}" for c, v in per.items())
            + f"  (better on {helped}, worse on {hurt} of {len(convs)})"
        )
    cats = sorted({q.category for q in a.questions}, key=str)
    if len(cats) <= 8:
        print(
            "  R@10 per category: "
            + "  ".join(
                f"{c}: {_ci(diffs(10, lambda q, c=c: q.category == c), True)}" for c in cats
            )
        )


def print_zh(scores: dict[str, Score], zh: Conversation) -> None:
    w = _width(scores)
    print(
        f"\nChinese set {ZH_DATA.name}: {len(zh.messages)} messages, {len(zh.questions)}"
        " questions (two-character words)"
    )
    print(f"{'':<{w}}{'R@5':>8}{'R@10':>8}{'R@20':>8}{'zero%':>8}{'found@10':>10}")
    for name, s in scores.items():
        r = s.row()
        cells = "".join(f"{r[f'R@{k}']:>8.3f}" for k in KS)
        print(f"{name:<{w}}{cells}{100 * r['zero']:>8.1f}{f'{s.found()}/{len(s.questions)}':>10}")


# --- SQLite vs PostgreSQL ---------------------------------------------------------------------


def print_side_by_side(title: str, sqlite: Score, pg: Score, *, found: bool = False) -> None:
    """One table: SQLite, PostgreSQL and their difference (PostgreSQL minus SQLite)."""
    print(f"\n{title}")
    cols = ("R@5", "R@10", "R@20", "zero%", "p50 ms", "p95 ms")
    if found:
        cols += ("found@10",)
    print(f"{'':<14}" + "".join(f"{c:>9}" for c in cols))
    a, b = sqlite.row(), pg.row()
    keys = ("R@5", "R@10", "R@20")

    def line(name: str, r: dict[str, float], s: Score) -> str:
        out = f"{name:<14}" + "".join(f"{r[k]:>9.3f}" for k in keys)
        out += f"{100 * r['zero']:>9.1f}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
        if found:
            out += f"{f'{s.found()}/{len(s.questions)}':>9}"
        return out

    print(line("sqlite", a, sqlite))
    print(line("postgresql", b, pg))
    diff = {k: b[k] - a[k] for k in a}
    text_ = f"{'pg - sqlite':<14}" + "".join(f"{diff[k]:>+9.3f}" for k in keys)
    text_ += f"{100 * diff['zero']:>+9.1f}{diff['p50_ms']:>+9.2f}{diff['p95_ms']:>+9.2f}"
    if found:
        text_ += f"{pg.found() - sqlite.found():>+9d}"
    print(text_)
    n = len(sqlite.questions)
    same = sum(1 for x, y in zip(sqlite.ranked, pg.ranked, strict=True) if x[:10] == y[:10])
    top = sum(1 for x, y in zip(sqlite.ranked, pg.ranked, strict=True) if x[:1] == y[:1])
    print(f"  same top hit on {top}/{n} questions, same top 10 (in order) on {same}/{n}")


def print_differences(sqlite: Score, pg: Score, limit: int) -> None:
    """The questions whose recall@10 differs most between the backends (for diagnosis)."""
    rows = []
    for q, x, y in zip(sqlite.questions, sqlite.ranked, pg.ranked, strict=True):
        a = len(q.evidence & set(x[:10])) / len(q.evidence)
        b = len(q.evidence & set(y[:10])) / len(q.evidence)
        if a != b:
            rows.append((b - a, q, x, y))
    print(f"  recall@10 differs on {len(rows)} question(s); the {min(limit, len(rows))} largest:")
    for delta, q, x, y in sorted(rows, key=lambda r: -abs(r[0]))[:limit]:
        print(f"  {delta:+.2f} {q.text!r} evidence {sorted(q.evidence)}")
        print(f"        sqlite {x[:10]}")
        print(f"        pg     {y[:10]}")


def compare_backends(
    conversations: list[Conversation], config: str, url: str, agent: str, show: int
) -> None:
    """Ours on SQLite and on PostgreSQL, LoCoMo then the Chinese set, side by side."""
    pg = pg_database(url, agent)
    print(f"postgresql: {make_url(url).render_as_string()} (agent {agent})")
    searchers = {"ours": configured(config)}
    n_q = sum(len(c.questions) for c in conversations)
    n_m = sum(len(c.messages) for c in conversations)
    a = run(conversations, searchers)["ours"]
    b = run(conversations, searchers, pg)["ours"]
    print_side_by_side(
        f"LoCoMo, {len(conversations)} conversation(s): {n_m} messages, {n_q} questions"
        f" (ours, {config})",
        a,
        b,
    )
    if show:
        print_differences(a, b, show)
    zh = load_zh(ZH_DATA)
    a = run([zh], searchers)["ours"]
    b = run([zh], searchers, pg)["ours"]
    print_side_by_side(
        f"Chinese set {ZH_DATA.name}: {len(zh.messages)} messages, {len(zh.questions)} questions"
        " (found@10: questions with their message in the top 10)",
        a,
        b,
        found=True,
    )
    if show:
        print_differences(a, b, show)


# --- main ------------------------------------------------------------------------------------


def machine() -> str:
    return (
        f"machine: {platform.platform()} | {platform.processor() or platform.machine()} | "
        f"python {platform.python_version()} | sqlite {sqlite3.sqlite_version}"
    )


def _config(name: str) -> str:
    options_of(name)  # raises for an unknown name or field
    return name


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[DEV_DATA],
        help="LoCoMo-format JSON files or folders of them (default: the four dev conversations)",
    )
    parser.add_argument(
        "--config",
        default="default",
        type=_config,
        help=f"the configuration of ours ({', '.join(CONFIGS)}, or BASE:field=value,...)",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        type=_config,
        metavar=("A", "B"),
        help="two configurations, paired by question",
    )
    parser.add_argument(
        "--misses",
        action="store_true",
        help="also where the evidence turns are, by category (the compared configurations)",
    )
    parser.add_argument("--baseline", action="store_true", help="also run the original's search")
    parser.add_argument("--retriever", action="store_true", help="also the retriever window")
    parser.add_argument("--zh", action="store_true", help="the Chinese set only")
    parser.add_argument(
        "--no-context", action="store_true", help="also ours without conversation context"
    )
    parser.add_argument("--scale", type=int, metavar="N", help="time retrieve() at N messages")
    parser.add_argument(
        "--scale-db", type=Path, metavar="PATH", help="keep the --scale database here (reused)"
    )
    parser.add_argument(
        "--url",
        metavar="URL",
        help="also on this PostgreSQL server (postgresql+psycopg://...): both backends side by"
        " side, LoCoMo and the Chinese set",
    )
    parser.add_argument(
        "--agent",
        default=DEFAULT_AGENT,
        help=f"the agent used with --url, deleted and recreated (default {DEFAULT_AGENT})",
    )
    parser.add_argument(
        "--show-diff",
        type=int,
        default=0,
        metavar="N",
        help="with --url: list the N questions whose recall@10 differs most",
    )
    _bench_embed.add_arguments(parser)
    return parser


def _searchers(args: argparse.Namespace) -> dict[str, Searcher]:
    """The configurations the command line asks to compare."""
    searchers: dict[str, Searcher] = {}
    if args.compare:
        searchers = {name: configured(name) for name in args.compare}
    else:
        searchers["ours"] = configured(args.config)
    if args.baseline:
        searchers["baseline"] = baseline
        searchers["plain-or"] = plain_or
    if args.no_context:
        searchers["no-context"] = configured("no-context")
    if args.retriever:
        searchers["retriever"] = retriever_window
    return searchers


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    print(machine())
    if args.embedder:  # issue #18: scripts/_bench_embed.py
        return _bench_embed.main(args, KS, Score, print_scores, print_compare)
    if args.scale:
        scale(args.scale, args.scale_db)
        return 0
    missing = [p for p in args.data if not p.exists()]
    if missing and not args.zh:
        print(f"no data at {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    if args.url:
        conversations = load_paths(args.data)
        compare_backends(conversations, args.config, args.url, args.agent, args.show_diff)
        return 0
    searchers = _searchers(args)
    zh = load_zh(ZH_DATA)
    zh_scores = run([zh], searchers)
    if not args.zh:
        conversations = load_paths(args.data)
        n_q = sum(len(c.questions) for c in conversations)
        n_m = sum(len(c.messages) for c in conversations)
        skipped = sum(c.skipped_questions for c in conversations)
        scores = run(conversations, searchers)
        print_scores(
            f"LoCoMo: {len(conversations)} conversation(s), {n_m} messages, {n_q} questions of"
            f" categories 1-4 ({skipped} without usable evidence skipped)",
            scores,
        )
        if args.compare:
            a, b = args.compare
            print_compare(a, b, scores[a], scores[b])
        if args.misses:
            for name in args.compare or [args.config]:
                print_misses(conversations, name, options_of(name), sqlite_database)
    print_zh(zh_scores, zh)
    if args.compare:
        a, b = args.compare
        print_compare(a, b, zh_scores[a], zh_scores[b])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

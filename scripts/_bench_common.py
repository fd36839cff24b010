"""Shared helpers of the benchmark scripts (``bench_write``, ``bench_context``, ``bench_migrate``).

* the machine (platform, CPU model, cores, memory, Python, SQLite, SQLAlchemy);
* timing (``time.perf_counter_ns``) and percentiles;
* peak RSS of one measurement: each runs in a fresh *spawned* child process and reads its own
  ``VmHWM`` (the kernel's high-water mark of the child's address space; ``ru_maxrss`` would not
  do: a child started with vfork+exec inherits the parent's peak), so figures per size compare;
* the raw sqlite3 baseline connection (the PRAGMAs ``philont.db.engine`` sets);
* databases at head built once (``philont.migrate.upgrade``) and copied, a cache directory;
* deterministic synthetic history: English with a Zipf vocabulary plus rare terms, ~10%
  Chinese, conversations spread over sessions and a year; facts, skills and notes;
* rewriting ONE marked section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import os
import platform
import random
import re
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "benchmarks.md"
CACHE = Path(tempfile.gettempdir()) / "philont-bench-cache"

T = TypeVar("T")

# Bump when the generated data changes, so cached databases are rebuilt.
DATA_VERSION = 1

# The synthetic history ends here; a context turn happens one hour later.
HISTORY_END_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
YEAR_MS = 365 * 86_400_000
TURN_NOW = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)


# --- machine ---------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine_info() -> dict[str, str]:
    """What the figures were measured on."""
    import sqlalchemy

    cores = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = cores
    mem = _mem_total_gib()
    return {
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": f"{cores} logical ({usable} usable)",
        "memory": f"{mem:.1f} GiB" if mem is not None else "unknown",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
    }


def machine_line() -> str:
    return " | ".join(f"{k} {v}" for k, v in machine_info().items())


def machine_markdown() -> str:
    info = machine_info()
    return "\n".join(f"- {k}: {v}" for k, v in info.items())


# --- timing and statistics -------------------------------------------------------------------

now_ns = time.perf_counter_ns


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolation percentile (numpy's default); 0.0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    if len(s) == 1:
        return float(s[0])
    pos = (len(s) - 1) * pct / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return float(s[lo] + (s[hi] - s[lo]) * (pos - lo))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 7


def bootstrap_interval(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """The mean of ``values`` and a percentile-bootstrap interval for it: ``resamples`` samples
    of the values drawn with replacement, from a generator seeded with ``seed`` (the same values
    give the same interval). For a paired comparison, pass the per-item differences."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    data = list(values)
    means = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return math.fsum(data) / n, percentile(means, 100 * tail), percentile(means, 100 * (1 - tail))


def fmt_num(value: float, digits: int = 2) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def yes_no(ok: bool) -> str:
    return "yes" if ok else "**no**"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (also readable as plain text in a terminal)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def human_count(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return f"{n:,}"


def parse_count(text: str) -> int:
    """``10k``, ``1M``, ``100000`` or ``100_000`` as an int (for argparse)."""
    t = text.strip().lower().replace("_", "").replace(",", "")
    factor = 1
    if t.endswith("k"):
        factor, t = 1000, t[:-1]
    elif t.endswith("m"):
        factor, t = 1_000_000, t[:-1]
    return int(float(t) * factor)


# --- memory ----------------------------------------------------------------------------------


def _proc_status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (VmHWM; ru_maxrss where there is none)."""
    kib = _proc_status_kib("VmHWM")
    if kib is None:
        raw = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kib = raw // 1024 if sys.platform == "darwin" else raw
    return kib / 1024


def current_rss_mib() -> float:
    kib = _proc_status_kib("VmRSS")
    return peak_rss_mib() if kib is None else kib / 1024


def run_isolated(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a fresh spawned process (one measurement, its own peak RSS) and
    return its result. ``fn`` must be a module-level function of an importable module."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(fn, *args).result()


# --- databases -------------------------------------------------------------------------------


def connect_raw(path: Path | str) -> sqlite3.Connection:
    """Plain sqlite3 with the PRAGMAs of ``philont.db.engine`` (busy_timeout first, WAL,
    synchronous=NORMAL, foreign keys on) and BEGIN/COMMIT in our hands."""
    from philont import settings

    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {settings.BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _schema_key() -> str:
    """Changes whenever the migration scripts change (so cached databases follow them)."""
    from philont import migrate

    h = hashlib.sha256()
    for p in sorted(migrate.script_location().glob("versions/*.py")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return f"{migrate.head_revision()}-{h.hexdigest()[:10]}"


def copy_db(src: Path, dst: Path) -> None:
    """Consistent copy through the SQLite backup API (no -wal left behind), mode 0600."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    for p in (dst, Path(f"{dst}-wal"), Path(f"{dst}-shm")):
        p.unlink(missing_ok=True)
    with closing(sqlite3.connect(str(src))) as s, closing(sqlite3.connect(str(dst))) as d:
        s.backup(d)
    dst.chmod(0o600)


def schema_template() -> Path:
    """An empty database at head, built once with ``philont.migrate.upgrade`` and cached."""
    from philont import migrate

    path = CACHE / f"schema-{_schema_key()}.sqlite"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="philont-bench-", dir=CACHE) as tmp:
        built = Path(tmp) / "memory.sqlite"
        migrate.upgrade(built)
        finish_db(built)
        partial = path.with_suffix(".partial")
        copy_db(built, partial)
        partial.replace(path)
    return path


def new_db(path: Path) -> Path:
    """A fresh database at head (a copy of the cached template) at ``path``."""
    copy_db(schema_template(), path)
    return path


def finish_db(path: Path) -> None:
    """Checkpoint the WAL into the main file and truncate it (before copying or caching)."""
    with closing(sqlite3.connect(str(path))) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def remove_db(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


def db_size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists()) / 1e6


def scratch_dir(prefix: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=CACHE))


# --- synthetic history -----------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


# Everyday English by rough frequency rank (function words first): Zipf weights follow the rank.
_COMMON = _words("""
the I to and a you of it is that in for my we on be this with have do not can what are was
but so just me it's at if about will your like can't get would know think there how one all
they or from as an no yes he she ok okay time go more when up out then maybe now some want
need good really also well here should could which going because been did has had them
their were our us any much make see look right back try still very sure thanks thank let's
""")

_TOPICS = _words("""
apartment flat rent deposit landlord lease contract neighbourhood kitchen balcony heating
Berlin Shanghai Munich Hamburg Kreuzberg Neukölln Prenzlauer visa residence permit blue card
appointment embassy office registration Anmeldung tax insurance health doctor dentist
pharmacy prescription allergy pollen gym running marathon training knee physio diet protein
recipe dumplings noodles pasta risotto curry bread sourdough oven coffee tea matcha breakfast
dinner lunch restaurant reservation birthday party gift flowers sister brother mother father
parents grandmother daughter son wife husband friend colleague manager team interview offer
salary negotiation promotion resume portfolio backend frontend engineer Go Rust Python
TypeScript Kubernetes Docker database Postgres SQLite migration index query latency cache
deploy pipeline release bug fix test review branch merge commit refactor service endpoint
API timeout retry queue worker cron schedule reminder calendar meeting standup deadline
sprint roadmap budget invoice payment bank account transfer savings mortgage loan pension
flight train ticket hotel booking passport luggage airport layover Lisbon Tokyo Kyoto Seoul
Vienna Prague weekend holiday vacation hiking camping beach mountain lake bicycle repair
laptop keyboard monitor headphones battery charger phone backup password router wifi printer
plant garden tomato basil watering cat dog vet walk food toy guitar piano lesson song concert
book novel chapter podcast movie series episode language German Chinese Japanese grammar
vocabulary exam homework course university thesis paper deadline conference talk slides
weather rain snow cold warm spring summer autumn winter morning evening tonight tomorrow
yesterday Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March
April May June July August September October November December plan idea problem question
answer decision option price cost cheaper expensive compare choose prefer favourite usually
""")

# Two-character Chinese words (the recall channel for CJK) and some single-character fillers.
_CJK_WORDS = _words("""
工作 搬家 柏林 上海 公寓 房租 押金 房东 合同 签证 护照 预约 大使馆 保险 医生 牙医 过敏 跑步
马拉松 膝盖 饺子 面条 咖啡 早餐 晚饭 餐厅 生日 礼物 妹妹 哥哥 妈妈 爸爸 父母 朋友 同事 经理
面试 工资 升职 简历 后端 工程师 数据库 索引 查询 缓存 部署 测试 代码 分支 提醒 日历 会议 截止
预算 发票 银行 账户 存款 贷款 机票 火车 酒店 行李 机场 周末 假期 爬山 海边 自行车 电脑 键盘
手机 密码 路由器 打印机 番茄 浇水 猫咪 小狗 吉他 钢琴 小说 电影 德语 中文 日语 语法 考试 作业
论文 会议 天气 下雨 下雪 明天 昨天 上午 下午 晚上 计划 问题 答案 决定 价格 便宜 喜欢 习惯 学习
""")
_CJK_FILLERS = list("的了是我你他她们在有和就不也都很要会这那吗呢吧啊还把给跟对说看想去来做")

_CHITCHAT = [
    "Sounds good, let's continue.",
    "Thanks, that helps a lot!",
    "Okay, what should I do next?",
    "Can you summarise where we are?",
    "Let's pick this up tomorrow.",
    "好的，继续吧。",
    "谢谢！",
]

_CONSONANTS, _VOWELS = "bcdfghjklmnprstvwz", "aeiou"


def pseudo_words(rng: random.Random, n: int) -> list[str]:
    """Pseudo-words standing in for names, places, product and project names (a long tail)."""
    out: set[str] = set()
    while len(out) < n:
        syl = rng.randint(2, 4)
        out.add("".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syl)))
    return sorted(out)


def _cumulative(weights: Sequence[float]) -> list[float]:
    acc = 0.0
    out = []
    for w in weights:
        acc += w
        out.append(acc)
    return out


class TextGen:
    """Deterministic chat text: common words (Zipf over rank) 85%, topic words, a Zipf tail of
    rare terms, numbers; about one message in ten in Chinese."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.rare = pseudo_words(self.rng, 20_000)
        self.rng.shuffle(self.rare)  # the frequent head of the tail is not all "ba..."
        words = _COMMON + _TOPICS
        # Common words carry most of the mass; topic words the middle; rare terms the tail.
        weights = [1.0 / (i + 1) ** 0.9 for i in range(len(_COMMON))]
        weights = [w * 0.70 / sum(weights) for w in weights]
        topic = [1.0 / (i + 10) for i in range(len(_TOPICS))]
        shuffled = list(range(len(_TOPICS)))
        self.rng.shuffle(shuffled)
        weights += [0.24 * topic[j] / sum(topic) for j in shuffled]
        rare_w = [1.0 / (i + 1) for i in range(len(self.rare))]
        weights += [0.06 * w / sum(rare_w) for w in rare_w]
        self.words = words + self.rare
        self.cum = _cumulative(weights)
        self.cjk = _CJK_WORDS
        self.cjk_cum = _cumulative([1.0 / (i + 3) for i in range(len(_CJK_WORDS))])

    def english(self, n_words: int) -> str:
        rng = self.rng
        picked = rng.choices(self.words, cum_weights=self.cum, k=n_words)
        if rng.random() < 0.15:
            picked.insert(rng.randrange(len(picked) + 1), str(rng.randint(2, 9999)))
        parts: list[str] = []
        start = True
        for w in picked:
            parts.append(w.capitalize() if start else w)
            start = False
            if rng.random() < 0.08:
                parts[-1] += rng.choice((".", ".", ",", "?", "!"))
                start = parts[-1][-1] != ","
        text = " ".join(parts)
        return text if text[-1] in ".?!" else text + rng.choice((".", ".", "?"))

    def chinese(self, n_words: int) -> str:
        rng = self.rng
        picked = rng.choices(self.cjk, cum_weights=self.cjk_cum, k=n_words)
        out = []
        for w in picked:
            out.append(w)
            if rng.random() < 0.5:
                out.append(rng.choice(_CJK_FILLERS))
            if rng.random() < 0.1:
                out.append("，")
        return "".join(out) + rng.choice(("。", "。", "？", "！"))

    def message(self, role: str) -> str:
        rng = self.rng
        if rng.random() < 0.1:
            return self.chinese(rng.randint(3, 14) if role == "user" else rng.randint(6, 30))
        if role == "user":
            return self.english(rng.randint(4, 28))
        if role == "tool":
            return "tool result: " + self.english(rng.randint(8, 30))
        return self.english(rng.randint(12, 70))

    def query(self) -> str:
        """A user turn used as the recall query."""
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return rng.choice(_CHITCHAT)
        if r < 0.33:
            w = rng.choices(self.cjk, cum_weights=self.cjk_cum, k=rng.randint(1, 2))
            return (
                "上次说的" + "和".join(w) + rng.choice(("是什么？", "怎么样了？", "，你还记得吗？"))
            )
        topic = rng.sample(_TOPICS, rng.randint(1, 3))
        rare = [self.rare[int(rng.paretovariate(0.8)) % 3000]] if rng.random() < 0.6 else []
        terms = topic + rare
        rng.shuffle(terms)
        template = rng.choice(
            (
                "What did we decide about the {}?",
                "Remind me what you said about {}.",
                "Can you find our conversation on {}?",
                "Last time we talked about {} — any update?",
                "I forgot the details of {}, can you recall them?",
            )
        )
        return template.format(" and ".join(terms))


@dataclass(frozen=True)
class SessionRow:
    id: str
    started_at: int
    ended_at: int | None


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def timeline(
    n: int, *, seed: int = 11, end_ms: int = HISTORY_END_MS, span_ms: int = YEAR_MS
) -> tuple[list[SessionRow], Iterator[tuple[str, str, str, int]]]:
    """Sessions and a lazy stream of ``(session_id, role, content, timestamp_ms)`` for ``n``
    messages: conversations of 6-120 turns, 30% of them on the ``global`` session, spread over
    ``span_ms`` up to ``end_ms``, timestamps strictly increasing."""
    rng = random.Random(seed)
    lengths: list[int] = []
    total = 0
    while total < n:
        k = min(rng.randint(6, 120), n - total)
        lengths.append(k)
        total += k
    gap = span_ms // max(len(lengths), 1)
    sessions: list[SessionRow] = []
    plan: list[tuple[str, int, int]] = []  # (session id, first timestamp, length)
    for i, k in enumerate(lengths):
        start = end_ms - span_ms + i * gap + rng.randrange(max(gap // 2, 1))
        if rng.random() < 0.3:
            sid = "global"
            if not any(s.id == "global" for s in sessions[:1]):
                # philont databases carry it already (INSERT OR IGNORE), a v2 file may not
                sessions.insert(0, SessionRow("global", start, None))
        else:
            sid = _uuid(rng)
            last = i == len(lengths) - 1
            sessions.append(SessionRow(sid, start, None if last else start + k * 40_000))
        plan.append((sid, start, k))

    def stream() -> Iterator[tuple[str, str, str, int]]:
        gen = TextGen(seed + 1)
        r = gen.rng
        prev = 0
        for sid, start, k in plan:
            t = max(start, prev + 1)
            for j in range(k):
                x = r.random()
                if j == 0 and x < 0.05:
                    role = "system"
                elif x < 0.06:
                    role = "tool"
                else:
                    role = "user" if j % 2 == 0 else "assistant"
                yield sid, role, gen.message(role), t
                prev = t
                t += r.randint(3_000, 90_000)

    return sessions, stream()


INSERT_MESSAGE = (
    "INSERT INTO memory_raw_messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)"
)


def insert_sessions(conn: sqlite3.Connection, sessions: Sequence[SessionRow]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO memory_raw_sessions (id, started_at, ended_at) VALUES (?, ?, ?)",
        [(s.id, s.started_at, s.ended_at) for s in sessions],
    )


def insert_messages(
    conn: sqlite3.Connection,
    rows: Iterator[tuple[str, str, str, int]],
    *,
    batch: int = 20_000,
    progress: Callable[[int], None] | None = None,
) -> int:
    """executemany in batches (the caller owns the transaction); returns the count."""
    done = 0
    chunk: list[tuple[str, str, str, int]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= batch:
            conn.executemany(INSERT_MESSAGE, chunk)
            done += len(chunk)
            chunk.clear()
            if progress is not None:
                progress(done)
    if chunk:
        conn.executemany(INSERT_MESSAGE, chunk)
        done += len(chunk)
        if progress is not None:
            progress(done)
    return done


# --- facts, skills, notes --------------------------------------------------------------------

_NAMESPACES = {
    "user.profile": ["name", "age", "birthday", "languages", "pronouns", "occupation"],
    "user.home": ["city", "district", "address", "rent", "landlord", "move_in", "heating"],
    "user.work": ["employer", "role", "team", "manager", "stack", "salary", "start_date"],
    "user.preferences": ["coffee", "tea", "diet", "music", "editor", "meeting_time", "units"],
    "user.health": ["allergy", "doctor", "gym", "running_goal", "knee", "sleep"],
    "user.family": ["sister", "brother", "mother", "father", "partner", "pet"],
    "user.travel": ["next_trip", "passport_expiry", "airline", "seat", "visa_status"],
    "project.memory": ["repo", "language", "database", "deadline", "status", "owner"],
    "project.thesis": ["topic", "advisor", "deadline", "chapter", "word_count"],
    "env.host": ["os", "shell", "timezone", "locale", "python"],
    "self.agent": ["style", "language", "verbosity", "name"],
}


def _fact_value(rng: random.Random, gen: TextGen) -> Any:
    r = rng.random()
    if r < 0.55:
        return gen.english(rng.randint(1, 12)).rstrip(".?!")
    if r < 0.65:
        return gen.chinese(rng.randint(1, 4)).rstrip("。？！")
    if r < 0.8:
        return rng.randint(1, 5000)
    if r < 0.9:
        return rng.random() < 0.5
    return {"value": gen.english(rng.randint(2, 6)).rstrip(".?!"), "source": "user said so"}


def seed_knowledge(
    conn: sqlite3.Connection,
    *,
    facts: int = 300,
    skills: int = 50,
    notes: int = 200,
    seed: int = 23,
    end_ms: int = HISTORY_END_MS,
) -> None:
    """Insert realistic facts (current, superseded, forgotten, expired, pinned, events),
    skills (every grade, both kinds, some with recipes) and notes, with raw executemany."""
    from philont.db.types import dumps_compact

    rng = random.Random(seed)
    gen = TextGen(seed + 1)

    def when() -> int:
        return end_ms - rng.randrange(YEAR_MS)

    keys = [(ns, k) for ns, ks in _NAMESPACES.items() for k in ks]
    fact_rows: list[tuple[Any, ...]] = []
    n_keys = min(len(keys), max(facts * 3 // 4, 1))
    chosen = rng.sample(keys, n_keys) if n_keys <= len(keys) else keys
    extra = 0
    while len(chosen) < facts * 3 // 4:  # more keys than the fixed list: numbered ones
        extra += 1
        ns, k = rng.choice(keys)
        chosen.append((ns, f"{k}_{extra}"))
    versions: list[int] = [1] * len(chosen)
    while sum(versions) < facts:
        versions[rng.randrange(len(chosen))] += 1
    for (ns, key), n_versions in zip(chosen, versions, strict=True):
        prev_id: str | None = None
        ids = [_uuid(rng) for _ in range(n_versions)]
        t = when()
        for v, fid in enumerate(ids):
            current = v == n_versions - 1
            superseded_by = None if current else ids[v + 1]
            r = rng.random()
            forgotten = t + 1000 if current and r < 0.05 else None
            valid_until = t + 86_400_000 * rng.randint(1, 30) if current and r > 0.95 else None
            tau = -1.0 if rng.random() < 0.08 else None
            kind = "event" if rng.random() < 0.1 else "state"
            fact_rows.append(
                (
                    fid,
                    ns,
                    key,
                    dumps_compact(_fact_value(rng, gen)),
                    round(rng.uniform(0.6, 1.0), 2),
                    superseded_by,
                    prev_id,
                    t,
                    t if kind == "event" else None,
                    valid_until,
                    t + rng.randrange(max(end_ms - t, 1)),
                    tau,
                    forgotten,
                    kind,
                )
            )
            prev_id = fid
            t = min(end_ms, t + rng.randrange(1, 60 * 86_400_000))
    conn.executemany(
        "INSERT INTO memory_facts (id, namespace, key, value_json, confidence, superseded_by,"
        " supersedes, created_at, occurred_at, valid_until, last_accessed_at, decay_tau_days,"
        " forgotten_at, fact_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        fact_rows[:facts],
    )

    grades = ["draft"] * 15 + ["confirmed"] * 10 + ["stable"] * 8 + ["playbook"] * 4
    grades += ["deprecated"] * 3
    skill_rows: list[tuple[Any, ...]] = []
    recipe_rows: list[tuple[Any, ...]] = []
    for i in range(skills):
        sid = _uuid(rng)
        negative = i % 5 == 4
        grade = "draft" if negative else grades[i % len(grades)]
        topic = rng.sample(_TOPICS, 3)
        uses = rng.randint(0, 60)
        ok = rng.randint(0, uses)
        created = when()
        last_used = created + rng.randrange(max(end_ms - created, 1)) if uses else None
        skill_rows.append(
            (
                sid,
                f"{'avoid-' if negative else ''}{topic[0].lower()}-{topic[1].lower()}-{i}",
                gen.english(rng.randint(8, 25)),
                dumps_compact([w.lower() for w in topic] + rng.sample(_CJK_WORDS, 1)),
                "\n".join(f"{s + 1}. {gen.english(rng.randint(4, 12))}" for s in range(4)),
                uses,
                last_used,
                created,
                ok,
                uses - ok,
                "negative" if negative else "positive",
                grade,
                gen.english(rng.randint(5, 15)) if rng.random() < 0.6 else None,
            )
        )
        if rng.random() < 0.4:
            complete = rng.random() < 0.8
            recipe_rows.append(
                (
                    sid,
                    dumps_compact([gen.english(rng.randint(4, 10)) for _ in range(3)]),
                    gen.english(6) if complete else None,
                    dumps_compact(["shell", "files"]),
                    rng.randint(1, 4),
                    created,
                )
            )
    conn.executemany(
        "INSERT INTO memory_skills (id, name, description, trigger_keywords, action_template,"
        " use_count, last_used_at, created_at, success_count, failure_count, kind, maturity,"
        " when_to_use) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        skill_rows,
    )
    conn.executemany(
        "INSERT INTO philont_skill_recipes (skill_id, steps_json, verification,"
        " tool_policy_json, revision, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        recipe_rows,
    )

    note_rows = []
    for i in range(notes):
        created = when()
        note_rows.append(
            (
                _uuid(rng),
                gen.message("user") if i % 3 else gen.english(rng.randint(10, 40)),
                round(rng.random(), 2),
                None,
                created,
                created + 1000 if rng.random() < 0.05 else None,
            )
        )
    conn.executemany(
        "INSERT INTO memory_notes (id, content, importance, session_id, created_at,"
        " forgotten_at) VALUES (?, ?, ?, ?, ?, ?)",
        note_rows,
    )


# --- docs/benchmarks.md ----------------------------------------------------------------------

SECTIONS = ("write", "context", "migrate")

_INTRO = """# Benchmarks

Figures measured by the scripts in `scripts/` (not timed tests). Each script regenerates only its
own section, between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`; text outside the markers
is kept. Every ratio compares philont against plain `sqlite3` doing the same SQL work on the same
schema (built by `philont.migrate.upgrade`, same triggers and PRAGMAs), measured in the same run
and interleaved, so machine load affects both sides alike.

```sh
.venv/bin/python scripts/bench_write.py      # --full adds 1M messages (takes minutes)
.venv/bin/python scripts/bench_context.py    # --full adds 1M messages (takes minutes)
.venv/bin/python scripts/bench_migrate.py    # --messages 1000000 for the 1M target
```
"""


def update_doc_section(name: str, body: str, path: Path = DOC) -> None:
    """Replace the text between ``<!-- bench:name -->`` and ``<!-- /bench:name -->`` (creating
    the file with a short introduction and empty sections if it is missing)."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if path.exists():
        text = path.read_text(encoding="utf-8")
    else:
        text = _INTRO + "".join(
            f"\n<!-- bench:{s} -->\n_not measured yet_\n<!-- /bench:{s} -->\n" for s in SECTIONS
        )
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def announce_run() -> tuple[str, datetime]:
    """Print the machine and its load at the start of a run; return that load and the start."""
    print(machine_line())
    load_at_start = load_average()
    print(f"load average: {load_at_start}")
    return load_at_start, datetime.now(UTC)


def profile_block(prof_text: str, caveat: str) -> list[str]:
    """A doc section's closing lines for a cProfile summary (none without one)."""
    if not prof_text:
        return []
    return ["", f"Where philont's time goes ({caveat}):", "", "```text", prof_text, "```"]


def run_header(command: str, load_at_start: str) -> str:
    """The first lines of a doc section: when, how, on what, and how busy the machine was."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"Measured {stamp} with `{command}`.\n\nMachine:\n\n{machine_markdown()}\n"
        f"- load average (1/5/15 min) at start: {load_at_start}; at end: {load_average()}"
        " (other jobs shared the machine; the two sides of each ratio were measured"
        " interleaved)\n"
    )


def command_line() -> str:
    script = Path(sys.argv[0])
    try:
        shown = script.resolve().relative_to(REPO)
    except ValueError:
        shown = script
    return " ".join([".venv/bin/python", str(shown), *sys.argv[1:]])


def free_disk_gb(path: Path = CACHE) -> float:
    path.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(path).free / 1e9


# --- profiling -------------------------------------------------------------------------------


def _bucket(filename: str, func: str) -> str:
    if filename == "~":
        # philont's cursor reads its rows with list.extend over itself (philont.db.cursors):
        # the statement's steps run inside that C call
        if "sqlite3." in func or "Cursor." in func or func == "<method 'extend' of 'list' objects>":
            return "sqlite3 C calls (SQL execution; list.extend over a cursor included)"
        return "builtins"
    if "/sqlalchemy/" in filename:
        return "sqlalchemy"
    if "/philont/" in filename:
        return "philont"
    if "/pydantic" in filename:
        return "pydantic"
    if "/structlog/" in filename or "/logging/" in filename:
        return "logging"
    return "other Python"


def profile_summary(fn: Callable[[], Any], top: int = 12) -> tuple[dict[str, float], list[str]]:
    """Run ``fn`` under cProfile: the share of own time per package, then philont's functions
    by cumulative time (what each costs with everything it calls) and the top functions by own
    time (``tottime``). cProfile slows Python code more than C calls: read as proportions."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    entries: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in entries.values()) or 1.0
    buckets: dict[str, float] = {}
    for (filename, _line, func), v in entries.items():
        key = _bucket(filename, func)
        buckets[key] = buckets.get(key, 0.0) + v[2]
    shares = {k: 100 * v / total for k, v in sorted(buckets.items(), key=lambda x: -x[1])}
    ours = [kv for kv in entries.items() if "/philont/" in kv[0][0] and kv[0][2] != "<genexpr>"]
    lines = ["philont functions by cumulative time:"]
    for (filename, line, func), v in sorted(ours, key=lambda kv: -kv[1][3])[:top]:
        where = f"{_short_path(filename)}:{line}({func})"
        lines.append(f"{100 * v[3] / total:5.1f}%  {v[1]:>8} calls  {where}")
    lines.append("top functions by own time:")
    ranked = sorted(entries.items(), key=lambda kv: -kv[1][2])[:top]
    for (filename, line, func), v in ranked:
        where = func if filename == "~" else f"{_short_path(filename)}:{line}({func})"
        lines.append(f"{100 * v[2] / total:5.1f}%  {v[1]:>8} calls  {where}")
    return shares, lines


def _short_path(filename: str) -> str:
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    try:
        return str(Path(filename).resolve().relative_to(REPO))
    except ValueError:
        return filename

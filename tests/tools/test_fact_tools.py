"""store_fact, get_fact, list_facts and use_skill through the dispatcher."""

from __future__ import annotations

import re

import pytest

from philont import Memory, tools
from philont.store import Store
from philont.tools.registry import MAX_RESULT_CHARS
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)


def call(db: DbTarget, tool: str, **arguments: object) -> tools.ToolResult:
    return tools.call(tool, arguments, db=db)


def test_storing_a_key_again_supersedes_and_says_so(tool_target: DbTarget) -> None:
    assert call(tool_target, "store_fact", namespace="user.home", key="city", value="Paris").ok
    second = call(tool_target, "store_fact", namespace="user.home", key="city", value="Berlin")
    assert "replaced the previous value" in second.text
    got = call(tool_target, "get_fact", namespace="user.home", key="city")
    assert got.text.startswith('"Berlin" [state ? → ∞ | recorded ')


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("Authorization: Bearer abc.def.ghi", False),
        ("x-api-key: 123456789", False),
        ("Bearer eyJhbGciOiJIUzI1NiJ9.abc", False),
        ("token ghp_0123456789abcdef", False),
        ("Basic plan costs $10 a month", True),  # refused by the original (Q-S9)
        ("Token limit is 4k", True),
        ("bearer of good news", True),
    ],
)
def test_the_auth_guard_refuses_credentials_but_not_ordinary_sentences(
    value: str, ok: bool, tool_target: DbTarget
) -> None:
    result = call(tool_target, "store_fact", namespace="user", key="k", value=value)
    assert result.ok is ok
    if not ok:  # named as every refusal of one argument is (it said "value looks like ...")
        assert result.error is not None and result.error.startswith("value: "), result.error


@pytest.mark.parametrize(
    ("given", "tz", "expected"),
    [
        ("2026-04-22T09:00:00+02:00", "UTC", "2026-04-22T07:00:00.000Z"),
        ("2026-04-22T09:00:00Z", "UTC", "2026-04-22T09:00:00.000Z"),
        ("2026-04-22T09:00:00", "Asia/Shanghai", "2026-04-22T01:00:00.000Z"),
        ("2026-04-22", "Europe/Berlin", "2026-04-21T22:00:00.000Z"),
        (1776848400000, "UTC", "2026-04-22T09:00:00.000Z"),
    ],
)
def test_times_accept_offsets_epoch_ms_and_naive_text_in_a_stated_zone(
    given: object, tz: str, expected: str, tool_target: DbTarget
) -> None:
    result = call(
        tool_target,
        "store_fact",
        namespace="user",
        key="trip",
        value="Rome",
        fact_kind="event",
        occurred_at=given,
        timezone=tz,
    )
    assert result.ok, result.text
    assert f"[event@{expected} |" in result.text


@pytest.mark.parametrize("bad", ["tomorrow", "2026-13-01", "next friday", 10**20])
def test_an_unparseable_time_is_reported_not_dropped(bad: object, tool_target: DbTarget) -> None:
    result = call(
        tool_target,
        "store_fact",
        namespace="user",
        key="trip",
        value="Rome",
        fact_kind="event",
        occurred_at=bad,
    )
    assert not result.ok and "occurred_at" in (result.error or "")


def test_an_unknown_time_zone_is_reported(tool_target: DbTarget) -> None:
    result = call(
        tool_target,
        "store_fact",
        namespace="user",
        key="k",
        value=1,
        valid_from="2026-01-01T00:00:00",
        timezone="Mars/Olympus",
    )
    assert not result.ok and "Mars/Olympus" in (result.error or "")


def test_list_facts_with_a_prefix_includes_sub_namespaces(tool_target: DbTarget) -> None:
    call(tool_target, "store_fact", namespace="user", key="name", value="Lena")
    call(tool_target, "store_fact", namespace="user.preferences", key="tea", value="green")
    call(tool_target, "store_fact", namespace="username", key="x", value=1)
    text = call(tool_target, "list_facts", namespace="user.*").text
    assert "user.name" in text and "user.preferences.tea" in text and "username" not in text
    exact = call(tool_target, "list_facts", namespace="user").text
    assert "user.preferences" not in exact


@pytest.mark.parametrize(
    ("count", "value_chars"),
    [(0, 10), (3, 10), (400, 10), (120, 300), (5, 30_000), (60, 2_000)],
)
def test_a_long_fact_listing_is_read_in_parts_that_reach_every_fact(
    count: int, value_chars: int, tool_target: DbTarget
) -> None:
    """Each part fits what the model reads back, and its last line names the offset the next
    part starts at; following them lists every fact once, in order (the cut of one long
    text left the facts past about 20,000 characters out of reach)."""
    with Store.open(tool_target) as store, store.begin() as mem:
        for i in range(count):
            mem.facts.store("big", f"k{i:04}", "v" * (value_chars - i % 7))
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        result = call(tool_target, "list_facts", namespace="big", offset=offset)
        assert result.ok and len(result.text) <= MAX_RESULT_CHARS, result.text[-200:]
        keys = [f["key"] for f in result.data]
        assert keys == [f"k{i:04}" for i in range(offset, count)]
        lines = result.text.split("\n")
        # a fact longer than a reply: its head, then the line saying how much was left out
        shown = [
            line.split(" = ")[0].removeprefix("big.")
            for line in lines
            if not re.fullmatch(r"… [\d,]+ more characters not shown \(ask for less\)", line)
        ]
        more = re.fullmatch(
            r"… [\d,]+ more facts not shown: list_facts with offset=(\d+) lists on", shown[-1]
        )
        if more is None:
            offset = None
        else:
            shown.pop()
            offset = int(more[1])
            assert offset == len(seen) + len(shown)
        if count:
            seen += shown
    assert seen == [f"k{i:04}" for i in range(count)]


def test_list_facts_offset_and_limit_choose_a_slice(tool_target: DbTarget) -> None:
    for i in range(5):
        call(tool_target, "store_fact", namespace="ns", key=f"k{i}", value=i)
    part = call(tool_target, "list_facts", namespace="ns", offset=1, limit=2)
    assert [f["key"] for f in part.data] == ["k1", "k2"]
    assert part.text.splitlines()[0].startswith("ns.k1 = 1")
    past = call(tool_target, "list_facts", namespace="ns", offset=5)
    assert past.ok and past.data == [] and past.text == "No facts in ns past the first 5"
    for bad in ({"offset": -1}, {"limit": 0}, {"offset": "1"}):
        refused = call(tool_target, "list_facts", namespace="ns", **bad)
        assert refused.error_code == "invalid_arguments", refused
        assert refused.error is not None and refused.error.startswith(f"{next(iter(bad))}: ")


@pytest.mark.parametrize(
    "arguments",
    [
        '{"namespace": "ns", "offset": 9223372036854775808}',  # 2**63
        '{"namespace": "ns", "offset": 1000000000000000000000000000000}',  # 10**30
        '{"namespace": "ns", "offset": 1e30}',
        '{"namespace": "ns", "offset": 1e19, "limit": 1}',
    ],
)
def test_an_offset_past_what_the_schema_advertises_is_refused_by_the_arguments(
    arguments: str, tool_target: DbTarget
) -> None:
    """The largest offset the schema advertises lists past every fact; one past it is
    refused by the argument model, as the schema says (the schema had no maximum and the
    service refused 2**63 as invalid_input), writing nothing but the call's log row."""
    call(tool_target, "store_fact", namespace="ns", key="k", value=1)
    schema = next(t for t in tools.anthropic_tools() if t["name"] == "list_facts")
    offset = schema["input_schema"]["properties"]["offset"]["anyOf"][0]
    assert offset["maximum"] == 2**63 - 1
    last = call(tool_target, "list_facts", namespace="ns", offset=offset["maximum"])
    assert last.ok and last.data == [], last
    assert tools.check_arguments("list_facts", arguments).error_code == "invalid_arguments"
    before = snapshot(tool_target)
    refused = tools.call("list_facts", arguments, db=tool_target)
    assert refused.error_code == "invalid_arguments", refused
    assert (refused.error or "").startswith("offset: "), refused
    assert snapshot(tool_target) == before


def test_use_skill_returns_the_template_with_its_caveat_and_never_counts_success(
    tool_target: DbTarget,
) -> None:
    with Memory.open(tool_target) as mem:
        mem.skills.create("unzip-archive", "Unpack zip files", "zip", "1. unzip -d out f.zip")
    for _ in range(3):
        result = call(tool_target, "use_skill", name="unzip-archive")
        assert result.ok and "[draft" in result.text and "unzip -d out" in result.text
    with Memory.open(tool_target) as mem:
        skill = mem.skills.get("unzip-archive")
        assert skill is not None
        assert (skill.use_count, skill.success_count, skill.grade) == (3, 0, "draft")


@pytest.mark.parametrize("grade", ["playbook", "deprecated"])
def test_use_skill_refuses_playbooks_and_deprecated_skills(
    grade: str, tool_target: DbTarget
) -> None:
    with Memory.open(tool_target) as mem:
        mem.skills.create("s", "d", "k", "t")
        mem.skills.set_grade("s", grade, reason="test")
    result = call(tool_target, "use_skill", name="s")
    assert not result.ok and result.error_code == "skill_not_usable"


@pytest.mark.parametrize(
    ("window", "note"),
    [
        ({"valid_from": "2999-01-01T00:00:00Z"}, " (not yet in force)"),
        (
            {"valid_from": "2000-01-01T00:00:00Z", "valid_until": "2001-01-01T00:00:00Z"},
            " (expired)",
        ),
        ({"valid_from": "2000-01-01T00:00:00Z"}, ""),
    ],
    ids=["begins later", "ended", "holds"],
)
def test_get_fact_says_when_a_state_does_not_hold_now(
    window: dict[str, str], note: str, tool_target: DbTarget
) -> None:
    stored = call(tool_target, "store_fact", namespace="user", key="plan", value="pro", **window)
    assert stored.ok, stored.text
    got = call(tool_target, "get_fact", namespace="user", key="plan")
    assert got.ok and got.text.endswith("]" + note)


def test_a_fact_a_person_pinned_stays_pinned_when_the_agent_stores_it_again(
    tool_target: DbTarget,
) -> None:
    assert call(tool_target, "store_fact", namespace="context", key="badge", value="A-17").ok
    with Memory.open(tool_target) as mem:
        held = mem.facts.get("context", "badge")
        assert held is not None
        mem.facts.pin(held.id)

    assert call(tool_target, "store_fact", namespace="context", key="badge", value="B-2").ok

    with Memory.open(tool_target) as mem:
        now = mem.facts.get("context", "badge")
        assert now is not None and (now.value, now.pinned) == ("B-2", True)
        assert mem.facts.forget_candidates(threshold=1.0) == []

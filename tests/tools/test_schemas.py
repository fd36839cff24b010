"""Tool schemas in three shapes (OpenAI, OpenAI strict, Anthropic/MCP): the strict shape obeys
OpenAI's published structured-output rules, and the same calls give the same results in every
shape."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from philont import tools
from philont.store import Store

# OpenAI structured outputs (strict mode), as published: the keywords a schema may use, and the
# rules every object must follow.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "anyOf",
        "items",
        "description",
        "const",
    }
)
STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def _nodes(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node (not the properties maps themselves), with where it sits."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, prop in schema.get("properties", {}).items():
        yield from _nodes(prop, f"{path}.{name}")
    for i, branch in enumerate(schema.get("anyOf", ())):
        yield from _nodes(branch, f"{path}|{i}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")


STRICT = {t["function"]["name"]: t["function"] for t in tools.openai_tools(strict=True)}
PLAIN = {t["function"]["name"]: t["function"] for t in tools.openai_tools()}

RULES: list[tuple[str, Any]] = [
    ("the function is marked strict", lambda fn: fn["strict"] is True),
    ("the root is an object, not anyOf", lambda fn: fn["parameters"]["type"] == "object"),
    (
        "every object forbids additional properties",
        lambda fn: all(
            n.get("additionalProperties") is False
            for _p, n in _nodes(fn["parameters"])
            if n.get("type") == "object"
        ),
    ),
    (
        "every property is required",
        lambda fn: all(
            set(n.get("required", ())) == set(n["properties"])
            for _p, n in _nodes(fn["parameters"])
            if n.get("type") == "object"
        ),
    ),
    (
        "only supported keywords",
        lambda fn: all(set(n) <= STRICT_KEYWORDS for _p, n in _nodes(fn["parameters"])),
    ),
    (
        "every value is typed",
        lambda fn: all(
            ("type" in n and n["type"] in STRICT_TYPES) or "anyOf" in n or "enum" in n
            for _p, n in _nodes(fn["parameters"])
        ),
    ),
    (
        "no anyOf inside an anyOf",
        lambda fn: all(
            "anyOf" not in b for _p, n in _nodes(fn["parameters"]) for b in n.get("anyOf", ())
        ),
    ),
    (
        "arrays say what they hold",
        lambda fn: all(
            "items" in n for _p, n in _nodes(fn["parameters"]) if n.get("type") == "array"
        ),
    ),
    (
        "an argument optional in the plain schema is nullable",
        lambda fn: all(
            {"type": "null"} in prop.get("anyOf", ()) or prop.get("type") == "null"
            for name, prop in fn["parameters"]["properties"].items()
            if name not in PLAIN[fn["name"]]["parameters"].get("required", ())
        ),
    ),
    (
        "every property keeps a description",
        lambda fn: all(p.get("description") for p in fn["parameters"]["properties"].values()),
    ),
]


@pytest.mark.parametrize("tool", sorted(STRICT))
@pytest.mark.parametrize(("rule", "holds"), RULES, ids=[r for r, _h in RULES])
def test_strict_schemas_follow_openais_rules(tool: str, rule: str, holds: Any) -> None:
    assert holds(STRICT[tool]), f"{tool}: {rule}"


def test_a_time_argument_still_says_its_format_in_the_strict_shape() -> None:
    described = STRICT["store_fact"]["parameters"]["properties"]["occurred_at"]["description"]
    assert "When an event happened." in described and "ISO-8601" in described


def test_the_anthropic_and_mcp_shape_is_the_plain_schema() -> None:
    anthropic = {t["name"]: t["input_schema"] for t in tools.anthropic_tools()}
    assert anthropic == {name: fn["parameters"] for name, fn in PLAIN.items()}


# --- the same calls in every shape -----------------------------------------------------------

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("store_fact", {"namespace": "user.home", "key": "city", "value": "Berlin"}),
    (
        "store_fact",
        {
            "namespace": "user",
            "key": "trip",
            "value": ["Lisbon", 3],
            "fact_kind": "event",
            "occurred_at": "2026-05-01T09:00:00+02:00",
        },
    ),
    ("get_fact", {"namespace": "user.home", "key": "city"}),
    ("list_facts", {"namespace": "user.*"}),
    ("search_notes", {"query": "deposit"}),
    ("search_skills", {"query": "zip", "limit": 3}),
    ("use_skill", {"name": "missing-skill"}),
    ("recall_sessions", {"query": "Berlin", "since": "2026-01-01"}),
    (
        "create_calendar_event",
        {"title": "Dentist", "starts_at": "2030-01-02T09:00:00", "timezone": "Europe/Berlin"},
    ),
    ("list_upcoming", {"window_days": 30}),
    ("schedule_reminder", {"name": "water", "message": "drink water", "interval_ms": 3_600_000}),
    ("cancel_schedule", {"name": "water"}),
    ("store_fact", {"namespace": "self", "key": "k", "value": 1}),  # refused alike
]


def _strict_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What a model answering a strict schema sends: every property, null for those it omits."""
    return {prop: arguments.get(prop) for prop in STRICT[name]["parameters"]["properties"]}


def _run(path: Path, shape: str) -> list[tuple[bool, str | None, str]]:
    fixed = datetime(2029, 12, 20, 12, 0, tzinfo=UTC)
    with Store.open(path, clock=lambda: fixed) as store:
        out = []
        for name, arguments in CALLS:
            args = _strict_arguments(name, arguments) if shape == "strict" else arguments
            result = tools.call(name, args, db=store)
            out.append((result.ok, result.error_code, result.text))
    return out


def test_the_same_calls_give_the_same_results_in_every_shape(tmp_path: Path) -> None:
    plain = _run(tmp_path / "plain.sqlite", "plain")
    strict = _run(tmp_path / "strict.sqlite", "strict")
    assert strict == plain
    assert [ok for ok, _c, _t in plain] == [True] * 6 + [False] + [True] * 5 + [False]


def test_null_for_a_required_argument_is_still_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "m.sqlite") as store:
        result = tools.call(
            "store_fact", {"namespace": "user", "key": "k", "value": None}, db=store
        )
    assert not result.ok and result.error_code == "invalid_arguments"


@pytest.mark.parametrize("tool", sorted(PLAIN))
def test_every_argument_of_the_model_is_a_property_of_the_plain_schema(tool: str) -> None:
    """An argument named like a JSON-Schema keyword (``title``) is an argument all the same."""
    model = tools.REGISTRY[tool].args_model
    schema = PLAIN[tool]["parameters"]
    assert set(schema["properties"]) == set(model.model_fields)
    assert set(schema.get("required", ())) <= set(schema["properties"])


# --- what an argument's description promises -------------------------------------------------

EFFECTS = ("replace", "supersede", "overwrite")
"""Words that promise what a call does to what is already stored."""
SHAPES = {"plain": PLAIN, "strict": STRICT}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("tool", sorted(PLAIN))
def test_an_argument_promises_only_effects_its_own_tool_has(tool: str, shape: str) -> None:
    """An input type's description is shared by every tool using it: one that says what a
    write does ("a same-named task is replaced") must not reach a tool that does something
    else with the same type (cancel_schedule looks a task up by that name)."""
    fn = SHAPES[shape][tool]
    for name, prop in fn["parameters"]["properties"].items():
        for word in EFFECTS:
            if word in prop["description"].lower():
                assert word in fn["description"].lower(), (tool, name, prop["description"])


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_cancel_schedule_describes_name_as_the_task_to_cancel(shape: str) -> None:
    name = SHAPES[shape]["cancel_schedule"]["parameters"]["properties"]["name"]["description"]
    assert name.startswith("The exact name of the task to cancel"), name
    assert "replace" not in name


def _type_descriptions() -> list[tuple[str, str, str]]:
    """(tool, argument, the description its input type gives itself) for every such argument."""
    from typing import Annotated

    from pydantic import TypeAdapter

    found = []
    for tool in sorted(PLAIN):
        for name, field in tools.REGISTRY[tool].args_model.model_fields.items():
            annotation = field.annotation
            if field.metadata:
                annotation = Annotated[(annotation, *field.metadata)]
            own = TypeAdapter(annotation).json_schema().get("description")
            if own:
                found.append((tool, name, own))
    return found


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize(("tool", "name", "own"), _type_descriptions())
def test_every_argument_says_what_its_type_says(tool: str, name: str, own: str, shape: str) -> None:
    """A required argument with a description of its own lost its type's (pydantic replaces
    it): create_calendar_event's starts_at never said how a time is written (an offset, or
    read in `timezone`; epoch milliseconds), while the optional ends_at did."""
    prop = SHAPES[shape][tool]["parameters"]["properties"][name]
    assert own in str(prop), (tool, name, prop)

"""Every tool's advertised JSON Schema and its argument validator agree, so the two cannot drift:
arguments generated from the schema a model is given (Anthropic, MCP and OpenAI's plain shape)
are accepted when they fit the size policy of one call, and arguments the schema refuses are
refused with ``invalid_arguments``, naming the argument.

The oracle is ``jsonschema`` (Draft 2020-12) run on the advertised schema itself, so every
keyword counts: types (an integer is any number with a zero fractional part: ``1000.0``),
lengths, ranges, patterns, enums, required and additional properties. The few rules a schema
cannot state (an IANA zone, a parsable time, a valid RRULE or cron text) are listed in
``SEMANTIC``: their values are drawn from valid ones, and a mutation that keeps such an argument
inside the schema is not judged.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators

from philont import tools
from philont.domain.shown import place
from philont.domain.timepolicy import MAX_OFFSET, MIN_OFFSET
from philont.schemas.inputs import MAX_ARGUMENT_BYTES

PLAIN = {t["name"]: t["input_schema"] for t in tools.anthropic_tools()}
STRICT = {
    t["function"]["name"]: t["function"]["parameters"] for t in tools.openai_tools(strict=True)
}
TOOLS = sorted(PLAIN)
KNOWN_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "anyOf",
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "default",
        "description",
    }
)
"""The keywords this generator understands; a schema using another one fails the test below
until the generator learns it (so a new constraint cannot slip past unchecked)."""

# --- the oracle: the advertised schema, with patterns read as a JSON Schema reader reads them ---


ECMA_SPACES = (
    "\t\n\v\f\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What ``\\s`` matches in a JSON Schema pattern (ECMA-262: WhiteSpace and LineTerminator);
Python's ``\\s`` matches another set (U+001C..U+001F and U+0085, not U+FEFF)."""
_ECMA_CLASS = "".join(f"\\u{ord(c):04x}" for c in ECMA_SPACES)
_ECMA_ESCAPES = {  # (outside a class, inside one)
    "s": (f"[{_ECMA_CLASS}]", _ECMA_CLASS),
    "S": (f"[^{_ECMA_CLASS}]", None),
    "d": ("[0-9]", "0-9"),
    "D": ("[^0-9]", None),
    "w": ("[A-Za-z0-9_]", "A-Za-z0-9_"),
    "W": ("[^A-Za-z0-9_]", None),
}


def _python_regex(pattern: str) -> str:
    """A JSON Schema (ECMA-262) pattern for Python's ``re``, meaning what it means to a JSON
    Schema reader: ``\\s``, ``\\d``, ``\\w`` and their negations as ECMA-262 reads them (Python
    reads them as Unicode classes), and a final ``$`` the very end (Python's ``$`` also matches
    before a final newline)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            assert escape not in "bB", f"cannot read \\{escape} as ECMA-262 does: {pattern}"
            if escape in _ECMA_ESCAPES:
                spelled = _ECMA_ESCAPES[escape][in_class]
                assert spelled is not None, f"cannot read \\{escape} inside a class: {pattern}"
                out.append(spelled)
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    python = "".join(out)
    return python[:-1] + r"\Z" if python.endswith("$") and not python.endswith(r"\$") else python


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.search(_python_regex(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


Oracle = validators.extend(Draft202012Validator, {"pattern": _pattern})


def admitted(tool: str, arguments: Any) -> bool:
    return Oracle(PLAIN[tool]).is_valid(arguments)


def json_bytes(arguments: Any) -> int:
    """The size the dispatcher measures (compact UTF-8 JSON)."""
    text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass"))


# --- values a schema cannot describe -----------------------------------------------------------


@st.composite
def iso_times(draw: st.DrawFn) -> str:
    moment = draw(
        st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 12, 31))
    ).replace(microsecond=0)
    form = draw(st.sampled_from(["utc", "offset", "naive", "date", "blank"]))
    if form == "date":
        return moment.date().isoformat()
    if form == "blank":
        return ""  # a blank time is "not given"
    if form == "naive":
        return moment.isoformat()  # read in `timezone`
    if form == "utc":
        return moment.isoformat() + "Z"
    # the offsets places use (timepolicy.MIN_OFFSET .. MAX_OFFSET; -12:01 is refused as a typo)
    low, high = (int(o.total_seconds()) // 60 for o in (MIN_OFFSET, MAX_OFFSET))
    offset = timezone(timedelta(minutes=draw(st.integers(low, high))))
    return moment.replace(tzinfo=offset).isoformat()


TIME_FIELDS = frozenset(
    {
        "occurred_at",
        "valid_from",
        "valid_until",
        "since",
        "until",
        "around",
        "at",
        "starts_at",
        "ends_at",
    }
)
SEMANTIC: dict[str, st.SearchStrategy[Any]] = {
    "timezone": st.sampled_from(["UTC", "Europe/Berlin", "Asia/Shanghai", "America/New_York"]),
    "rrule": st.sampled_from(["FREQ=DAILY;COUNT=3", "FREQ=WEEKLY;BYDAY=MO,WE", "FREQ=MONTHLY"]),
    "cron": st.sampled_from(["0 9 * * 1-5", "*/5 * * * *"]),
    **{name: iso_times() for name in TIME_FIELDS},
}
"""Arguments with a rule beyond their schema, and valid values for their text."""
CALENDAR_RANGE = (
    int(datetime(1974, 1, 1, tzinfo=UTC).timestamp() * 1000),  # milliseconds, not seconds' size
    int(datetime(2200, 1, 1, tzinfo=UTC).timestamp() * 1000),
)


# --- values from a schema ----------------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),  # JSON has neither
    st.text(max_size=20),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TEXT = st.characters(exclude_categories=("Cs",))


def _strings(node: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = node.get("minLength", 0), node.get("maxLength")
    fits = lambda s: low <= len(s) and (high is None or len(s) <= high)  # noqa: E731
    if "pattern" in node:
        return st.from_regex(_python_regex(node["pattern"]), alphabet=TEXT).filter(fits)
    bounded = st.text(TEXT, min_size=low, max_size=min(high or 40, 40))
    return bounded if high is None else bounded | st.just("x" * high)  # the longest, too


def _integers(node: dict[str, Any]) -> st.SearchStrategy[int | float]:
    ints = st.integers(node.get("minimum"), node.get("maximum"))
    # JSON Schema's integer is any number with a zero fractional part
    return ints | ints.filter(lambda i: abs(i) <= 2**53).map(float)


def _numbers(node: dict[str, Any]) -> st.SearchStrategy[int | float]:
    low, high = node.get("minimum"), node.get("maximum")
    floats = st.floats(low, high, allow_nan=False, allow_infinity=False)
    ints = st.integers(
        None if low is None else math.ceil(low), None if high is None else math.floor(high)
    )
    return floats | ints


def from_schema(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    assert set(node) <= KNOWN_KEYWORDS, set(node) - KNOWN_KEYWORDS
    if "anyOf" in node:
        return st.one_of([from_schema(branch) for branch in node["anyOf"]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if kind is None:
        return JSON_VALUES.filter(lambda v: v is not None)
    return {
        "null": lambda: st.none(),
        "boolean": lambda: st.booleans(),
        "string": lambda: _strings(node),
        "integer": lambda: _integers(node),
        "number": lambda: _numbers(node),
        "array": lambda: st.lists(SCALARS, max_size=4),
        "object": lambda: st.dictionaries(st.text(max_size=8), SCALARS, max_size=4),
    }[kind]()


def _value(tool: str, name: str, node: dict[str, Any]) -> st.SearchStrategy[Any]:
    if name not in SEMANTIC:
        return from_schema(node)
    drawn = from_schema(node)
    if name in TIME_FIELDS:  # the integer branch from the schema, the text branch valid
        if tool == "create_calendar_event":  # an event's series must fit the calendar
            drawn = st.integers(*CALENDAR_RANGE)
        drawn = drawn.filter(lambda v: not isinstance(v, str)) | SEMANTIC[name]
        if name == "ends_at":  # after starts_at: a cross-argument rule
            return st.none()
        return drawn
    nullable = "anyOf" in node and {"type": "null"} in node["anyOf"]
    return SEMANTIC[name] | st.none() if nullable else SEMANTIC[name]


def arguments(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = PLAIN[tool]
    assert set(schema) <= KNOWN_KEYWORDS, set(schema) - KNOWN_KEYWORDS
    props = schema["properties"]
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {name: _value(tool, name, props[name]) for name in props if name in required},
        optional={name: _value(tool, name, props[name]) for name in props if name not in required},
    )


# --- what the schema admits is accepted ------------------------------------------------------

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
SETTINGS = settings(
    max_examples=2000 if HEAVY else 60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(data=st.data())
@pytest.mark.parametrize("tool", TOOLS)
def test_arguments_the_schema_admits_are_accepted_within_the_size_policy(
    tool: str, data: st.DataObject
) -> None:
    args = data.draw(arguments(tool))
    assert admitted(tool, args), args  # the generator (and SEMANTIC's values) keep to the schema
    got = tools.check_arguments(tool, args)
    if json_bytes(args) <= MAX_ARGUMENT_BYTES:
        assert got.error_code is None, (args, got)
        strict = {name: args.get(name) for name in STRICT[tool]["properties"]}
        assert tools.check_arguments(tool, strict).error_code is None, (strict, got)
    else:
        assert got.error_code == "invalid_arguments" and "bytes of JSON" in (got.error or "")


# --- what the schema refuses is refused, by name ---------------------------------------------


def _violations(node: dict[str, Any]) -> list[Any]:
    """Values just outside one property's schema (boundaries and wrong forms)."""
    branches = node.get("anyOf", [node])
    out: list[Any] = []
    for b in branches:
        if b.get("type") == "string":
            if "maxLength" in b:
                out.append("x" * (b["maxLength"] + 1))
            if b.get("minLength", 0) > 0:
                out.append("")
            if "pattern" in b:
                out += [" ", "BAD%NS", "a b", "self", "x\n"]
        if b.get("type") == "integer":
            out += [1.5, -0.5, float("inf")]
            if "minimum" in b:
                out += [b["minimum"] - 1, float(b["minimum"] - 1)]
            if "maximum" in b:
                out += [b["maximum"] + 1]
        if b.get("type") == "number":
            out += [True, b.get("minimum", 0) - 0.5, b.get("maximum", 0) + 0.5]
        if "enum" in b:
            out.append("not-" + str(b["enum"][0]))
    return [*out, None, True, [1], {"a": 1}, 3, "text", 2.5]


@st.composite
def mutated(draw: st.DrawFn, tool: str) -> tuple[Any, str | None]:
    """Valid arguments with one change, and the argument it touched (None: the whole)."""
    args = draw(arguments(tool))
    props = PLAIN[tool]["properties"]
    required = PLAIN[tool].get("required", [])
    how = draw(st.sampled_from(["violate", "any", "unknown", "drop", "whole"]))
    if how == "whole":  # as JSON text, as a model sends it (Python's None means "no arguments")
        return json.dumps(draw(JSON_VALUES.filter(lambda v: not isinstance(v, dict)))), None
    if how == "unknown":
        name = draw(st.text(TEXT, min_size=1, max_size=12).filter(lambda n: n not in props))
        return {**args, name: draw(JSON_VALUES)}, name
    if how == "drop" and required:
        name = draw(st.sampled_from(required))
        return {k: v for k, v in args.items() if k != name}, name
    name = draw(st.sampled_from(sorted(props)))
    value = draw(st.sampled_from(_violations(props[name])) if how == "violate" else JSON_VALUES)
    return {**args, name: value}, name


@settings(
    max_examples=5000 if HEAVY else 150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
@pytest.mark.parametrize("tool", TOOLS)
def test_the_validator_refuses_exactly_what_the_schema_refuses(
    tool: str, data: st.DataObject
) -> None:
    args, touched = data.draw(mutated(tool))
    got = tools.check_arguments(tool, args)
    if isinstance(args, str):
        args = json.loads(args)
    if admitted(tool, args):
        if touched in SEMANTIC:
            return  # inside the schema; whether it is valid is the rule the schema cannot say
        assert json_bytes(args) > MAX_ARGUMENT_BYTES or got.error_code is None, (args, got)
        return
    # reserved_namespace: the one typed refusal of an argument ('self' is outside the pattern)
    assert got.error_code in ("invalid_arguments", "reserved_namespace"), (args, got)
    if touched is not None and json_bytes(args) <= MAX_ARGUMENT_BYTES:  # it names the argument
        # as every message names a place (a key that is no name: ['\x1f'], printable)
        named = place("", [touched]) if isinstance(touched, str) else f"{touched}"
        assert named in (got.error or ""), (args, got)


# --- whitespace is what a JSON Schema reader takes it for -------------------------------------

PYTHON_SPACES = "".join(c for c in map(chr, range(0x110000)) if c.isspace())
SPACES = sorted(set(PYTHON_SPACES) | set(ECMA_SPACES) | {"\u200b", "\u180e", "\x00"})
PATTERNED = [
    (tool, name)
    for tool in TOOLS
    for name, prop in PLAIN[tool]["properties"].items()
    if '"pattern"' in json.dumps(prop)
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize(("tool", "name"), PATTERNED)
def test_whitespace_is_read_alike_by_the_schema_and_the_validator(
    tool: str, name: str, data: st.DataObject
) -> None:
    """Every character either reader takes for a space, alone, repeated or around a name:
    admitted by the pattern exactly when accepted ("\\x1c" as a title was admitted by ``\\S``
    and refused as blank, "\\ufeff" refused by it and accepted)."""
    space = data.draw(st.sampled_from(SPACES))
    form = data.draw(st.sampled_from(["{}", "{0}{0}{0}", "{0}ab{0}", "ab{0}", "{0}ab"]))
    args = {**data.draw(arguments(tool)), name: form.format(space)}
    got = tools.check_arguments(tool, args)
    if admitted(tool, args):
        assert got.error_code is None, (args, got)
    else:
        assert got.error_code in ("invalid_arguments", "reserved_namespace"), (args, got)


# --- what only the validator can judge is refused by name, once --------------------------------

SEMANTIC_BAD = {
    "timezone": "Mars/Base",
    "rrule": "FREQ=FORTNIGHTLY",
    "cron": "61 * * * *",
    **{name: "next Tuesday" for name in TIME_FIELDS},
}
SEMANTIC_CASES = [(t, n) for t in TOOLS for n in PLAIN[t]["properties"] if n in SEMANTIC_BAD]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize(("tool", "name"), SEMANTIC_CASES)
def test_a_value_only_the_validator_can_judge_is_refused_naming_it_once(
    tool: str, name: str, data: st.DataObject
) -> None:
    # A zone rule raised its own typed error, "timezone: 'X' is not an IANA zone", and the
    # validator named the argument again: "timezone: timezone: 'X' is not ...".
    args = {**data.draw(arguments(tool)), name: SEMANTIC_BAD[name]}
    if json_bytes(args) > MAX_ARGUMENT_BYTES:
        return  # refused whole, for its size
    got = tools.check_arguments(tool, args)
    if got.error_code is None:
        return  # read by the tool itself (a time for a schedule): tests/tools
    error = got.error or ""
    assert name in error.split(": ", 1)[0].split(", "), got  # alone or in a refused combination
    assert f"{name}: {name}: " not in error, got


# --- one size policy -------------------------------------------------------------------------


def _lengths(node: Any) -> Iterator[int]:
    if isinstance(node, dict):
        if "maxLength" in node:
            yield node["maxLength"]
        for value in node.values():
            yield from _lengths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _lengths(value)


@pytest.mark.parametrize("tool", TOOLS)
def test_no_advertised_length_exceeds_what_one_call_may_carry(tool: str) -> None:
    assert all(n <= MAX_ARGUMENT_BYTES for n in _lengths(PLAIN[tool]))


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("schedule_reminder", {"name": "n", "message": "m", "interval_ms": 1000.0}),
        ("list_upcoming", {"window_days": 7.0}),
        ("search_notes", {"query": "q", "limit": 3.0}),
        ("store_fact", {"namespace": "user", "key": "k", "value": 1, "occurred_at": 1.7e12}),
    ],
)
def test_an_integral_float_is_the_integer(tool: str, args: dict[str, Any]) -> None:
    got = tools.check_arguments(tool, args)
    assert got.args is not None, got
    for name, value in args.items():
        if isinstance(value, float):
            kept = getattr(got.args, name)
            assert type(kept) is int and kept == value


@pytest.mark.parametrize("value", [1000.5, float("nan"), float("inf")])
def test_a_non_integral_number_is_refused_by_the_argument_name(value: float) -> None:
    got = tools.check_arguments(
        "schedule_reminder", {"name": "n", "message": "m", "interval_ms": value}
    )
    assert got.error_code == "invalid_arguments"
    assert (got.error or "").startswith("interval_ms: must be a whole number"), got


# --- a bound the schema advertises is the bound the whole call enforces ------------------------


FIXED = {  # the other arguments a call with an integer argument needs
    "schedule_reminder": {"name": "n", "message": "m"},
    "list_upcoming": {},
    "search_notes": {"query": "q"},
    "search_skills": {"query": "q"},
    "recall_sessions": {"query": "q"},
    "list_facts": {"namespace": "n"},
}
INTEGERS = [
    (tool, name)
    for tool in TOOLS
    for name, prop in PLAIN[tool]["properties"].items()
    if name not in SEMANTIC and any(b.get("type") == "integer" for b in prop.get("anyOf", [prop]))
]
"""Every integer argument of every tool (a time's integer branch is a time: SEMANTIC)."""


@pytest.mark.parametrize(("tool", "name"), INTEGERS)
def test_the_advertised_range_of_a_number_is_what_the_call_accepts(
    tool: str, name: str, tmp_path: Any
) -> None:
    """Every integer argument advertises both bounds; at each the whole call (handler and
    service included) runs, and one past it is refused as the argument validator refuses it
    (the interval's upper bound lived only in the service; list_facts' offset advertised no
    maximum, and 2**63 was refused by the service as invalid_input)."""
    from philont.store import Store

    branch = PLAIN[tool]["properties"][name]
    number = next(b for b in branch.get("anyOf", [branch]) if b.get("type") == "integer")
    assert "minimum" in number and "maximum" in number, number
    fixed = FIXED[tool]
    with Store.open(tmp_path / "m.sqlite") as store:
        for bound, step in ((number["minimum"], -1), (number["maximum"], 1)):
            inside = tools.call(tool, {**fixed, name: bound}, db=store)
            assert inside.ok, (bound, inside)
            outside = tools.call(tool, {**fixed, name: bound + step}, db=store)
            assert outside.error_code == "invalid_arguments", (bound + step, outside)
            assert (outside.error or "").startswith(f"{name}:"), outside


def test_the_advertised_space_class_is_what_blank_means_to_the_validator() -> None:
    from philont.schemas.inputs import SPACE_CLASS

    spaces = re.compile(f"[{SPACE_CLASS}]")
    assert [c for c in map(chr, range(0x110000)) if spaces.fullmatch(c)] == list(PYTHON_SPACES)
    # the characters themselves, no escape (``\\uXXXX`` is no escape to RE2, Go's reader)
    assert "\\" not in SPACE_CLASS

"""One namespace rule and one key rule for every path that names facts: a namespace or key a
write would refuse is refused, with the write's message, by every read and filter — services,
tools and the command line — and one a write accepts is accepted by all of them (``self``,
reserved for writes, stays readable). The one exception, a legacy database's name that a row
holds, is read by name (tests/integration/test_legacy_fact_names.py)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from philont import Memory, tools
from philont.cli import app
from philont.errors import InvalidInputError, ReservedNamespaceError
from philont.schemas import inputs, stored

runner = CliRunner()
AT = datetime(2026, 1, 1, tzinfo=UTC)

NAMES = st.one_of(
    st.from_regex(inputs.NAMESPACE_PATTERN, fullmatch=True),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30),
    st.text(alphabet="abcXYZ_.-%* \\:", max_size=12),
)
KEYS = st.one_of(
    st.from_regex(inputs.KEY_PATTERN, fullmatch=True),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=70),
    st.text(alphabet="abXY_.-%: ", max_size=10),
)


def _write_verdict(namespace: str, key: str = "k") -> str | None:
    """The message a write gets for this address (None: accepted; reserved ``self`` counts as
    accepted, as reads may name it)."""
    for kind, value, name in (
        (inputs.Namespace, namespace, "namespace"),
        (inputs.FactKey, key, "key"),
    ):
        try:
            inputs.check(kind, value, name)
        except ReservedNamespaceError:
            continue
        except InvalidInputError as exc:
            return exc.message
    return None


def _service_paths(namespace: str, key: str) -> dict[str, Callable[[Memory], Any]]:
    return {
        "facts.get": lambda m: m.facts.get(namespace, key),
        "facts.history": lambda m: m.facts.history(namespace, key),
        "facts.as_of": lambda m: m.facts.as_of(namespace, key, at=AT),
        "facts.list": lambda m: m.facts.list(namespace),
        "facts.list(prefix)": lambda m: m.facts.list(namespace, prefix=True),
        "facts.list(.*)": lambda m: m.facts.list(f"{namespace}.*"),
        "facts.events": lambda m: m.facts.events(namespace),
        "facts.forget_candidates": lambda m: m.facts.forget_candidates(namespace=namespace),
    }


def _service_verdict(mem: Memory, call: Callable[[Memory], Any]) -> str | None:
    try:
        call(mem)
    except InvalidInputError as exc:
        return exc.message
    return None


def _cli_verdict(*args: str) -> str | None:
    """The command's refusal, without whitespace (the console wraps long lines, wide
    characters anywhere)."""
    result = runner.invoke(app, list(args))
    found = _BAD_VALUE.search(result.output)
    if found:  # refused while the command line is read: bad usage, naming the argument
        assert result.exit_code == 2, result.output
        return "".join(f"{found[1]}: {found[2]}".split())
    found = _INVALID.search(result.output)
    if found:  # a name a stored row may hold, refused by the lookup (no row holds it)
        assert result.exit_code == 1, result.output
        return "".join(found[1].split())
    assert result.exit_code == 0 or "not_found" in result.output, result.output
    return None


_BAD_VALUE = re.compile(r"error \(usage\): Invalid value for '(\w+)': (.*) \(see `[^`]*`\)", re.S)
_INVALID = re.compile(r"error \(invalid_input\): (.*)", re.S)


def _flat(message: str | None) -> str | None:
    return None if message is None else "".join(message.split())


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(namespace=NAMES, key=KEYS)
@example(namespace="BAD%NS", key="k")
@example(namespace="self", key="k")
@example(namespace="user", key="a b")
@example(namespace="user.*", key="k")
@example(namespace=":", key="")
@example(namespace="a" * 101, key="k")  # list_facts said "at most 102 characters" from 103 on
@example(namespace="a" * 103, key="k")
@example(namespace="a b" * 40, key="k")  # a long name a stored row may hold
def test_every_read_refuses_what_a_write_refuses_with_its_message(
    namespace: str, key: str, tool_db: Path
) -> None:
    if namespace.endswith(".*"):
        return  # the selector form is a filter of its own (test below)
    expected = _write_verdict(namespace, key)
    ns_expected = None if namespace == "*" else _write_verdict(namespace)  # '*': every one
    with Memory.open(tool_db) as mem:
        for path, call in _service_paths(namespace, key).items():
            verdict = _service_verdict(mem, call)
            if path in ("facts.get", "facts.history", "facts.as_of"):
                assert verdict == expected, path
            elif path == "facts.list(.*)":  # its own message for '.*' and '*.*'
                refused = namespace in ("", "*") or ns_expected is not None
                assert (verdict is not None) == refused, path
            else:
                assert verdict == ns_expected, path
    got = tools.call("get_fact", {"namespace": namespace, "key": key}, db=tool_db)
    # a name a stored row may hold passes the arguments (a legacy database's, read by name
    # where a row holds it): refused by the lookup itself, with the write's message
    refusals = ("invalid_arguments", "invalid_input")
    assert (got.error_code in refusals) == (expected is not None), got
    # the write's message for the namespace, or (a namespace a stored row may hold passes the
    # arguments) for the key
    messages = [m for m in (expected, _write_verdict("user", key)) if m is not None]
    if expected is not None:
        assert any(m in (got.error or "") for m in messages), got
    listed = tools.call("list_facts", {"namespace": namespace}, db=tool_db)
    # as get_fact: a filter a stored row's namespace may hold is refused by the list itself
    assert (listed.error_code in refusals) == (ns_expected is not None), listed
    if ns_expected is not None:
        assert ns_expected in (listed.error or ""), listed
    db = str(tool_db)
    assert _cli_verdict("facts", "list", "--db", db, "--", namespace) == _flat(ns_expected)
    for command in ("get", "history"):
        verdict = _cli_verdict("facts", command, "--db", db, "--", namespace, key)
        assert verdict == _flat(expected) or (
            verdict is not None and verdict in map(_flat, messages)
        )


@pytest.mark.parametrize(
    ("selector", "refused"),
    [
        ("*", False),
        ("user.*", False),
        ("self.*", False),
        ("user.preferences.*", False),
        ("BAD%NS.*", True),
        ("User.*", True),
        (".*", True),
        ("user.*.*", True),
        ("*.*", True),
    ],
)
def test_a_selector_is_star_or_a_namespace_by_the_write_rule_with_its_children(
    selector: str, refused: bool, tool_db: Path
) -> None:
    listed = tools.call("list_facts", {"namespace": selector}, db=tool_db)
    # one a stored row's namespace may hold ('BAD%NS') is refused by the list (no row has it)
    assert (listed.error_code in ("invalid_arguments", "invalid_input")) == refused, listed
    cli = _cli_verdict("facts", "list", "--db", str(tool_db), "--", selector)
    assert (cli is not None) == refused
    with Memory.open(tool_db) as mem:
        assert (_service_verdict(mem, lambda m: m.facts.list(selector)) is not None) == refused


def test_legacy_names_a_write_would_refuse_still_import_and_list(tool_db: Path) -> None:
    """A legacy row's namespace and key (the original checked none) are kept by import as
    they are and listed by '*'; the services read that exact address by name (what a list
    shows must be readable: history() of a listed legacy fact was refused) and filtered by
    name, while a filter or an address no row holds is refused like any bad name."""
    assert inputs.check(stored.StoredNamespace, "User Prefs", "namespace") == "User Prefs"
    assert inputs.check(stored.StoredFactKey, "_odd key", "key") == "_odd key"
    with closing(sqlite3.connect(str(tool_db))) as conn, conn:
        conn.execute(
            "INSERT INTO memory_facts (id, namespace, key, value_json, confidence, created_at)"
            " VALUES ('legacy-1', 'User Prefs', '_odd key', '\"tea\"', 1.0, 1700000000000)"
        )
    with Memory.open(tool_db) as mem:
        assert [(f.namespace, f.key) for f in mem.facts.list("*")] == [("User Prefs", "_odd key")]
        assert [(f.namespace, f.key) for f in mem.facts.list("User Prefs")] == [
            ("User Prefs", "_odd key")
        ]
        with pytest.raises(InvalidInputError):  # a filter no row matches
            mem.facts.list("User Pref")
        for fact in mem.facts.list("*"):
            assert [v.value for v in mem.facts.history(fact.namespace, fact.key)] == ["tea"]
            got = mem.facts.get(fact.namespace, fact.key)
            assert got is not None and got.value == "tea"
            then = mem.facts.as_of(fact.namespace, fact.key, at=AT)
            assert then is not None and then.value == "tea"
        for namespace, key in [("User Prefs", "other key"), ("User Prefs2", "_odd key")]:
            with pytest.raises(InvalidInputError):  # not held: the write's refusal
                mem.facts.get(namespace, key)

"""A name a legacy database holds (the original checked no namespace, and keys only for spaces
and colons) that today's write rules refuse is read by name wherever a list shows it: the
Python API, the ``get_fact`` tool and ``philont facts get``/``history``. ``facts list`` showed
``User Prefs._odd key``, and ``facts get 'User Prefs' '_odd key'`` and the tool refused it
with the write's message. A write of such a name is still refused, and so is a lookup of one
no row holds (with the write's message)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import URL
from typer.testing import CliRunner

from philont import Memory, Store, tools
from philont.cli import app
from philont.errors import InvalidInputError
from philont.schemas import inputs

BOTH_BACKENDS = True
runner = CliRunner()
_ids = itertools.count()


def _refused_by_the_write_rule(value: str, kind: object) -> bool:
    try:
        inputs.check(kind, value, "name")
    except InvalidInputError:
        return True
    return False


def _held(text_: str) -> bool:
    return bool(text_.strip()) and "\x00" not in text_


_TEXT = st.characters(codec="utf-8", exclude_characters="\x00")
legacy_namespaces = (
    st.text(_TEXT, min_size=1, max_size=40) | st.sampled_from(["User Prefs", "a%b", "Ümlaut"])
).filter(lambda n: _held(n) and _refused_by_the_write_rule(n, inputs.Namespace))
legacy_keys = (
    st.text(_TEXT, min_size=1, max_size=64) | st.sampled_from(["_odd key", "a:b", "x y"])
).filter(lambda k: _held(k) and _refused_by_the_write_rule(k, inputs.FactKey))


_FEW = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    s = Store.open(target)
    yield s
    s.close()


def _seed(store: Store, namespace: str, key: str, value: str) -> None:
    row_id = f"legacy-{next(_ids)}"

    def insert(mem: Memory) -> None:
        mem.session.execute(
            text(
                "INSERT INTO memory_facts (id, namespace, key, value_json, confidence, "
                "created_at) VALUES (:id, :ns, :key, :value, 1.0, 1700000000000)"
            ),
            {"id": row_id, "ns": namespace, "key": key, "value": json.dumps(value)},
        )

    store.run(insert)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(namespace=legacy_namespaces, key=legacy_keys | st.sampled_from(["home_city"]))
@example(namespace="User Prefs", key="_odd key")
@example(namespace="user", key="_odd key")
def test_a_listed_legacy_name_is_read_by_name_everywhere(
    store: Store, target: Path | URL, namespace: str, key: str
) -> None:
    value = f"v{next(_ids)}"
    _seed(store, namespace, key, value)
    listed = store.run(lambda mem: [(f.namespace, f.key) for f in mem.facts.list("*")])
    assert (namespace, key) in listed
    got = store.run(lambda mem: mem.facts.get(namespace, key))
    assert got is not None and got.value == value
    called = tools.call("get_fact", {"namespace": namespace, "key": key}, db=store)
    assert called.ok, called
    assert called.data is not None and called.data["value"] == value
    db = str(target) if isinstance(target, Path) else target.render_as_string(hide_password=False)
    for command in ("get", "history"):
        result = runner.invoke(app, ["facts", command, "--db", db, "--json", "--", namespace, key])
        assert result.exit_code == 0, result.output
        shown = json.loads(result.output)
        assert (shown[0] if command == "history" else shown)["value"] == value


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(namespace=legacy_namespaces, key=legacy_keys)
@example(namespace="User Prefs", key="_odd key")
def test_a_legacy_name_no_row_holds_is_refused_and_never_written(
    store: Store, target: Path | URL, namespace: str, key: str
) -> None:
    with pytest.raises(InvalidInputError):
        store.run(lambda mem: mem.facts.store(namespace, key, "x"))
    called = tools.call("get_fact", {"namespace": namespace, "key": key}, db=store)
    assert called.error_code in ("invalid_input", "invalid_arguments"), called
    assert "namespace:" in (called.error or ""), called
    db = str(target) if isinstance(target, Path) else target.render_as_string(hide_password=False)
    result = runner.invoke(app, ["facts", "get", "--db", db, "--", namespace, key])
    assert result.exit_code != 0, result.output
    assert "not_found" not in result.output, result.output
    assert store.run(lambda mem: mem.facts.list("*")) == []


def _listed_everywhere(store: Store, target: Path | URL, selector: str) -> dict[str, object]:
    """What each list path answers for ``selector``: the (namespace, key) pairs, or the
    refusal's code."""

    def pairs(facts: object) -> list[tuple[str, str]]:
        return sorted((f.namespace, f.key) for f in facts)  # type: ignore[attr-defined]

    answers: dict[str, object] = {}
    for name, call in {
        "facts.list": lambda mem: pairs(mem.facts.list(selector)),
        "facts.list(prefix)": lambda mem: pairs(mem.facts.list(selector, prefix=True)),
    }.items():
        try:
            answers[name] = store.run(call)
        except InvalidInputError as exc:
            answers[name] = exc.code
    called = tools.call("list_facts", {"namespace": selector}, db=store)
    answers["list_facts"] = (
        sorted((f["namespace"], f["key"]) for f in called.data)  # type: ignore[union-attr]
        if called.ok
        else called.error_code
    )
    db = str(target) if isinstance(target, Path) else target.render_as_string(hide_password=False)
    result = runner.invoke(app, ["facts", "list", "--db", db, "--json", "--", selector])
    answers["facts list"] = (
        sorted((f["namespace"], f["key"]) for f in json.loads(result.output))
        if result.exit_code == 0
        else result.exit_code
    )
    return answers


@_FEW
@given(namespace=legacy_namespaces)
@example(namespace="User Prefs")
@example(namespace="a%b")
@example(namespace="a_b\\")
def test_a_listed_legacy_namespace_is_a_list_filter_everywhere(
    store: Store, target: Path | URL, namespace: str
) -> None:
    """``facts list 'User Prefs'`` (and the tool, and the service) lists what '*' shows under
    that namespace, its prefix form ``'User Prefs.*'`` its children too; a LIKE wildcard in
    the name is a literal (``a%b.*`` lists no ``aXb.c``)."""
    n = next(_ids)
    child = f"{namespace}.c{n}"
    lookalikes = [  # LIKE would match them: a wildcard, or another case (SQLite's LIKE)
        namespace.replace("%", "X").replace("_", "Y") + f"Z{n}",
        f"{namespace.swapcase()}.c{n}",
        f"{namespace.replace('%', '.')}.c{n}",
    ]
    for ns in (namespace, child, *lookalikes, f"user{n}"):
        _seed(store, ns, "k", "v")
    every = store.run(lambda mem: [(f.namespace, f.key) for f in mem.facts.list("*")])
    exact = sorted(p for p in every if p[0] == namespace)
    with_children = sorted(
        p for p in every if p[0] == namespace or p[0].startswith(f"{namespace}.")
    )
    assert (child, "k") in with_children
    for selector, expected in ((namespace, exact), (f"{namespace}.*", with_children)):
        answers = _listed_everywhere(store, target, selector)
        prefixed = answers.pop("facts.list(prefix)")
        assert prefixed == with_children, (selector, prefixed)
        assert all(a == expected for a in answers.values()), (selector, answers)
    events = store.run(lambda mem: mem.facts.events(namespace))
    assert events == []  # no event facts: the filter is taken, not refused
    store.run(lambda mem: mem.facts.forget_candidates(namespace=namespace))


@_FEW
@given(namespace=legacy_namespaces)
@example(namespace="User Prefs")
@example(namespace="a%")
def test_a_legacy_filter_no_row_matches_is_refused_with_the_write_rule(
    store: Store, target: Path | URL, namespace: str
) -> None:
    """A filter outside the rule that no stored namespace matches is refused as before (not
    answered "no facts"); a row under a LIKE lookalike does not make it held."""
    _seed(store, namespace.replace("%", "X").replace("_", "Y") + "Z", "k", "v")
    refused = dict.fromkeys(("facts.list", "facts.list(prefix)"), "invalid_input")
    for selector in (namespace, f"{namespace}.*"):
        answers = _listed_everywhere(store, target, selector)
        assert answers == {**refused, "list_facts": "invalid_input", "facts list": 1}, answers


def test_a_prefix_filter_counts_case_on_both_backends(store: Store) -> None:
    """``'user.*'`` lists ``user.prefs``, not a legacy ``User.prefs`` (SQLite's LIKE, which
    the prefix match used, ignores ASCII case)."""
    _seed(store, "User.prefs", "k", "v")
    _seed(store, "user.prefs", "k", "v")
    listed = store.run(lambda mem: [f.namespace for f in mem.facts.list("user.*")])
    assert listed == ["user.prefs"]

"""A skill or fact asked for by a name that names none is refused naming up to three that may
have been meant (the tools, the services, the command line), on both backends, and never one of
another agent's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont import Store, tools
from philont.errors import FactNotFoundError, SkillNotFoundError

BOTH_BACKENDS = True

SKILLS = ["back-up-folder-to-nas", "convert-pdf-invoice-to-csv", "send-invoice-email"]
FACTS = [("user.home", "city"), ("user.preferences", "diet"), ("user.contacts", "accountant")]


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    opened = Store.open(target)
    with opened.begin() as mem:
        for name in SKILLS:
            mem.skills.create(name, "what it does", "some, words", "1. do it")
        for namespace, key in FACTS:
            mem.facts.store(namespace=namespace, key=key, value="x")
    yield opened
    opened.close()


ASKED = [  # (what was asked, what it may have meant)
    ("back-up-folder", ["back-up-folder-to-nas"]),
    ("send-invoice-mail", ["send-invoice-email"]),
    ("zzzz", []),
]


@pytest.mark.parametrize(("asked", "near"), ASKED)
def test_an_unknown_skill_names_the_ones_it_may_mean(
    store: Store, asked: str, near: list[str]
) -> None:
    result = tools.call("use_skill", {"name": asked}, db=store)
    assert result.error_code == "skill_not_found"
    with store.begin() as mem, pytest.raises(SkillNotFoundError) as caught:
        mem.skills.record_usage(asked)
    for said in (result.text, str(caught.value)):
        assert ("did you mean" in said) == bool(near), said
        assert all(repr(name) in said for name in near), said
    assert caught.value.details.get("near", []) == near


@pytest.mark.parametrize(
    ("namespace", "key", "near"),
    [
        ("user.home", "citi", ["user.home.city"]),
        ("user.hom", "city", ["user.home.city"]),
        ("user", "diet", []),
    ],
)
def test_an_unknown_fact_names_the_ones_it_may_mean(
    store: Store, namespace: str, key: str, near: list[str]
) -> None:
    result = tools.call("get_fact", {"namespace": namespace, "key": key}, db=store)
    assert result.error_code == "fact_not_found"
    with store.begin() as mem:
        assert mem.facts.names_near(namespace, key) == near
    assert ("did you mean" in result.text) == bool(near), result.text
    assert all(repr(name) in result.text for name in near), result.text


def test_a_fact_no_longer_current_is_not_suggested(store: Store) -> None:
    with store.begin() as mem:
        fact = mem.facts.get("user.home", "city")
        assert fact is not None
        mem.facts.forget(fact.id)
        assert mem.facts.names_near("user.home", "citi") == []


def test_the_refusal_names_no_values_and_reads_like_the_others() -> None:
    error = FactNotFoundError("user.home", "citi", near=["user.home.city", "user.work.city"])
    assert str(error) == (
        "no active fact user.home.citi; did you mean 'user.home.city' or 'user.work.city'?"
    )
    assert str(FactNotFoundError("a", "b")) == "no active fact a.b"


@pytest.mark.postgres
def test_another_agents_names_are_never_suggested(
    backend: str, store: Store, pg_agent_name: Callable[[], str]
) -> None:
    if backend != "postgres":
        pytest.skip("agents are PostgreSQL's")
    other = store.for_agent(pg_agent_name())
    with other.begin() as mem:
        mem.skills.create("back-up-folder-to-usb", "what it does", "some, words", "1. do it")
        mem.facts.store(namespace="user.home", key="citx", value="x")
    result = tools.call("use_skill", {"name": "back-up-folder"}, db=store)
    assert "back-up-folder-to-usb" not in result.text
    assert "'back-up-folder-to-nas'" in result.text
    with store.begin() as mem:
        assert mem.facts.names_near("user.home", "citi") == ["user.home.city"]

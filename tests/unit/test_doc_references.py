"""Every ``philont.…`` name README.md and docs/*.md give resolves to a module or an attribute
of one, and every file or folder of the repository they name exists: a rename that leaves the
docs behind fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_CODE = {
    "philont.agent_id": "the PostgreSQL setting that carries a transaction's agent",
    "philont.agent": "the prefix of an agent's advisory lock (README's SQL for hosts)",
    "philont.domain.facts.rank_valid": "benchmarks.md's history: measured, then folded back",
}
NOT_IN_A_CHECKOUT = {"philont/_alembic": "the wheel's copy of alembic/"}


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_philont_name_the_docs_give_exists(doc: Path) -> None:
    names = set(re.findall(r"\bphilont(?:\.[A-Za-z_]\w*)+", doc.read_text("utf-8")))
    missing = {n for n in names if n not in NOT_CODE and not _resolves(n)}
    assert missing == set(), f"{doc.name} names what philont no longer has"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_repository_path_the_docs_give_exists(doc: Path) -> None:
    text = doc.read_text("utf-8")
    paths = {  # not a pattern ("v001…", "test_*.py")
        m.group(1).rstrip(".")
        for m in re.finditer(r"(?<![\w/.-])((?:philont|tests|scripts|alembic|docs)/[\w./-]+)", text)
        if text[m.end() : m.end() + 1] not in ("…", "*")
    }
    missing = {p for p in paths if p not in NOT_IN_A_CHECKOUT and not (ROOT / p).exists()}
    assert missing == set(), f"{doc.name} names files that are not there"


def test_every_service_method_the_docs_call_on_mem_exists(tmp_path: Path) -> None:
    """``mem.facts.history``, ``mem.calendar.between``, ``mem.search.reports``, ...: looked up
    on a real unit of work (its services are made on first use)."""
    from philont import Store

    said = {
        (doc.name, service, member)
        for doc in DOCS
        for service, member in re.findall(r"\bmem\.([a-z_]+)(?:\.([a-z_]+))?", doc.read_text())
    }
    assert len(said) > 20
    with Store.open(tmp_path / "m.sqlite") as store, store.begin(write=False) as mem:
        missing = {
            (doc, service, member)
            for doc, service, member in said
            if not hasattr(mem, service) or (member and not hasattr(getattr(mem, service), member))
        }
    assert missing == set()


def test_every_extra_the_docs_install_is_declared() -> None:
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"
    ]
    named = {x for doc in DOCS for x in re.findall(r"philont\[([a-z0-9-]+)\]", doc.read_text())}
    assert {"async", "postgres", "mcp", "testing"} <= named
    assert named - set(declared) == set()


def test_the_read_models_are_frozen_and_the_readmes_examples_are_exported() -> None:
    """README: services "return frozen pydantic read models (the modules of
    ``philont.schemas``; the common ones ... also from ``philont``)"."""
    import inspect
    import pkgutil

    from pydantic import BaseModel

    import philont
    import philont.schemas

    models = [
        cls
        for info in pkgutil.iter_modules(philont.schemas.__path__, "philont.schemas.")
        for cls in vars(importlib.import_module(info.name)).values()
        if inspect.isclass(cls) and issubclass(cls, BaseModel) and cls.__module__ == info.name
    ]
    assert len(models) > 30
    assert [m.__name__ for m in models if not m.model_config.get("frozen")] == []
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "the common ones, `FactRecord`, `MessageHit`, ..., also from `philont`" in " ".join(
        readme.split()
    )
    assert hasattr(philont, "FactRecord") and hasattr(philont, "MessageHit")

"""The error classes and codes README.md and docs/*.md name exist, are paired as the code pairs
them, and the exit codes the docs give a code are the ones the command line exits with."""

from __future__ import annotations

import builtins
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import sqlalchemy.exc

import philont
from philont.cli import common
from philont.errors import PhilontError

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXT = {doc.relative_to(ROOT).as_posix(): " ".join(doc.read_text("utf-8").split()) for doc in DOCS}


def _error_classes() -> dict[str, type[PhilontError]]:
    """Every PhilontError subclass philont defines, by name (every module imported)."""
    for module in pkgutil.walk_packages(philont.__path__, "philont."):
        if not module.name.endswith("__main__") and "._alembic" not in module.name:
            importlib.import_module(module.name)
    found: dict[str, type[PhilontError]] = {}
    todo: list[type[PhilontError]] = [PhilontError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("philont."):
            found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


CLASSES = _error_classes()
RESULT_CODES = {  # codes of tool results and MCP errors that no exception class carries
    code
    for source in ("philont/tools/dispatch.py", "philont/mcp/transport.py")
    for code in re.findall(r'"([a-z]+(?:_[a-z]+)+)"', (ROOT / source).read_text("utf-8"))
}
CODES = {cls.code for cls in CLASSES.values()} | RESULT_CODES


def _by_code(code: str) -> list[type[PhilontError]]:
    return [cls for cls in CLASSES.values() if cls.code == code]


@pytest.mark.parametrize("doc", list(TEXT))
def test_every_error_class_named_exists(doc: str) -> None:
    for name in set(re.findall(r"`([A-Z][A-Za-z0-9]*Error)`", TEXT[doc])):
        known = name in CLASSES or hasattr(builtins, name) or hasattr(sqlalchemy.exc, name)
        assert known, f"{doc} names {name}, which philont does not define"


@pytest.mark.parametrize("doc", list(TEXT))
def test_a_class_and_the_code_given_with_it_agree(doc: str) -> None:
    pairs = re.findall(r"`([A-Z][A-Za-z0-9]*Error)` \((?:a `[A-Za-z]+`, )?`([a-z_]+)`", TEXT[doc])
    for name, code in pairs:
        if name in CLASSES:
            assert CLASSES[name].code == code, f"{doc}: {name} ({code}) is {CLASSES[name].code}"


def test_every_code_the_docs_print_exists() -> None:
    said = {
        code
        for text in TEXT.values()
        for code in re.findall(r"error \(([a-z_]+)\)|`([a-z_]+)`, exit \d", text)
        for code in code
        if code and code != "usage"
    }
    assert said and said <= CODES, said - CODES


def test_the_exit_code_the_readme_gives_a_code_is_the_command_lines() -> None:
    stated = re.findall(r"`([a-z_]+)`, exit (\d+)", TEXT["README.md"])
    assert len(stated) >= 3
    for code, exit_ in stated:
        classes = _by_code(code)
        assert classes, code
        for cls in classes:
            assert common.exit_code(cls.__new__(cls)) == int(exit_), (code, cls)


def test_the_readmes_list_of_exit_codes_is_the_command_lines() -> None:
    said = re.search(r"Exit codes: (.*?)\. ", TEXT["README.md"])
    assert said is not None
    numbers = [int(n) for n in re.findall(r"(?:^|, )(\d+) ", said.group(1))]
    assert numbers == [
        0,
        common.EXIT_ERROR,
        common.EXIT_USAGE,
        common.EXIT_OUT_OF_DATE,
        common.EXIT_NOT_FOUND,
        common.EXIT_CONFLICT,
        common.EXIT_INTERRUPTED,
    ]

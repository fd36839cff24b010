"""The parsers of command-line values (:class:`Value`), and the two the ``philont`` group and
every ``--db`` take: light to import (pydantic and the input types load when a value is read),
so that ``philont --help`` does not load them. The rest: :mod:`philont.cli.values`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from philont.errors import PhilontError

__all__ = ["AGENT", "DB", "Value"]

_NAMED = re.compile(r"^[-\w.]+: ")
"""The argument's name a rule's message starts with (``timezone: 'CEST' is not ...``)."""


class Value:
    """A parser for typer (``typer.Option(parser=Value(...))``): the text read (as a whole
    number, a number, or as it is), then checked by ``kind`` (a pydantic type, checked with
    :func:`philont.schemas.inputs.check`) or ``rule`` (a function that returns the value to use
    or raises a :class:`~philont.errors.PhilontError`). A refusal is ``typer.BadParameter`` (the
    public name of the class of typer's own copy of click, the one it catches; the ``click``
    package's is another class) with the rule's own message, shown as ``Invalid value for
    '<option>': ...`` (a ``ValueError`` would not do: click's function type shows the value
    instead of it)."""

    def __init__(
        self,
        kind: Any = None,
        *,
        rule: Callable[[Any], Any] | None = None,
        read: Callable[[str], Any] = str,
    ) -> None:
        assert (kind is None) != (rule is None), "a kind or a rule"
        self.kind = kind
        self.rule = rule
        self.read = read

    def __call__(self, raw: object) -> Any:
        try:
            given = self.read(raw) if isinstance(raw, str) else raw  # a default is not text
            if self.rule is not None:
                return self.rule(given)
            from philont.schemas import inputs

            return inputs.check(self.kind, given, "value")
        except (PhilontError, ValueError) as exc:
            from typer import BadParameter

            message = exc.message if isinstance(exc, PhilontError) else str(exc)
            while _NAMED.match(message):  # click names the option itself
                message = _NAMED.sub("", message, count=1)
            raise BadParameter(message) from None

    def refuses(self, text: str) -> bool:
        """Whether this value is refused (what the tests of every option ask)."""
        from typer import BadParameter

        try:
            self(text)
        except BadParameter:
            return True
        return False


def _db(text: str) -> str:
    """Something that can name a database, by its text alone (not where it is or what is in
    it: that is the command's to find out, with its own code: a path the file system will not
    let us use, a folder without permission, a loop of links, is refused as every path named,
    ``file_path``, exit 1)."""
    from philont.db.engine import require_file, resolve_url

    require_file(resolve_url(text, text_only=True), "a command")
    return text


def _agent(text: str) -> str:
    from philont.db.agents import check_name

    return check_name(text)


DB = Value(rule=_db)
AGENT = Value(rule=_agent)

"""How deeply a JSON-RPC line nests, measured without parsing it (no recursion, any depth).

The SDK validates every request by dumping it with pydantic, whose serializer gives up at 255
levels (the SDK then answers a bare ``-32602`` with no code of ours and logs to stderr; from
about 990 levels it answered nothing at all), and Python's ``json`` stops near 1,000 (the line
was called "not valid JSON", answered with id ``null``). A line nested deeper than
:data:`MAX_MESSAGE_DEPTH` is answered by the transport instead, with its id, read from a
shallow copy of it (:func:`shallow`).
"""

from __future__ import annotations

import itertools
import re
from typing import Final

from philont.db.stored_values import MAX_JSON_DEPTH

__all__ = ["MAX_MESSAGE_DEPTH", "items", "nesting", "shallow"]

MAX_MESSAGE_DEPTH: Final = 2 * MAX_JSON_DEPTH
"""Levels of arrays and objects a message may nest. A tool argument's value nests at most
:data:`~philont.db.stored_values.MAX_JSON_DEPTH` (inside the message, the params and the
arguments): up to this depth the tool refuses a deeper value by name, as in-process; the SDK
fails from 255."""

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
"""A JSON string (skipped whole: brackets inside it are text) or a bracket."""
_ITEM_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]', re.DOTALL)
"""The same, or a comma."""
_JSON_SPACE = " \t\n\r"


def nesting(text: str) -> int:
    """How many levels of arrays and objects ``text`` nests (brackets inside strings are
    text); what is not JSON is measured as far as its brackets go."""
    steps = (
        1 if token in "[{" else -1
        for token in (match.group() for match in _TOKEN.finditer(text))
        if len(token) == 1
    )
    return max(itertools.accumulate(steps, initial=0))


def shallow(text: str, keep: int) -> str:
    """``text`` with every array or object deeper than ``keep`` levels replaced by ``null``:
    JSON that Python parses without recursing past ``keep``, the rest (the id, the method, the
    tool's name) as it was."""
    out: list[str] = []
    depth, copied = 0, 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if len(token) != 1:  # a string: copied with what surrounds it, or skipped with it
            continue
        opening = token in "[{"
        depth += 1 if opening else -1
        if opening and depth == keep + 1:  # the first level cut: copy up to it, then null
            out += [text[copied : match.start()], "null"]
        elif not opening and depth == keep:  # its end: go on copying after it
            copied = match.end()
    out.append(text[copied:] if depth <= keep else "")
    return "".join(out)


def items(text: str) -> list[str]:
    """The texts of the items of the JSON array ``text`` (valid JSON up to its items), each as
    it was written (a key given twice, a number too long to read ...), found without parsing
    them: a batch's messages, each checked as a line of its own."""
    found: list[str] = []
    depth, start = 0, 0
    for match in _ITEM_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            start = match.end() if depth == 1 else start
        elif token in ("]", "}"):
            depth -= 1
            if depth == 0:
                found.append(text[start : match.start()])
                break
        elif token == "," and depth == 1:
            found.append(text[start : match.start()])
            start = match.end()
    return [item.strip(_JSON_SPACE) for item in found if item.strip(_JSON_SPACE)]

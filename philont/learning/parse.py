"""Defensive reading of model answers: whatever the text, a result object, never an exception.

A model may wrap its JSON in code fences or prose, stop half-way (length limit), send the wrong
types, send megabytes, or be steered by hostile conversation content into proposing names meant
to overwrite curated skills or to carry SQL / FTS syntax. Each reader here returns what it could
use and, for everything else, a :class:`Rejected` with the reason; an item is kept whole or not
at all (a truncated item is dropped, never cut to fit).

What is checked here is the shape; the services check again on write (names, limits,
namespaces), and the skill rules (:mod:`philont.domain.skill_rules`) decide what may be written.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from philont.domain.kinds import SkillKind
from philont.domain.skill_rules import SkillContent
from philont.schemas.inputs import first_repeated
from philont.services.skills import NAME_PATTERN

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_ITEMS",
    "ActionProposal",
    "ExtractionAnswer",
    "JsonFound",
    "Rejected",
    "SkillAnswer",
    "SkillProposal",
    "find_json",
    "parse_extraction",
    "parse_skills",
    "parse_summary",
    "problem_of",
    "storable",
]

MAX_ANSWER_CHARS: Final = 1_000_000
"""Only this much of an answer is read; the rest is ignored (and reported)."""
MAX_ITEMS: Final = 50
"""Items beyond this many in one answer are rejected."""
MAX_SUMMARY_CHARS: Final = 4_000
"""A summary longer than this is cut, with a marker (Philont's compactor did the same)."""
MAX_DESCRIPTION_CHARS: Final = 2_000
MAX_TEMPLATE_CHARS: Final = 20_000
MAX_KEYWORD_CHARS: Final = 80
MAX_KEYWORDS_PROPOSED: Final = 30
_MAX_JSON_STARTS: Final = 64
_FENCE: Final = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_NEGATIVE_HEADINGS: Final = tuple(
    re.compile(rf"^\s*##\s*{word}\b", re.MULTILINE | re.IGNORECASE)
    for word in ("Trigger", "Avoid", "Instead")
)


@dataclass(frozen=True)
class Rejected:
    """An item of the answer that was not used: its position, its name if it had one, why."""

    index: int
    reason: str
    name: str | None = None


@dataclass(frozen=True)
class JsonFound:
    """The JSON array found in an answer (``items``), or what was wrong (``problem``)."""

    items: tuple[Any, ...] = ()
    problem: str | None = None
    truncated: bool = False


# --- finding the JSON ---------------------------------------------------------------------------


class _Ambiguous(dict[str, Any]):
    """An object of the answer with a key given twice (``repeated``): which value was meant
    cannot be known, so the item holding it is rejected, not guessed (the rest is read). A key
    given twice with a list as one of its values (``lists``) makes the answer object holding
    it unreadable as a whole (:func:`_first_array`)."""

    repeated: str = ""
    lists: str | None = None


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    ambiguous = _Ambiguous(value)
    ambiguous.repeated = first_repeated(pairs) or ""
    counts = collections.Counter(key for key, _ in pairs)
    ambiguous.lists = next((k for k, v in pairs if counts[k] > 1 and isinstance(v, list)), None)
    return ambiguous


class _UnreadableAnswer(ValueError):
    """An answer object with a key given twice over lists: which list was meant cannot be
    known (dict() kept the last one; an object under other keys gave its first list)."""


class _Unreadable:
    """What stands in an answer for a value the decoder cannot read: ``NaN`` or ``Infinity``,
    a number of more digits than Python converts (``sys.get_int_max_str_digits``), an element
    of the answer's array nested deeper than the decoder recurses or that is no JSON. Only the
    item holding it is rejected: the decoder's error used to end the answer there (every item
    after it lost, the answer said to be cut off) or make it unreadable as a whole."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<{self.reason}>"


def _no_constants(name: str) -> _Unreadable:
    return _Unreadable(f"{name} is not JSON")


def _int(text: str) -> int | _Unreadable:
    try:
        return int(text)
    except ValueError:
        return _Unreadable(f"a number of {len(text)} digits cannot be read")


def _repeated(item: Any) -> str | None:
    """Why ``item`` cannot be used as it is written (a key given twice in an object anywhere
    in it, a value the decoder could not read), or None."""
    todo = [item]
    while todo:
        value = todo.pop()
        if isinstance(value, _Unreadable):
            return value.reason
        if isinstance(value, _Ambiguous):
            return (
                f"the key {value.repeated[:40]!r} appears twice in one object; which value is "
                "meant cannot be known"
            )
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return None


# strict=False: models often put raw line breaks inside JSON strings (templates).
_DECODER: Final = json.JSONDecoder(
    parse_constant=_no_constants, strict=False, object_pairs_hook=_pairs, parse_int=_int
)


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None


_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _bracket_ends(text: str) -> dict[int, int]:
    """Where each bracket of ``text`` that is closed ends (one past its closing bracket),
    strings skipped."""
    ends: dict[int, int] = {}
    opened: list[int] = []
    for match in _TOKENS.finditer(text):
        char = match.group()
        if char in "[{":
            opened.append(match.start())
        elif char in "]}" and opened:
            ends[opened.pop()] = match.end()
    return ends


def _elements(text: str, start: int, ends: Callable[[], dict[int, int]]) -> tuple[list[Any], bool]:
    """The elements of the JSON array that starts at ``text[start] == '['``, as far as they
    decode whole, in order, and whether the array closes after them (no: it was cut off, or
    went on in no JSON). An object or array element that cannot be decoded (nested too deep,
    not JSON) but closes is an :class:`_Unreadable` (its end found by ``ends()``, where each
    bracket's match ends)."""
    items: list[Any] = []
    pos = start + 1
    length = len(text)
    while pos < length:
        while pos < length and text[pos] in " \t\r\n,":
            pos += 1
        if text.startswith("]", pos):
            return items, True
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            end = ends().get(pos)  # an object or array that closes: only it is lost
            if end is None:
                break
            why = "nested too deep" if isinstance(exc, RecursionError) else "not JSON"
            value, pos = _Unreadable(f"the item is {why}"), end
        items.append(value)
    return items, False


def _as_list(value: Any, keys: tuple[str, ...]) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in keys:
            if isinstance(value.get(key), list):
                return list(value[key])
    return None


def find_json(text: object, *, keys: tuple[str, ...] = ()) -> JsonFound:
    """The first JSON array in ``text`` (or an object holding one under one of ``keys``).

    Code fences are looked into first; prose before and after is skipped; ``NaN`` and
    ``Infinity`` are not JSON. An array cut off before its end gives its complete elements
    (``truncated``). Only :data:`MAX_ANSWER_CHARS` characters are read."""
    if not isinstance(text, str):
        return JsonFound(problem=f"the answer is not text ({type(text).__name__})")
    cut = len(text) > MAX_ANSWER_CHARS
    text = text[:MAX_ANSWER_CHARS]
    bodies = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for body in bodies:
        try:
            found = _first_array(body, keys)
        except _UnreadableAnswer as exc:
            return JsonFound(problem=str(exc), truncated=cut)
        if found is not None:
            items, truncated = found
            return JsonFound(items=tuple(items), truncated=truncated or cut)
    problem = "no JSON array in the answer"
    if cut:
        problem += f" (read only the first {MAX_ANSWER_CHARS} characters)"
    return JsonFound(problem=problem, truncated=cut)


def _starts(body: str, pattern: str) -> list[int]:
    return [m.start() for m in itertools.islice(re.finditer(pattern, body), _MAX_JSON_STARTS)]


def _first_array(body: str, keys: tuple[str, ...]) -> tuple[list[Any], bool] | None:
    """In order of preference: the first whole array holding an object; the complete elements
    of the first array cut off before its end; the first whole array at all (e.g. ``[]``).
    The array chosen is refused (:class:`_UnreadableAnswer`) when it is one of the lists of an
    object with a key given twice over lists (``{"facts": [...], "facts": [...]}``)."""
    starts = _starts(body, r"[\[{]")
    fallback: tuple[list[Any], int] | None = None
    spans: list[tuple[int, int, str]] = []  # objects with a key given twice over lists
    for start in starts:
        decoded = _decode_at(body, start)
        if decoded is None:
            continue
        if isinstance(decoded[0], _Ambiguous) and decoded[0].lists:
            spans.append((start, decoded[1], decoded[0].lists))
        found = _as_list(decoded[0], keys)
        if found is None:
            continue
        if any(isinstance(item, dict) for item in found):
            return _chosen(found, start, spans), False
        if fallback is None:
            fallback = (found, start)
    ends = functools.cache(lambda: _bracket_ends(body))
    for start in starts:
        if body[start] == "[":
            prefix, closed = _elements(body, start, ends)
            if any(isinstance(item, dict) for item in prefix):
                return _chosen(prefix, start, spans), not closed
    return None if fallback is None else (_chosen(*fallback, spans), False)


def _chosen(items: list[Any], start: int, spans: list[tuple[int, int, str]]) -> list[Any]:
    """``items`` (found at ``start``), unless they lie in an object of ``spans``."""
    for first, end, key in spans:
        if first <= start < end:
            raise _UnreadableAnswer(
                f"the key {key[:40]!r} appears twice in the answer's object, with a list: which"
                " list is meant cannot be known"
            )
    return items


# --- storable text ---------------------------------------------------------------------------


def storable(text: str) -> str:
    """Foreign text (a model's, a client's error message) as every backend stores it and every
    output prints it: NUL characters dropped (PostgreSQL refuses them), lone surrogates as
    U+FFFD (no database or UTF-8 output takes them)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _text_problem(value: str) -> str | None:
    """Why a string cannot be stored: a NUL (PostgreSQL text) or a lone surrogate."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    return None


def _string(item: dict[str, Any], key: str, *, limit: int, required: bool = True) -> str | None:
    """``item[key]`` as checked text; raises ValueError with the reason."""
    value = item.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise ValueError(f"{key} must not be blank")
    if len(value) > limit:
        raise ValueError(f"{key} is longer than {limit} characters")
    problem = _text_problem(value)
    if problem:
        raise ValueError(f"{key} {problem}")
    return value if value.strip() else None


# --- skills ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SkillProposal:
    """One skill the model proposes, checked for shape."""

    name: str
    kind: SkillKind
    content: SkillContent


@dataclass(frozen=True)
class SkillAnswer:
    proposals: tuple[SkillProposal, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    problem: str | None = None
    truncated: bool = False


def _keywords(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"trigger_keywords must be a list of strings, got {type(value).__name__}")
    if len(value) > MAX_KEYWORDS_PROPOSED:
        raise ValueError(f"more than {MAX_KEYWORDS_PROPOSED} trigger_keywords")
    words: list[str] = []
    for word in value:
        if not isinstance(word, str):
            raise ValueError("trigger_keywords must all be strings")
        if len(word) > MAX_KEYWORD_CHARS or _text_problem(word):
            raise ValueError(f"trigger keyword {word[:40]!r} is too long or not storable")
        if word.strip():
            words.append(word.strip())
    return tuple(dict.fromkeys(words))


def _skill(item: Any) -> SkillProposal:
    """One proposal from one item; raises ValueError with the reason."""
    if (ambiguous := _repeated(item)) is not None:
        raise ValueError(ambiguous)
    if not isinstance(item, dict):
        raise ValueError(f"an item must be an object, got {type(item).__name__}")
    raw_name = item.get("name")
    if not isinstance(raw_name, str) or NAME_PATTERN.fullmatch(raw_name.strip()) is None:
        raise ValueError("name must be a kebab-case slug of 1..80 characters (a-z, 0-9, '-')")
    kind_value = item.get("kind")
    if kind_value is None:
        kind = SkillKind.POSITIVE
    elif kind_value in ("positive", "negative"):
        kind = SkillKind(kind_value)
    else:
        raise ValueError(f"kind must be 'positive' or 'negative', got {str(kind_value)[:40]!r}")
    description = _string(item, "description", limit=MAX_DESCRIPTION_CHARS)
    template = _string(item, "action_template", limit=MAX_TEMPLATE_CHARS)
    when = _string(item, "when_to_use", limit=MAX_DESCRIPTION_CHARS, required=False)
    assert description is not None and template is not None  # required=True
    if kind == SkillKind.NEGATIVE and not all(h.search(template) for h in _NEGATIVE_HEADINGS):
        raise ValueError(
            "a negative skill's action_template needs '## Trigger', '## Avoid' and '## Instead'"
        )
    content = SkillContent(description, _keywords(item.get("trigger_keywords")), template, when)
    return SkillProposal(raw_name.strip(), kind, content)


def _name_of(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else None
    return storable(name[:80]) if isinstance(name, str) else None


def parse_skills(text: object) -> SkillAnswer:
    """Skill proposals from a reflection answer (a JSON array of ``{name, description,
    trigger_keywords, action_template, kind?, when_to_use?}``); see the module docstring."""
    found = find_json(text, keys=("skills", "items"))
    proposals: list[SkillProposal] = []
    rejected: list[Rejected] = []
    seen: set[str] = set()
    for index, item in enumerate(found.items):
        if index >= MAX_ITEMS:
            rejected.append(Rejected(index, f"more than {MAX_ITEMS} items", _name_of(item)))
            continue
        try:
            proposal = _skill(item)
        except ValueError as exc:
            rejected.append(Rejected(index, str(exc), _name_of(item)))
            continue
        if proposal.name in seen:
            rejected.append(Rejected(index, "the same name twice in one answer", proposal.name))
            continue
        seen.add(proposal.name)
        proposals.append(proposal)
    return SkillAnswer(tuple(proposals), tuple(rejected), found.problem, found.truncated)


# --- extraction (facts and notes) ---------------------------------------------------------------


@dataclass(frozen=True)
class ActionProposal:
    """A ``store_fact`` or ``store_note`` the model asks for: the tool name and its arguments
    (not yet validated: the writer validates them exactly as the tools do)."""

    index: int
    action: str
    arguments: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class ExtractionAnswer:
    actions: tuple[ActionProposal, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    problem: str | None = None
    truncated: bool = False


EXTRACTION_ACTIONS: Final = ("store_fact", "store_note")


def parse_extraction(text: object) -> ExtractionAnswer:
    """``store_fact`` / ``store_note`` actions from an extraction answer (a JSON array of
    objects with an ``action`` key and the tool's arguments beside it)."""
    found = find_json(text, keys=("actions", "items"))
    actions: list[ActionProposal] = []
    rejected: list[Rejected] = []
    for index, item in enumerate(found.items):
        if index >= MAX_ITEMS:
            rejected.append(Rejected(index, f"more than {MAX_ITEMS} items"))
            continue
        if (ambiguous := _repeated(item)) is not None:
            rejected.append(Rejected(index, ambiguous))
            continue
        if not isinstance(item, dict):
            rejected.append(
                Rejected(index, f"an item must be an object, not {type(item).__name__}")
            )
            continue
        action = item.get("action")
        if action not in EXTRACTION_ACTIONS:
            rejected.append(
                Rejected(
                    index, f"action must be store_fact or store_note, got {str(action)[:40]!r}"
                )
            )
            continue
        arguments = {k: v for k, v in item.items() if k != "action"}
        actions.append(ActionProposal(index, str(action), arguments))
    return ExtractionAnswer(tuple(actions), tuple(rejected), found.problem, found.truncated)


def problem_of(answer: SkillAnswer | ExtractionAnswer) -> str | None:
    """What a report says was wrong with an answer as a whole: why nothing could be read, or
    that it was cut off (its complete items were used; what followed is lost)."""
    if answer.problem is not None:
        return answer.problem
    if answer.truncated:
        return (
            f"the answer was cut off: its {len(answer.rejected) + _used(answer)} complete "
            "item(s) were read, the rest of it is lost"
        )
    return None


def _used(answer: SkillAnswer | ExtractionAnswer) -> int:
    return len(answer.proposals) if isinstance(answer, SkillAnswer) else len(answer.actions)


# --- summaries and verdicts -------------------------------------------------------------------


def parse_summary(text: object) -> str | None:
    """A session summary: the answer's text without code fences, cut to
    :data:`MAX_SUMMARY_CHARS` with a marker; None when there is nothing storable."""
    if not isinstance(text, str):
        return None
    body = text[:MAX_ANSWER_CHARS].strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1).strip()
    body = storable(body)
    if not body:
        return None
    if len(body) > MAX_SUMMARY_CHARS:
        original = len(body)
        body = body[:MAX_SUMMARY_CHARS] + f"\n…[summary cut: {original} characters]"
    return body


def first_object(text: object, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that ``accept`` takes (fences looked into first)."""
    if not isinstance(text, str):
        return None
    text = text[:MAX_ANSWER_CHARS]
    for body in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for start in _starts(body, r"\{"):
            decoded = _decode_at(body, start)
            if decoded is None or not isinstance(decoded[0], dict) or _repeated(decoded[0]):
                continue  # not an object, or an ambiguous one (a key given twice)
            if accept(decoded[0]):
                return decoded[0]
    return None

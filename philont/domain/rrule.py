"""RFC 5545 RRULE text: parsing, the rule-part restrictions, normalisation; no expansion here."""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from philont.errors import InvalidInputError

__all__ = ["MAX_RULE_LENGTH", "Freq", "Rule", "bad_rule", "parse_rule", "until_fields"]

MAX_RULE_LENGTH: Final = 1000


class Freq(enum.IntEnum):
    """FREQ values, coarsest first (the order RFC 5545 and dateutil compare them in)."""

    YEARLY = 0
    MONTHLY = 1
    WEEKLY = 2
    DAILY = 3
    HOURLY = 4
    MINUTELY = 5
    SECONDLY = 6


_PART_ORDER: Final = (
    "FREQ",
    "INTERVAL",
    "COUNT",
    "UNTIL",
    "BYSECOND",
    "BYMINUTE",
    "BYHOUR",
    "BYDAY",
    "BYMONTHDAY",
    "BYYEARDAY",
    "BYWEEKNO",
    "BYMONTH",
    "BYSETPOS",
    "WKST",
)
WEEKDAYS: Final = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
# name -> (smallest magnitude, largest magnitude, negative values allowed)
_INT_LISTS: Final[dict[str, tuple[int, int, bool]]] = {
    "BYSECOND": (0, 59, False),
    "BYMINUTE": (0, 59, False),
    "BYHOUR": (0, 23, False),
    "BYMONTHDAY": (1, 31, True),
    "BYYEARDAY": (1, 366, True),
    "BYWEEKNO": (1, 53, True),
    "BYMONTH": (1, 12, False),
    "BYSETPOS": (1, 366, True),
}
# ASCII digits only: int() reads every script's digits ("INTERVAL=٣" was stored as 3)
_INT_RE: Final = re.compile(r"[+-]?\d{1,9}", re.ASCII)
_BYDAY_RE: Final = re.compile(r"([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)", re.ASCII)
_UNTIL_RE: Final = re.compile(r"(\d{8})(?:T(\d{6})(Z?))?", re.ASCII)
_COUNT_RE: Final = re.compile(r"\d{1,18}", re.ASCII)

# One step of a longer interval jumps past the whole calendar (years 1..9999): such a "series"
# can only ever be its first occurrence, and the arithmetic on it would overflow.
MAX_INTERVAL: Final[dict[Freq, int]] = {
    Freq.YEARLY: 9_998,
    Freq.MONTHLY: 9_998 * 12,
    Freq.WEEKLY: 3_652_058 // 7,
    Freq.DAILY: 3_652_058,
    Freq.HOURLY: 3_652_058 * 24,
    Freq.MINUTELY: 3_652_058 * 1_440,
    Freq.SECONDLY: 3_652_058 * 86_400,
}


@dataclass(frozen=True)
class Rule:
    """A parsed, normalised rule. ``byday`` holds ``(n, weekday)`` pairs, ``n == 0`` for a
    plain weekday (``MO``) and ``n != 0`` for a numbered one (``-1FR``); weekday 0 is Monday."""

    text: str
    freq: Freq
    interval: int
    count: int | None
    until: str | None
    bysecond: tuple[int, ...]
    byminute: tuple[int, ...]
    byhour: tuple[int, ...]
    byday: tuple[tuple[int, int], ...]
    bymonthday: tuple[int, ...]
    byyearday: tuple[int, ...]
    byweekno: tuple[int, ...]
    bymonth: tuple[int, ...]
    bysetpos: tuple[int, ...]
    wkst: int


def bad_rule(rule: str, reason: str) -> InvalidInputError:
    """The error for a refused rule, quoting (the start of) it."""
    return InvalidInputError.of(
        "rrule", f"invalid RRULE {rule[:120]!r}: {reason}", rrule=rule[:MAX_RULE_LENGTH]
    )


def until_fields(value: str) -> tuple[datetime, bool, bool]:
    """UNTIL as a naive datetime, whether it was UTC (``Z``) and whether it was a date alone
    (then its midnight: the caller bounds the series by that whole day)."""
    match = _UNTIL_RE.fullmatch(value)
    if match is None:
        raise ValueError(f"UNTIL {value!r} is not YYYYMMDD[THHMMSS[Z]]")
    day, clock, zulu = match.groups()
    if clock is None:
        return datetime.strptime(day, "%Y%m%d"), False, True
    return datetime.strptime(day + clock, "%Y%m%d%H%M%S"), zulu == "Z", False


def _int_value(rule: str, name: str, value: str, low: int, high: int, negative: bool) -> int:
    if _INT_RE.fullmatch(value) is None:
        raise bad_rule(rule, f"{name} value {value!r} is not an integer")
    number = int(value)
    if not low <= abs(number) <= high or (number < 0 and not negative):
        sign = "±" if negative else ""
        raise bad_rule(rule, f"{name} value {value!r} is outside {sign}{low}..{sign}{high}")
    return number


def _normalise_scalar(rule: str, freq: Freq, name: str, value: str) -> str:
    if name in ("INTERVAL", "COUNT"):
        if _COUNT_RE.fullmatch(value) is None or int(value) < 1:
            raise bad_rule(rule, f"{name} must be a positive integer (at most 18 digits)")
        number = int(value)
        if name == "INTERVAL" and number > MAX_INTERVAL[freq]:
            raise bad_rule(
                rule,
                f"INTERVAL={number} with FREQ={freq.name} steps past the end of the calendar "
                f"(at most {MAX_INTERVAL[freq]}); a single event needs no RRULE",
            )
        return str(number)
    if name == "UNTIL":
        try:
            until_fields(value)
        except ValueError as exc:
            if _UNTIL_RE.fullmatch(value) is None:
                reason = f"UNTIL must be YYYYMMDD or YYYYMMDDTHHMMSS[Z], got {value[:40]!r}"
            else:
                reason = f"UNTIL {value!r} is not a valid date: {exc}"
            raise bad_rule(rule, reason) from exc
        return value
    if value not in WEEKDAYS:  # WKST
        raise bad_rule(rule, f"WKST must be one of {', '.join(WEEKDAYS)}, got {value[:20]!r}")
    return value


def _normalise_part(rule: str, freq: Freq, name: str, value: str) -> str:
    if not value:
        raise bad_rule(rule, f"{name} has no value")
    if name == "FREQ":
        return value
    if name in ("INTERVAL", "COUNT", "UNTIL", "WKST"):
        return _normalise_scalar(rule, freq, name, value)
    items = value.split(",")
    if name == "BYDAY":
        out = []
        for item in items:
            match = _BYDAY_RE.fullmatch(item)
            if match is None:
                raise bad_rule(rule, f"BYDAY item {item[:20]!r} is not [+/-n]MO..SU")
            ordinal, day = match.groups()
            if ordinal is None:
                out.append(day)
                continue
            n = _int_value(rule, "BYDAY", ordinal, 1, 53, True)
            if freq not in (Freq.MONTHLY, Freq.YEARLY):
                raise bad_rule(rule, "a numbered BYDAY (like 1MO) needs FREQ=MONTHLY or YEARLY")
            if freq is Freq.MONTHLY and abs(n) > 5:
                raise bad_rule(rule, f"BYDAY {item!r}: a month has at most 5 of each weekday")
            out.append(f"{n}{day}")
        return ",".join(out)
    low, high, negative = _INT_LISTS[name]
    return ",".join(str(_int_value(rule, name, item, low, high, negative)) for item in items)


def _check_combinations(rule: str, freq: Freq, parts: dict[str, str]) -> None:
    """The rule-part restrictions of RFC 5545 section 3.3.10."""
    names = set(parts)
    if "COUNT" in names and "UNTIL" in names:
        raise bad_rule(rule, "COUNT and UNTIL must not both be given")
    if "BYWEEKNO" in names and freq is not Freq.YEARLY:
        raise bad_rule(rule, "BYWEEKNO is only allowed with FREQ=YEARLY")
    if "BYYEARDAY" in names and freq in (Freq.DAILY, Freq.WEEKLY, Freq.MONTHLY):
        raise bad_rule(rule, f"BYYEARDAY is not allowed with FREQ={freq.name}")
    if "BYMONTHDAY" in names and freq is Freq.WEEKLY:
        raise bad_rule(rule, "BYMONTHDAY is not allowed with FREQ=WEEKLY")
    if (
        freq is Freq.YEARLY
        and "BYWEEKNO" in names
        and any(not day.isalpha() for day in parts.get("BYDAY", "").split(",") if day)
    ):
        raise bad_rule(rule, "a numbered BYDAY is not allowed together with BYWEEKNO")
    if "BYSETPOS" in names and not any(n.startswith("BY") and n != "BYSETPOS" for n in names):
        raise bad_rule(rule, "BYSETPOS needs another BYxxx part to select from")


def _split(rule: str, text: str) -> dict[str, str]:
    raw: dict[str, str] = {}
    for piece in text.split(";"):
        if not piece:
            continue  # tolerate a trailing or doubled ';'
        name, sep, value = piece.partition("=")
        if not sep:
            raise bad_rule(rule, f"part {piece[:40]!r} is not NAME=VALUE")
        if name not in _PART_ORDER:
            raise bad_rule(rule, f"unknown rule part {name[:40]!r}")
        if name in raw:
            raise bad_rule(rule, f"{name} is given twice")
        raw[name] = value
    return raw


def _ints(parts: dict[str, str], name: str) -> tuple[int, ...]:
    return tuple(sorted({int(v) for v in parts[name].split(",")})) if name in parts else ()


def _days(parts: dict[str, str]) -> tuple[tuple[int, int], ...]:
    out = set()
    for item in parts.get("BYDAY", "").split(","):
        if item:
            out.add((int(item[:-2] or 0), WEEKDAYS.index(item[-2:])))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=1024)
def parse_rule(rule: str) -> Rule:
    """Parse and normalise one RRULE value; ``InvalidInputError`` with the reason otherwise.

    Case-insensitive, optional ``RRULE:`` prefix, parts in any order. Refused: unknown or
    repeated parts, out-of-range values, the combinations RFC 5545 forbids, DTSTART/EXDATE/RDATE
    text, and an INTERVAL whose single step leaves the calendar. Cheap: no expansion.
    """
    if not isinstance(rule, str):
        raise InvalidInputError.of(
            "rrule", f"must be a string like 'FREQ=WEEKLY;BYDAY=MO', got {type(rule).__name__}"
        )
    text = rule.strip().upper()
    if text.startswith("RRULE:"):
        text = text[len("RRULE:") :]
    if not text:
        raise bad_rule(rule, "the rule is empty")
    if len(text) > MAX_RULE_LENGTH:
        raise bad_rule(rule, f"the rule is longer than {MAX_RULE_LENGTH} characters")
    if "DTSTART" in text:
        raise bad_rule(rule, "DTSTART must not be inside the rule; the event's start is the start")
    if any(c.isspace() for c in text) or ":" in text:
        raise bad_rule(
            rule, "only one RRULE value is supported (no DTSTART, EXDATE, RDATE or line breaks)"
        )
    raw = _split(rule, text)
    if "FREQ" not in raw:
        raise bad_rule(rule, "FREQ is required")
    if raw["FREQ"] not in Freq.__members__:
        names = ", ".join(Freq.__members__)
        raise bad_rule(rule, f"FREQ must be one of {names}, got {raw['FREQ'][:20]!r}")
    freq = Freq[raw["FREQ"]]
    parts = {name: _normalise_part(rule, freq, name, value) for name, value in raw.items()}
    _check_combinations(rule, freq, parts)
    ordered = ";".join(f"{name}={parts[name]}" for name in _PART_ORDER if name in parts)
    return Rule(
        text=ordered,
        freq=freq,
        interval=int(parts.get("INTERVAL", "1")),
        count=int(parts["COUNT"]) if "COUNT" in parts else None,
        until=parts.get("UNTIL"),
        bysecond=_ints(parts, "BYSECOND"),
        byminute=_ints(parts, "BYMINUTE"),
        byhour=_ints(parts, "BYHOUR"),
        byday=_days(parts),
        bymonthday=_ints(parts, "BYMONTHDAY"),
        byyearday=_ints(parts, "BYYEARDAY"),
        byweekno=_ints(parts, "BYWEEKNO"),
        bymonth=_ints(parts, "BYMONTH"),
        bysetpos=_ints(parts, "BYSETPOS"),
        wkst=WEEKDAYS.index(parts.get("WKST", "MO")),
    )

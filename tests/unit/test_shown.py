"""A value a message shows is cut before it is written (:func:`philont.domain.shown.short`):
``repr(part)[:80]`` of 10 MB of bytes first built a 40 MB string, for any refusal naming it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from philont.domain import json_values
from philont.domain.shown import short
from philont.errors import InvalidTimeRangeError

BIG = 10_000_000


def _peak(make: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        make()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "big",
    [bytes(BIG), bytearray(BIG), memoryview(bytes(BIG)), "\x00" * BIG, [bytes(BIG)], 10**4000],
    ids=["bytes", "bytearray", "memoryview", "str", "list", "int"],
)
def test_a_big_value_is_shown_short_without_writing_it_whole(big: object) -> None:
    assert len(short(big)) < 100
    assert _peak(lambda: short(big)) < 1_000_000


@pytest.mark.parametrize(
    "refusal",
    [
        lambda big: json_values.problem({"a": [big]}, "value"),
        lambda big: json_values.problem({big: 1}, "value"),
        lambda big: str(InvalidTimeRangeError(big, big, names=("since", "until"))),
    ],
    ids=["value", "key", "time range"],
)
def test_a_refusal_shows_a_big_value_short(refusal: Callable[[object], str | None]) -> None:
    big = bytes(BIG)
    message = refusal(big)
    assert message is not None and len(message) < 300, message
    assert _peak(lambda: refusal(big)) < 1_000_000


def test_a_value_whose_repr_fails_is_shown_by_its_type() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert "Broken" in short(Broken())
    assert "Broken" in (json_values.problem({"a": Broken()}, "value") or "")

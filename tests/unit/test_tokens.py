"""Token estimates count JS UTF-16 units and round up like the original."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.tokens import TokenEstimator, default_estimator, utf16_len


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 5),
        ("你好", 2),
        ("é", 1),
        ("😀", 2),
        ("a😀b", 4),
        ("𠀀", 2),  # a CJK extension-B ideograph lies outside the BMP too
        ("\ud800", 1),  # a lone surrogate is one unit, as in JS
    ],
)
def test_utf16_length_counts_characters_outside_the_bmp_twice(text: str, expected: int) -> None:
    assert utf16_len(text) == expected


@given(st.text(st.characters(codec=None, exclude_categories=())))
def test_utf16_length_is_one_unit_per_bmp_character_and_two_beyond(text: str) -> None:
    # Any text, lone surrogates included: the definition, character by character.
    assert utf16_len(text) == sum(2 if ord(c) > 0xFFFF else 1 for c in text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),  # 0.6 rounds up
        ("abcde", 3),  # 5 * 0.6 == 3.0 exactly in IEEE-754
        ("abcdef", 4),  # 3.6 rounds up
        ("x" * 10, 6),
        ("你好世界", 3),  # 2.4 rounds up
        ("😀😀😀😀😀", 6),  # 10 units, not 5 characters
    ],
)
def test_the_default_estimator_is_the_ceiling_of_six_tenths_of_the_utf16_length(
    text: str, expected: int
) -> None:
    assert default_estimator(text) == expected


def test_the_default_estimator_satisfies_the_estimator_type() -> None:
    estimator: TokenEstimator = default_estimator
    assert estimator("abc") == 2

"""Word forms a stemmer cannot join: the irregular inflections table and compound parts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.word_forms import IRREGULAR, compound_parts, other_forms

TABLE_WORDS = sorted({w for group in IRREGULAR.split("|") for w in group.split()})


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        ("buy", ("bought",)),
        ("bought", ("buy",)),
        ("went", ("go", "gone")),
        ("Took", ("take", "taken")),
        ("children", ("child",)),
        ("lay", ("laid", "lie", "lain")),  # in two groups: every form of both
        ("paint", ()),  # regular: the stemmer joins its forms
        ("", ()),
    ],
)
def test_an_irregular_word_gives_its_other_forms(word: str, forms: tuple[str, ...]) -> None:
    assert other_forms(word) == forms


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("artists/bands", ("artists", "bands")),
        ("transgender-specific", ("transgender", "specific")),
        ("one-year-old", ("one", "year", "old")),
        ("card_playing", ("card", "playing")),
        ("--a--b--", ("a", "b")),
        ("bye-bye", ("bye",)),
        ("u.s", ()),  # dots join codes, not words
        ("10:30", ()),
        ("paint", ()),
        ("-paint-", ()),
    ],
)
def test_a_compound_gives_its_parts(word: str, parts: tuple[str, ...]) -> None:
    assert compound_parts(word) == parts


@given(st.sampled_from(TABLE_WORDS))
def test_forms_are_symmetric_and_never_the_word_itself(word: str) -> None:
    forms = other_forms(word)
    assert forms
    assert word not in forms
    assert all(word in other_forms(form) for form in forms)


@given(st.text(alphabet=st.sampled_from("ab-/_.x"), max_size=20))
def test_parts_hold_no_joiner_and_are_only_given_for_two_or_more(word: str) -> None:
    parts = compound_parts(word)
    assert len(parts) != 1 or len(set(parts)) == 1
    for part in parts:
        assert part
        assert not set(part) & set("-/_")
        assert part in word
    if parts:
        assert any(c in word for c in "-/_")

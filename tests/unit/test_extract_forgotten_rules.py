"""The rule that keeps extraction from bringing back what was forgotten (philont.domain.forgetting):
when a proposal was said, whether it may be written again, and when two notes are the same."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.forgetting import Said, may_write_again, note_key, said_when

# (the window's message times, the cited time, the times its matches were forgotten, written?)
CASES = [
    ([10, 20], None, [], True),  # nothing forgotten: written as before
    ([10, 20], None, [30], False),  # the same messages again, after the forgetting
    ([10, 20], None, [20], False),  # forgotten in the millisecond of the last message
    ([10, 20], None, [5], True),  # every message came after the forgetting: said anew
    ([10, 20], None, [10], False),  # forgotten in the millisecond of the first: not after it
    ([10, 20, 30], None, [15], False),  # across the forgetting, no citation: may be the old one
    ([10, 20, 30], 30, [15], True),  # cites the message after the forgetting
    ([10, 20, 30], 10, [15], False),  # cites the message before it
    ([10, 20, 30], 25, [15], False),  # cites a time no message has: ignored
    ([10, 20, 30], 30, [15, 31], False),  # forgotten again after the newer message
    ([10, 20, 30], 30, [31, 15], False),  # (the order of the forgettings does not matter)
    ([10, 20, 30], 30, [2, 15], True),  # forgotten twice, both before the cited message
    ([], None, [15], False),  # a window without messages says nothing anew
    ([], 30, [15], False),
    ([], None, [], True),
]


@pytest.mark.parametrize(("dialogue", "cited", "forgotten", "written"), CASES)
def test_what_was_forgotten_is_written_again_only_when_said_after_it(
    dialogue: list[int], cited: int | None, forgotten: list[int], written: bool
) -> None:
    assert may_write_again(forgotten, said_when(dialogue, cited)) is written


def test_when_a_proposal_was_said() -> None:
    assert said_when([10, 20, 30], 20) == Said(20, 20)
    assert said_when([10, 20, 30], None) == Said(10, 30)
    assert said_when([10, 20, 30], 21) == Said(10, 30)
    assert said_when([], 20) is None


stamps = st.integers(min_value=0, max_value=100)


@given(st.lists(stamps, max_size=6), st.none() | stamps, st.lists(stamps, max_size=4))
def test_written_again_exactly_when_every_message_it_may_come_from_is_newer(
    dialogue: list[int], cited: int | None, forgotten: list[int]
) -> None:
    dialogue = sorted(dialogue)
    sources = [cited] if cited is not None and cited in dialogue else dialogue
    expected = not forgotten or (bool(sources) and min(sources) > max(forgotten))
    assert may_write_again(forgotten, said_when(dialogue, cited)) is expected


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("The user drinks tea", "the user DRINKS tea", True),
        ("  The user\n drinks\ttea ", "The user drinks tea", True),
        ("ｔｅａ ｔｉｍｅ", "tea time", True),  # full-width letters (NFKC)
        ("Straße", "STRASSE", True),  # case folding
        ("The user drinks tea", "The user drinks tea.", False),  # punctuation is content
        ("The user drinks tea", "The user drinks coffee", False),
        ("喝茶", "喝 茶", False),  # a space between words is not nothing
    ],
)
def test_two_notes_are_the_same_up_to_case_and_spacing(a: str, b: str, same: bool) -> None:
    assert (note_key(a) == note_key(b)) is same


@given(st.text(max_size=40))
def test_the_note_key_is_stable(text: str) -> None:
    assert note_key(note_key(text)) == note_key(text)

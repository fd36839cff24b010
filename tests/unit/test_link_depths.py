"""link_depths: which of a key's versions stored in one millisecond came later."""

from __future__ import annotations

import random

import pytest

from philont.domain.facts import link_depths


@pytest.mark.parametrize("seed", range(6))
def test_a_chain_of_any_length_in_any_order_is_numbered_along_it(seed: int) -> None:
    """A key's versions form chains through ``superseded_by`` (thousands of them: no recursion
    limit); read in any order, each version is one deeper than the one it superseded."""
    rng = random.Random(seed)
    n = rng.choice((2, 50, 5000))
    links = [(f"v{i}", f"v{i + 1}" if i + 1 < n else None) for i in range(n)]
    rng.shuffle(links)
    assert link_depths(links) == {f"v{i}": i for i in range(n)}


def test_several_superseded_at_once_and_links_out_of_the_set() -> None:
    links = [("a", "c"), ("b", "c"), ("c", None), ("x", "gone"), ("y", "a")]
    assert link_depths(links) == {"a": 1, "b": 0, "c": 2, "x": 0, "y": 0}


def test_a_cycle_stays_at_zero() -> None:
    assert link_depths([("a", "b"), ("b", "a")]) == {"a": 0, "b": 0}

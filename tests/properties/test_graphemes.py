"""Text cut for display never splits a character a reader sees as one (an accent from its
letter, a skin tone from its hand, a ZWJ family, a flag's pair, an NFD Hangul syllable), and
every display cut goes through the one rule (recall_sessions showed half a family emoji)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from philont import tools
from philont.domain.graphemes import ELLIPSIS, clip
from philont.store import Store

# Each item is one extended grapheme cluster, whatever stands next to it.
CLUSTERS = [
    "a",
    "Z",
    " ",
    "\n",
    "\r\n",
    "中",
    "e\u0301",  # e + combining acute
    "a\u0308\u0323",  # two combining marks
    "\u0915\u094d",  # Devanagari ka + virama (Mn)
    "\u0937",
    "\u0915\u093f",  # Devanagari ki (vowel sign is Mc)
    "👍",
    "👍🏽",  # skin tone
    "👨\u200d👩\u200d👧",  # ZWJ family
    "❤\ufe0f",  # variation selector
    "🇩🇪",
    "🇫🇷",
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland (tags)
    "\u1112\u1161\u11ab",  # 한 in NFD jamo (L V T)
    "\u1100\u1161",  # 가 in NFD jamo (L V)
    "한",
    "\uac00\u11a8",  # LV syllable + T jamo
]


@given(st.lists(st.sampled_from(CLUSTERS), max_size=30), st.integers(0, 80))
def test_a_cut_keeps_whole_clusters_and_as_many_as_fit(clusters: list[str], limit: int) -> None:
    text = "".join(clusters)
    shown = clip(text, limit)
    if len(text) <= limit:
        assert shown == text
        return
    assert shown.endswith(ELLIPSIS)
    head = shown[: -len(ELLIPSIS)]
    lengths = [len("".join(clusters[:k])) for k in range(len(clusters) + 1)]
    assert len(head) in lengths, (clusters, limit, shown)  # a head of whole clusters
    k = lengths.index(len(head))
    assert head == "".join(clusters[:k])
    # the longest such head that leaves room for the mark
    assert len(head) <= max(0, limit - len(ELLIPSIS)) or k == 0
    assert k == len(clusters) or lengths[k + 1] > limit - len(ELLIPSIS)


def test_recall_sessions_shows_a_long_message_cut_between_whole_characters(
    tmp_path: Path,
) -> None:
    family = "👨\u200d👩\u200d👧"
    with Store.open(tmp_path / "m.sqlite") as store:
        with store.begin() as mem:
            mem.timeline.append("Berlin " + "x" * 290 + family * 10)
        result = tools.call("recall_sessions", {"query": "Berlin"}, db=store)
    assert result.ok
    line = next(line for line in result.text.splitlines() if "Berlin" in line)
    shown = line.rsplit(": ", 1)[1]
    assert shown.endswith(ELLIPSIS)
    rest = shown.removesuffix(ELLIPSIS).removeprefix("Berlin " + "x" * 290)
    assert rest == family * (len(rest) // len(family)), shown  # whole families only


def test_no_display_cut_bypasses_the_rule() -> None:
    """A slice followed by an ellipsis (``text[:n] + "…"``) anywhere in philont/ is a cut that
    can split a character: cut with :func:`clip` instead."""
    root = Path(__file__).resolve().parents[2] / "philont"
    cut = re.compile(r"\]\s*\+\s*(?:\"…\"|\"\.\.\.\"|'…'|'\.\.\.')")
    found = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if cut.search(line)
    ]
    # shown.py cuts the repr of bytes, which is ASCII
    assert found == ["domain/shown.py:43"]

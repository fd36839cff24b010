"""Word forms a stemmer cannot join: English irregular inflections, and the parts of compounds.

The word indexes stem regular inflections alike (porter on SQLite, ``english`` on PostgreSQL:
paint, paints, painted, painting), but not irregular ones: a question asks "What did Dave
buy?" in the base form while the conversation narrates "I bought ..." in the past. And a
compound of the query ("artists/bands", "transgender-specific") is searched as a phrase, so a
message naming one of its parts does not match. Search looks these forms up too, as weaker
matches of the query's word (:func:`philont.domain.ranking.fold_forms`). Pure data and
functions; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["IRREGULAR", "compound_parts", "other_forms"]

IRREGULAR = """
arise arose arisen | awake awoke awoken | bear bore borne born | beat beaten | become became
| begin began begun | bend bent | bind bound | bite bit bitten | bleed bled | blow blew blown
| break broke broken | breed bred | bring brought | build built | burn burnt | buy bought
| catch caught | choose chose chosen | cling clung | come came | creep crept | deal dealt
| dig dug | draw drew drawn | dream dreamt | drink drank drunk | drive drove driven
| eat ate eaten | fall fell fallen | feed fed | feel felt | fight fought | find found
| flee fled | fly flew flown | forbid forbade forbidden | forget forgot forgotten
| forgive forgave forgiven | freeze froze frozen | get got gotten | give gave given
| go went gone | grind ground | grow grew grown | hang hung | hear heard | hide hid hidden
| hold held | keep kept | kneel knelt | know knew known | lay laid | lead led | lean leant
| leap leapt | learn learnt | leave left | lend lent | lie lay lain | light lit | lose lost
| make made | mean meant | meet met | pay paid | ride rode ridden | ring rang rung
| rise rose risen | run ran | say said | see saw seen | seek sought | sell sold | send sent
| shake shook shaken | shine shone | shoot shot | show shown | shrink shrank shrunk
| sing sang sung | sink sank sunk | sit sat | sleep slept | slide slid | speak spoke spoken
| speed sped | spend spent | spin spun | spit spat | spring sprang sprung | stand stood
| steal stole stolen | stick stuck | sting stung | stink stank stunk | strike struck
| strive strove striven | swear swore sworn | sweep swept | swim swam swum | swing swung
| take took taken | teach taught | tear tore torn | tell told | think thought
| throw threw thrown | understand understood | wake woke woken | wear wore worn
| weave wove woven | weep wept | win won | wind wound | write wrote written
| child children | person people | man men | woman women | foot feet | tooth teeth
| mouse mice | goose geese | wife wives | knife knives | wolf wolves | half halves
| shelf shelves | thief thieves | loaf loaves
"""
"""English words whose inflections no stemmer joins, one group per word (``|`` separates).
Left out: groups whose forms are all stop words (be, have, do) and plurals that read as a
verb the stemmer already joins (leaves, lives)."""


def _groups(table: str) -> dict[str, tuple[str, ...]]:
    forms: dict[str, dict[str, None]] = {}
    for group in table.split("|"):
        words = group.split()
        for word in words:
            forms.setdefault(word, {}).update(dict.fromkeys(w for w in words if w != word))
    return {word: tuple(others) for word, others in forms.items()}


_FORMS = _groups(IRREGULAR)

_COMPOUND_JOINERS = re.compile(r"[-/_]+")
"""Joiners between words that each carry meaning: ``artists/bands``, ``self-care``,
``card_playing``. Dots, colons, ``@`` and ``+`` join codes (versions, times, addresses)."""


def other_forms(word: str) -> tuple[str, ...]:
    """The other inflections of an irregular English word, lowercased ("buy" -> ("bought",),
    "went" -> ("go", "gone")); ``()`` for any other word."""
    return _FORMS.get(word.lower(), ())


def compound_parts(word: str) -> tuple[str, ...]:
    """The words a compound joins with ``-``, ``/`` or ``_`` ("artists/bands" -> ("artists",
    "bands")), in order, without repeats; ``()`` when ``word`` is not such a compound."""
    parts = [p for p in _COMPOUND_JOINERS.split(word) if p]
    if len(parts) < 2:
        return ()
    return tuple(dict.fromkeys(parts))

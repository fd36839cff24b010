"""Detect a user message that refers back to an earlier conversation (Chinese and English).

The detector prefers misses to false alarms: a hit makes the agent search its history, so every
pattern demands a participant in the conversation ("I", "you", "we", 我, 你, 我们 …) or an explicit
past-time marker next to a verb of talking, never a loose keyword. In particular, imperatives such
as "记得带钥匙" / "remember to call mom", "X 之前" meaning "before X", "之前的文件" ("the earlier
file") and "I remember that place" do not hit; nor does a talk with someone else ("I talked to
my boss yesterday", "我昨天告诉他了") or the user's own decision ("I decided to buy a car last
week", "我上个月决定辞职"). Both languages know the same past times: just now, earlier, last
time, yesterday, the days and weeks before (刚才, 之前, 上次, 昨天, 前天, 上周, 几天前 …).

Chinese patterns are tried first, then English ones; the first hit wins. English patterns use
``re.ASCII`` so word boundaries behave like JS ``\\b`` next to CJK text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from philont.domain.tokens import utf16_len
from philont.errors import InvalidInputError

__all__ = ["MIN_MESSAGE_LENGTH", "RecallHit", "detect"]

MIN_MESSAGE_LENGTH = 4
"""Trimmed messages shorter than this (in UTF-16 units, like the original) never hit."""


@dataclass(frozen=True)
class RecallHit:
    """A detected reference to a past conversation: the matched text and which rule matched."""

    snippet: str
    language: Literal["zh", "en"]
    pattern: str


# --- Chinese -------------------------------------------------------------------------------------

# Participants of the conversation; third persons (他, 她) are left out on purpose.
_ZH_SUBJECT = r"(?:我们|咱们|你们|咱俩|我|你|咱)"
# Small words that may sit between a subject and its verb ("我不是跟你说过吗").
_ZH_ADVERB = (
    r"(?:已经|曾经|好像|都|也|就|还|又|明明|不是|是不是|是|从来没有|从来没|从没|没有|没"
    r"|跟你|和你|同你|对你|给你|跟我|和我|对我|给我)"
)
# Verbs of conversation. 说 not followed by 服 (说服, to convince); 提 and 谈 only in forms that
# mean "mention"/"talk about" (so 提交, 提供, 谈恋爱 stay out). 告诉 only with a participant as
# object ("我昨天告诉他了" told someone else), 决定 only as what was decided (决定的, 决定过:
# "我上个月决定辞职" is the user's life), as in English.
_ZH_TOLD = r"告诉过?(?=\s*[你您我咱])"
_ZH_TALK = (
    r"(?:说(?!服)|讲|聊|讨论|商量|谈到|谈过|谈的|谈论|提到|提起|提过|提的|提了|问过|问的|问你"
    rf"|{_ZH_TOLD}|答应|约定|约好|决定(?=[的过]))"
)
# "verb + 过" (has done): the has-talked forms; 问过 only towards the assistant.
_ZH_TALKED = (
    r"(?:(?:说(?!服)|讲|聊|讨论|商量|谈到|谈论|提到|提|答应|约定)过|告诉过(?=\s*[你您我咱])|问过你)"
)
# Past markers that are unambiguous wherever they appear.
_ZH_PAST_FREE = (
    r"(?:刚才|刚刚|上一?次|上回儿?|先前|早些时候|前面|那时候?|那次|那天|前几天|当时"
    # the days and weeks before, as the English side has "yesterday", "last week", "… ago"
    r"|昨天|昨晚|前天|上个?(?:星期|礼拜|月)|上周|[几两三一]天前)"
)
# 之前/以前 also mean "before X" ("下班之前"), so they count only at a clause start or right
# after a participant; the double negative makes the look-behind also accept the string start.
_ZH_PAST_ANCHORED = r"(?<![^\s我们你咱俩，,。.！!？?、；;：:…])(?:之前|以前)"
# A bare 刚 ("just") counts only right after a participant: "我刚说", "你刚问的".
_ZH_JUST = r"(?<=[我们你咱])刚(?![才刚])"
_ZH_PAST = rf"(?:{_ZH_PAST_FREE}|{_ZH_PAST_ANCHORED}|{_ZH_JUST})"
_ZH_CJK = r"[\u4e00-\u9fff]"

_ZH_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "我之前说过", "上次我们讨论过的方案", "刚才说的是什么", "我刚才说搞不定就算了"
    (
        "zh.past_marker_talk",
        re.compile(
            rf"(?:{_ZH_SUBJECT}\s*)?{_ZH_PAST}\s*(?:{_ZH_SUBJECT}\s*)?(?:{_ZH_ADVERB}\s*){{0,3}}"
            rf"{_ZH_TALK}[过的了]?"
        ),
    ),
    # "我说过", "你答应过我", "我不是跟你说过吗"; 听说过 ("heard of") has no subject before 说.
    (
        "zh.participant_talked",
        re.compile(rf"{_ZH_SUBJECT}\s*(?:{_ZH_ADVERB}\s*){{0,3}}{_ZH_TALKED}"),
    ),
    # "你还记得…", "还记得…吗", "记不记得", "记得吗". A bare 记得 is usually "remember to …", and
    # "我还记得小时候" is the user reminiscing, so neither hits.
    (
        "zh.still_remember",
        re.compile(
            r"[你您]\s*还\s*记得"
            r"|(?<!我)(?<!我们)还\s*记得[^。！？!?\n]{0,20}[吗么嘛]"
            r"|记不记得|记得\s*[吗么嘛]"
            rf"|记得\s*[不没](?!{_ZH_CJK})"
        ),
    ),
    # "记得我说的偏好不", "记得上次…"; "记得我们讨论一下" (an instruction) does not hit.
    (
        "zh.remember_what_was_said",
        re.compile(
            rf"记得\s*(?:{_ZH_SUBJECT}\s*(?:{_ZH_PAST_FREE}\s*)?(?:{_ZH_ADVERB}\s*){{0,2}}"
            r"(?:说(?!服)|讲|聊|讨论|商量|提到|提|问|告诉|答应|约定|约好)[的过了]"
            r"|上次|上回|那次|当时)"
        ),
    ),
    # "你忘了吗", "你是不是忘了我说的"; "你忘了带钥匙" does not hit.
    (
        "zh.you_forgot",
        re.compile(r"你\s*(?:是不是|是否)?\s*忘(?:了|记了|记)\s*(?:吗|么|没|我|咱|上次|之前|刚才)"),
    ),
    # "上次你推荐的那本书", "你之前给我推荐的餐厅", "你推荐过的": a recommendation of the
    # assistant's (你/您), in the past; "你推荐一本书吧" asks for one, "我推荐给同事" is the
    # user's own.
    (
        "zh.you_recommended",
        re.compile(
            rf"(?:{_ZH_PAST}\s*[你您]|[你您]\s*{_ZH_PAST})\s*(?:{_ZH_ADVERB}\s*){{0,3}}推荐[过的了]?"
            rf"|[你您]\s*(?:{_ZH_ADVERB}\s*){{0,3}}推荐过"
        ),
    ),
    # "接着上次的话题", "继续之前的"
    (
        "zh.continue_from_before",
        re.compile(rf"(?:接着|继续)\s*(?:聊|说|讲|谈)?\s*(?:{_ZH_PAST_FREE}|之前)"),
    ),
)

# --- English -------------------------------------------------------------------------------------

_EN_FLAGS = re.ASCII | re.IGNORECASE | re.MULTILINE
_EN_WHO = r"(?:we|you|I)"
_EN_APOSTROPHE = "['\u2019]"
# Verbs of talking; "told"/"asked" only with a participant as object, so "I told my boss" is out.
_EN_TALKED = (
    r"(?:talked|discussed|mentioned|said|told\s+(?:you|me|us)|chatted|spoke"
    r"|asked\s+(?:you|me)|suggested|recommended|explained|agreed|decided|promised"
    # "went over"/"covered" only with what was talked about ("we went over budget" is money)
    r"|(?:went\s+over|covered)\s+(?:this|that|it|these|those)\b)"
)
# A time reference that places the talk in the past. "before" must end the clause, otherwise it
# is a preposition ("I said I'd finish before Friday"); "earlier than" is a comparison.
_EN_PAST_WHEN = (
    r"(?:last\s+(?:time|week|month|night|year|session|conversation|chat)"
    r"|yesterday|the\s+other\s+day|(?:\w+\s+){1,2}ago)"
)
"""Past times that place a talk wherever they stand ("last week we…", "we… last week")."""
_EN_PAST_TIME = (
    r"(?:earlier(?!\s+than\b)|previously|recently|before(?=\s*(?:[.,;:!?)\"'\u2019]|$))"
    rf"|{_EN_PAST_WHEN})\b"
)
# Up to five words of object between verb and time ("discussed this plan last week"), never
# crossing a sentence end, nor naming someone else the talk was with or to ("I talked to my
# boss yesterday", "we discussed it with the team last week" are not this conversation).
_EN_THIRD_PARTY = (
    r"(?:to|with)\s+(?:my|his|her|their|the|a|an|some|him|them|someone|somebody|everyone"
    r"|people|\w+" + _EN_APOSTROPHE + r"s)\b"
)
_EN_GAP = rf"(?:(?!{_EN_THIRD_PARTY})[^\s.!?]+\s+){{0,5}}?"
# "we've", "I'd", "we have already", "you had just" …
_EN_AUX = rf"(?:{_EN_APOSTROPHE}(?:ve|d))?(?:\s+(?:have|had|already|just|both))*"
# A decision or promise of the user's alone is their life, not a talk: "I decided to buy a car
# last week" (one of "we" or "you" is a talk: "we agreed on it yesterday").
_EN_NOT_MINE_ALONE = (
    rf"(?!I{_EN_AUX}\s+(?:(?:previously|earlier|recently|once)\s+)?(?:agreed|decided|promised)\b)"
)

_EN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "Do you remember what we discussed", "did you still recall"; "do you remember to…" misses,
    # and so does "can you remember that/this/my …", which asks to store, not to recall.
    (
        "en.do_you_remember",
        re.compile(
            r"\b(?:(?:do|did)\s+you\s+(?:still\s+)?(?:remember|recall)\b"
            r"|(?:can|could)\s+you\s+(?:still\s+)?(?:remember|recall)\b"
            r"(?!\s+(?:that|this|these|it|my|our|the\s+following)\b))"
            r"(?!\s+(?:to|how\s+to)\b)",
            _EN_FLAGS,
        ),
    ),
    # "Remember when you mentioned the bug?" at a clause start, or after "you": "I remember that
    # place", "remember whatever" and "Please remember to call mom" miss. After "what/how we|you|I"
    # a past tense is required (-ed, but not "need"/"feed"), so "remember what you need" misses.
    (
        "en.remember_when",
        re.compile(
            r"(?:^|(?<=[.!?,;:])\s*|\b(?:and|but|so|hey|oh|also|you|u)\s+(?:still\s+)?)"
            r"remember\s+(?:when|(?:that|the)\s+time\s+(?:when|we|you|I)"
            r"|our\s+(?:last|previous|earlier|first|chat|conversation|talk|discussion)"
            rf"|we\s+{_EN_TALKED}"
            rf"|(?:what|how)\s+{_EN_WHO}\s+(?:\w*[^\We]ed|said|told|did|wrote|spoke|thought|meant)"
            r"|you\s+(?:said|told|mentioned|asked|suggested|promised)"
            r"|I\s+(?:said|told|mentioned|asked))\b",
            _EN_FLAGS,
        ),
    ),
    # "we discussed this last week", "as I said earlier", "like I mentioned before",
    # "we previously discussed"
    (
        "en.talked_before",
        re.compile(
            rf"\b{_EN_NOT_MINE_ALONE}{_EN_WHO}{_EN_AUX}\s+"
            rf"(?:(?:previously|earlier|recently|once)\s+{_EN_TALKED}\b"
            rf"|{_EN_TALKED}\b\s*{_EN_GAP}{_EN_PAST_TIME})",
            _EN_FLAGS,
        ),
    ),
    # "we've already discussed this"; "we've talked about it with the team" does not hit.
    (
        "en.we_have_talked",
        re.compile(
            rf"\bwe(?:{_EN_APOSTROPHE}ve|\s+have|\s+had)\s+(?:already\s+)?"
            r"(?:talked\s+about|discussed|gone\s+over|been\s+over|covered)\s+(?:this|that|it)\b"
            r"(?!\s+with\b)",
            _EN_FLAGS,
        ),
    ),
    # "As I said, …", "like you mentioned", "just as I told you": at a clause start, so "I feel
    # like I said too much" misses, and never to someone else ("like I said to my boss").
    (
        "en.as_i_said",
        re.compile(
            r"(?:^|(?<=[.!?,;:(])\s*|\b(?:just|exactly|and|but|so|well|yeah|ok|okay)\s+)"
            rf"(?:as|like)\s+{_EN_WHO}(?:\s+(?:already|just))?\s+"
            r"(?:said|told\s+(?:you|me|us)|mentioned|explained|suggested|recommended|discussed"
            rf"|agreed|promised)\b(?!\s+{_EN_THIRD_PARTY})",
            _EN_FLAGS,
        ),
    ),
    # "Earlier you told me to use pandoc."
    (
        "en.earlier_someone_said",
        re.compile(
            rf"\b(?:earlier|previously|{_EN_PAST_WHEN})\s*,?\s+"
            rf"{_EN_WHO}(?:\s+(?:already|just))?\s+"
            r"(?:said|told\s+(?:you|me|us)|mentioned|asked\s+(?:you|me)|discussed|talked"
            r"|agreed|suggested|recommended|promised)\b",
            _EN_FLAGS,
        ),
    ),
    # "From our last conversation", "in our previous session"
    (
        "en.our_last_conversation",
        re.compile(
            r"\bour\s+(?:last|previous|earlier|prior|other|first)\s+"
            r"(?:chat|conversation|talk|discussion|session|exchange|call)s?\b",
            _EN_FLAGS,
        ),
    ),
    # "What did we decide on pricing?"
    (
        "en.what_did_we_say",
        re.compile(
            r"\bwhat\s+(?:did|have)\s+we\s+"
            r"(?:talk(?:ed)?\s+about|discuss(?:ed)?|decide(?:d)?|agree(?:d)?\s+on|say|said)\b",
            _EN_FLAGS,
        ),
    ),
)


def detect(message: str) -> RecallHit | None:
    """Return the first pattern hit if ``message`` refers to a past conversation, else None.

    The message is trimmed first; anything shorter than :data:`MIN_MESSAGE_LENGTH` UTF-16 units
    returns None. The snippet is the matched text, trimmed. Anything but text is
    ``InvalidInputError`` naming ``message``.
    """
    if not isinstance(message, str):
        raise InvalidInputError(
            f"message: must be text, got {type(message).__name__}", argument="message"
        )
    text = message.strip()
    if utf16_len(text) < MIN_MESSAGE_LENGTH:
        return None
    for name, pattern in _ZH_PATTERNS:
        match = pattern.search(text)
        if match:
            return RecallHit(snippet=match.group(0).strip(), language="zh", pattern=name)
    for name, pattern in _EN_PATTERNS:
        match = pattern.search(text)
        if match:
            return RecallHit(snippet=match.group(0).strip(), language="en", pattern=name)
    return None

"""The recall trigger: spotting a user referring to a past conversation, preferring misses."""

from __future__ import annotations

import pytest

from philont.domain.recall_trigger import RecallHit, detect
from philont.errors import InvalidInputError

CHINESE_HITS = [
    "我刚才说搞不定就算了，你咋又想尝试？",
    "我之前说过这个",
    "上次我们讨论过的方案是啥？",
    "你还记得我喜欢吃啥吗？",
    "记得我说的偏好不？",
    "接着上次的话题继续",
    "刚才说的是什么？",
    "上次讨论过的方案",
    "你还记得我说过的吗",
    "我不是跟你说过吗",
    "你答应过我的事呢",
    "我们聊过这个问题",
    "你是不是忘了我说的",
    "你忘了吗？",
    "我刚说的那个文件呢",
    "还记得上次那家餐厅吗",
    "记不记得那个方案",
    "记得上次那家店吗",
    "继续之前的话题",
    "前面提到的那本书",
    "你 之前 说过 要帮我",
    # the days and weeks before, as in English ("yesterday", "last week", "two days ago")
    "我们昨天讨论的事情",
    "昨天我们聊了什么",
    "上周我们讨论的计划",
    "上礼拜咱们说的那个事",
    "前天我跟你讲的事情",
    "我们三天前说好的",
    "继续昨天的话题",
    "我昨天跟你说的那个bug",
    "我上次告诉你的地址",
    "我们上次决定的方案",
    # a recommendation of the assistant's, in the past
    "上次你推荐的那本书叫什么",
    "你之前推荐的餐厅还开着吗",
    "上次你给我推荐的电影",
    "您推荐过的那家店",
]

CHINESE_MISSES = [
    "记得带钥匙",  # an imperative "remember to"
    "记得带钥匙吗",
    "你记得把门锁上",
    "记得不要迟到",
    "记得我们讨论一下",  # an instruction, not a recollection
    "下班之前我想吃饭",  # "before leaving work", not "earlier"
    "下班之前我说一下",
    "之前的文件发我",  # "the earlier file", no talking
    "帮我把 markdown 转 word",
    "安装一下 pandoc",
    "你好",
    "好的，谢谢",
    "我喜欢吃面条",
    "请你说话别夹英文",
    "我想说一下我的需求",
    "记得",
    "你听说过pandoc吗",  # "heard of"
    "我还记得小时候的事",  # the user reminiscing
    "我刚提交了代码",
    "我说服了他",
    "你忘了带钥匙",
    "我谈过恋爱",
    "他说过明天会下雨",  # a third person, not this conversation
    "我昨天告诉他了",  # told someone else
    "我之前告诉过他",
    "我上个月决定辞职",  # the user's own decision, not a talk
    "我昨天跟老板聊了",
    "上周末我去爬山了",
    "两天前我买了车",
    "记得昨天买的菜放冰箱",
    "你推荐一本书吧",  # asks for a recommendation
    "您推荐一下",
    "上次我推荐给同事的书",  # the user's own recommendation
]

ENGLISH_HITS = [
    "Do you remember what we discussed earlier?",
    "Can you remember what we decided about the flat?",
    "Could you recall when we fixed the bug?",
    "As we said previously, the plan stands.",
    "Remember when you mentioned the bug?",
    "From our last conversation, I think we should go.",
    "Earlier you told me to use pandoc.",
    "as I said earlier",
    "remember when we talked about the Berlin flat",
    "we discussed this last week",
    "like I mentioned before",
    "Like I mentioned before, I am vegan.",
    "we've already discussed this",
    "we\u2019ve already discussed this",
    "We previously discussed the budget",
    "What did we decide on pricing?",
    "Hey, remember what I said about the dog?",
    "I told you two days ago that I'm vegan",
    "do you still recall my address?",
    "In our previous session you fixed it",
    "继续用English: as you said earlier",
    "Last week you said to use pandoc.",
    "Two days ago you told me to rest.",
    "I told you to use pandoc yesterday",
    "we agreed on the price last week",
    # "as I said" and its kin at a clause start
    "as I told you, the meeting moved",
    "Like I said, use pandoc.",
    "As I mentioned, budget is tight",
    "It works, just like you said.",
    "exactly as you recommended",
    "the book you recommended last time",
]

ENGLISH_MISSES = [
    "I remember that place",
    "remember whatever",
    "Please remember to call mom",
    "Remember to call mom",
    "Remember we have a meeting tomorrow",
    "Remember our meeting tomorrow",
    "remember what you need to buy",
    "Did you remember to buy milk?",
    "Do you remember how to make pasta?",
    # requests to store, not to recall (they hit "can you remember" before)
    "Can you remember that my wife is called Anna?",
    "Could you remember my address: 5 Main St",
    "Can you remember this for me?",
    "I said I'd finish before Friday",
    "I told my boss before",
    "We've talked about it with the team",
    "the last session of the conference was great",
    "this is earlier than expected",
    "What is the time?",
    "yes",
    "Show me the weather",
    # a talk with someone else, or the user's own life, with a past time next to it
    "I decided to buy a car last week",
    "We went over budget last month",
    "we covered 10 miles yesterday",
    "I feel like I said too much",  # "like" not at a clause start
    "as they said on the news",
    "Do as I say",
    "that restaurant you suggested",  # no past time: a miss is preferred
]

# Talk verbs with someone else as the addressee, followed by a past time: never this
# conversation, whoever the subject and whatever the verb (they hit before).
THIRD_PARTY_TALKS = [
    f"{who} {verb} {prep} {whom} {when}"
    for who in ("I", "We", "you")
    for verb in ("talked", "spoke", "chatted", "explained it", "discussed it", "agreed")
    for prep in ("to", "with")
    for whom in ("my boss", "the doctor", "him", "someone", "Anna's team")
    for when in ("yesterday", "last week", "two days ago", "earlier.")
] + [
    f"{lead} {who} {verb} {prep} {whom}"
    for lead in ("As", "like", "Just as")
    for who in ("I", "We", "you")
    for verb in ("said", "mentioned", "explained", "suggested", "agreed")
    for prep in ("to", "with")
    for whom in ("my boss", "the doctor", "him", "Anna's team")
]


@pytest.mark.parametrize("message", CHINESE_HITS)
def test_a_chinese_reference_to_a_past_conversation_hits(message: str) -> None:
    hit = detect(message)
    assert hit is not None
    assert hit.language == "zh"
    assert hit.snippet and hit.snippet in message.strip()


@pytest.mark.parametrize("message", CHINESE_MISSES)
def test_ordinary_chinese_messages_do_not_hit(message: str) -> None:
    assert detect(message) is None


@pytest.mark.parametrize("message", ENGLISH_HITS)
def test_an_english_reference_to_a_past_conversation_hits(message: str) -> None:
    hit = detect(message)
    assert hit is not None
    assert hit.language == "en"
    assert hit.snippet and hit.snippet in message.strip()


@pytest.mark.parametrize("message", ENGLISH_MISSES)
def test_ordinary_english_messages_do_not_hit(message: str) -> None:
    assert detect(message) is None


@pytest.mark.parametrize("message", THIRD_PARTY_TALKS)
def test_a_talk_with_someone_else_is_not_this_conversation(message: str) -> None:
    assert detect(message) is None


@pytest.mark.parametrize("who", ["We", "you"])
@pytest.mark.parametrize("when", ["yesterday", "last week", "two days ago", "earlier."])
def test_the_same_talk_without_a_third_party_still_hits(who: str, when: str) -> None:
    for verb in ("talked about it", "discussed it", "agreed on it", "mentioned it to me"):
        assert detect(f"{who} {verb} {when}") is not None, f"{who} {verb} {when}"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("我之前说过这个", RecallHit("我之前说过", "zh", "zh.past_marker_talk")),
        ("你还记得我喜欢吃啥吗？", RecallHit("你还记得", "zh", "zh.still_remember")),
        (
            "Earlier you told me to use pandoc.",
            RecallHit("Earlier you told me", "en", "en.earlier_someone_said"),
        ),
        (
            "From our last conversation, …",
            RecallHit("our last conversation", "en", "en.our_last_conversation"),
        ),
    ],
)
def test_the_hit_names_the_matched_text_the_language_and_the_rule(
    message: str, expected: RecallHit
) -> None:
    assert detect(message) == expected


def test_chinese_patterns_are_tried_before_english_ones() -> None:
    hit = detect("As we said previously, 我之前说过")
    assert hit is not None and hit.language == "zh"


@pytest.mark.parametrize("message", ["", "   ", "记得", "记得吗", "  说过  ", "we", "😀😀"])
def test_messages_shorter_than_four_characters_after_trimming_never_hit(message: str) -> None:
    assert detect(message) is None


def test_a_three_character_hit_is_too_short_but_four_characters_are_enough() -> None:
    assert detect("我说过") is None
    assert detect("我说过。") == RecallHit("我说过", "zh", "zh.participant_talked")


def test_matching_is_case_insensitive_in_english() -> None:
    assert detect("DO YOU REMEMBER what we said?") is not None


def test_english_words_glued_to_chinese_text_still_have_word_boundaries() -> None:
    assert detect("嗯do you remember那个") is not None


@pytest.mark.parametrize("value", [None, 5, b"remember when we met", ["remember when we met"]])
def test_anything_but_text_is_refused_by_name(value: object) -> None:
    with pytest.raises(InvalidInputError, match=r"^message: must be text"):
        detect(value)  # type: ignore[arg-type]

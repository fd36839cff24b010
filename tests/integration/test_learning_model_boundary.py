"""Whatever a model client or a judge does — raise its own exception, return something that
is not a Completion, a blank text, a token count that is not a whole number — the loop sees a
typed ModelError (or a usable answer) and writes nothing for a failed call."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select

from philont.db.models import Fact, JudgeVerdict, LearningCase, Note, Skill
from philont.errors import InvalidInputError, ModelError, ModelTimeoutError, ModelUnavailableError
from philont.learning import (
    Consolidator,
    JudgeResult,
    Learner,
    LearningConfig,
    ModelJudge,
    Run,
    ToolCall,
)
from philont.llm import Completion
from philont.llm.base import MAX_TOKENS_PER_CALL
from philont.memory import Memory
from philont.schemas.learning import Verdict
from tests.conftest import FakeClock
from tests.integration.learning_helpers import Conversation, unit_factory

FOREIGN = [ValueError("bad"), KeyError("k"), RuntimeError("r"), OSError(5, "io"), TypeError("t")]
FOREIGN_TYPED = [
    (TimeoutError("slow"), ModelTimeoutError),
    (ConnectionError("down"), ModelUnavailableError),
]


@pytest.fixture
def mem(engine: Engine, clock: FakeClock) -> Any:
    with unit_factory(engine, clock)() as unit:
        talk = Conversation(unit, clock, "s1")
        for i in range(3):
            talk.user(f"I moved to Berlin (turn {i})")
            talk.assistant("Noted.")
        yield unit


class Client:
    """A model client of a host's own that misbehaves in the given way."""

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome

    def complete(self, prompt: str) -> Any:
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def usable(outcome: object) -> bool:
    if not isinstance(outcome, Completion):
        return False
    text, tokens = outcome.text, outcome.tokens_used
    good_tokens = tokens is None or (type(tokens) is int and 0 <= tokens <= MAX_TOKENS_PER_CALL)
    return isinstance(text, str) and bool(text.strip()) and good_tokens


texts = st.one_of(st.none(), st.integers(), st.just(""), st.just(" \n"), st.just("[]"))
tokens = st.one_of(
    st.none(),
    st.integers(-3, 3),
    # a count no 64-bit column holds (summed, stored): it failed the write after the answer
    st.integers(MAX_TOKENS_PER_CALL - 2, 2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.just("12"),
)
outcomes = st.one_of(
    st.sampled_from(FOREIGN),
    st.builds(Completion, texts, tokens),
    st.one_of(st.none(), st.text(max_size=5), st.integers(), st.just({"text": "[]"})),
)

STEPS: dict[str, Callable[[Learner], object]] = {
    "reflect": lambda learner: learner.reflect(session_id="s1"),
    "extract": lambda learner: learner.extract(session_id="s1"),
    "summarize": lambda learner: learner.summarize("s1"),
    "learn": lambda learner: learner.learn(learner.window(session_id="s1")),
}


def rows(mem: Memory) -> list[int]:
    tables = (Fact, Note, Skill, JudgeVerdict, LearningCase)
    return [mem.session.scalar(select(func.count()).select_from(t)) or 0 for t in tables]


@pytest.mark.parametrize("step", sorted(STEPS))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(outcome=outcomes)
@example(outcome=Completion("[]", 2**63))  # stored as a total, it failed the write
def test_a_misbehaving_client_is_a_model_error_and_writes_nothing(
    mem: Memory, step: str, outcome: object
) -> None:
    learner = Learner(mem, Client(outcome), config=LearningConfig(summary_min_messages=2))
    before = rows(mem)
    if usable(outcome):
        STEPS[step](learner)
        return
    with pytest.raises(ModelError):
        STEPS[step](learner)
    assert rows(mem) == before


@pytest.mark.parametrize(("raised", "typed"), FOREIGN_TYPED)
def test_a_client_time_out_or_lost_connection_keeps_its_meaning(
    mem: Memory, raised: Exception, typed: type[ModelError]
) -> None:
    with pytest.raises(typed) as caught:
        Learner(mem, Client(raised)).reflect(session_id="s1")
    assert caught.value.__cause__ is raised


RUN = Run(
    "unzip the file", (ToolCall(1, "s1", "use_skill", {}, "ok", True, FakeClock().now),), "done"
)


class BadJudge:
    name = "checker"

    def __init__(self, result: object) -> None:
        self.result = result

    def judge(self, run: Run) -> Any:
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result


@pytest.mark.parametrize(
    "result",
    [
        ValueError("checker crashed"),
        None,
        "verified",
        JudgeResult("maybe", "?"),  # type: ignore[arg-type]
        JudgeResult(Verdict.VERIFIED, None),  # type: ignore[arg-type]
        JudgeResult(Verdict.FAILED, "no", tokens_used=-1),
        JudgeResult(Verdict.FAILED, "no", tokens_used=2**63),
    ],
)
def test_a_misbehaving_judge_is_a_model_error_and_writes_nothing(
    mem: Memory, result: object
) -> None:
    learner = Learner(mem, Client(Completion("[]")), judge=BadJudge(result))
    before = rows(mem)
    with pytest.raises(ModelError):
        learner.judge_run(RUN)
    assert rows(mem) == before


def test_a_judge_answering_a_verdict_by_its_value_is_read(mem: Memory) -> None:
    judge = BadJudge(JudgeResult("failed", "it broke"))  # type: ignore[arg-type]
    record = Learner(mem, Client(Completion("[]")), judge=judge).judge_run(RUN)
    assert record.verdict == Verdict.FAILED


def test_the_model_judge_reads_a_garbage_answer_as_unsure(mem: Memory) -> None:
    judge = ModelJudge(Client(Completion("no idea", None)))
    record = Learner(mem, Client(Completion("[]")), judge=judge).judge_run(RUN)
    assert (record.verdict, record.tokens_used) == (Verdict.UNSURE, 0)


def test_every_model_and_judge_call_of_the_loop_goes_through_the_checks() -> None:
    # The class of defect: a call site asking the client directly gets its raw exceptions and
    # unchecked answers. Every call goes through philont.llm.base.ask / verify.ask_judge.
    import philont.learning

    direct = []
    for path in sorted(Path(philont.learning.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("complete", "judge")
                ):
                    direct.append(f"{path.name}:{function.name}")
    assert direct == ["verify.py:ask_judge"]


GOOD_MODEL = Client(Completion("[]"))


@pytest.mark.parametrize(
    ("parts", "name"),
    [
        ({"model": None}, "model"),
        ({"model": "openai:gpt-4o-mini"}, "model"),
        ({"config": {"timezone": "UTC"}}, "config"),
        ({"judge": "model"}, "judge"),
        ({"judge": GOOD_MODEL}, "judge"),  # a model is not a judge: ModelJudge(model) is
        ({"schedule": {"backlog": True}}, "schedule"),
    ],
)
def test_the_parts_of_a_learner_and_a_consolidator_are_refused_by_name(
    mem: Memory, parts: dict[str, Any], name: str
) -> None:
    # They used to be taken as given: a Consolidator with model=None claimed batch after batch
    # and failed each; a config given as a dict was an AttributeError on first use.
    arguments = {"model": GOOD_MODEL, **parts}
    makers = [lambda: Consolidator(lambda **kw: None, **arguments)]  # type: ignore[arg-type]
    if name != "schedule":
        makers.append(lambda: Learner(mem, **arguments))
    for make in makers:
        with pytest.raises(InvalidInputError) as caught:
            make()
        assert caught.value.message.startswith(f"{name}: must be")
        assert caught.value.details["argument"] == name


def test_learn_and_judge_run_refuse_what_is_not_a_window_or_a_run(mem: Memory) -> None:
    learner = Learner(mem, GOOD_MODEL, judge=BadJudge(JudgeResult(Verdict.UNSURE)))
    for call, name in (
        (lambda: learner.learn(None), "window"),
        (lambda: learner.judge_run("x"), "run"),
    ):  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError) as caught:
            call()
        # checked on entry by the services' declared-type check (the Learner is a service)
        assert caught.value.message.startswith(f"{name}: must be")
        assert caught.value.details["argument"] == name


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"model": None}, "model"),
        ({"model": "openai:gpt-4o-mini"}, "model"),
        ({"name": None}, "name"),
        ({"name": " "}, "name"),
        ({"name": "a\x00b"}, "name"),
        ({"max_chars": 0}, "max_chars"),
        ({"max_chars": True}, "max_chars"),
        ({"max_prompt_chars": "5"}, "max_prompt_chars"),
        ({"max_prompt_chars": 2**63}, "max_prompt_chars"),
    ],
)
def test_a_model_judge_refuses_what_it_cannot_judge_with_by_name(
    arguments: dict[str, Any], name: str
) -> None:
    # Taken as given, each failed the judging of every batch as a model error (an
    # AttributeError, a TypeError), asked again without end.
    with pytest.raises(InvalidInputError) as caught:
        ModelJudge(**{"model": GOOD_MODEL, **arguments})
    assert caught.value.message.startswith(f"{name}: must be ")
    assert caught.value.details["argument"] == name

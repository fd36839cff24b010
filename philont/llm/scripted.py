"""A scripted model client for tests, the demo and benchmarks: no network, same protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from philont import filewrite
from philont.db import fork
from philont.errors import (
    FilePathError,
    InvalidInputError,
    ModelEmptyAnswerError,
    ModelUnavailableError,
)
from philont.llm.base import Completion, estimate_tokens, require_text
from philont.schemas.inputs import loads_unique

__all__ = ["Answer", "ScriptedModel", "task_of"]

Answer = str | Completion | BaseException
"""One scripted answer: text, a Completion (text and tokens), or an exception to raise."""

TASK_MARKER = "TASK: "
"""Every prompt of the loop opens with ``TASK: <name>`` (see ``philont.learning.prompts``)."""


def task_of(prompt: str) -> str | None:
    """The task a loop prompt asks for (``extract``, ``reflect``, ``summarize``, ``judge``,
    ``condense``), from its first line; None for any other prompt."""
    first = prompt.split("\n", 1)[0]
    if not first.startswith(TASK_MARKER):
        return None
    return first[len(TASK_MARKER) :].strip() or None


class ScriptedModel:
    """Answers from a script instead of a model.

    ``script`` is either a sequence of answers given out in order (raising
    :class:`~philont.errors.ModelUnavailableError` once exhausted) or a function of the prompt.
    An answer that is an exception is raised instead of returned. Tokens are estimated from the
    prompt and answer unless the answer is a :class:`Completion`. Every prompt is kept in
    :attr:`prompts`. Thread-safe.
    """

    def __init__(self, script: Iterable[Answer] | Callable[[str], Answer]) -> None:
        self._respond: Callable[[str], Answer] | None = None
        self._queue: list[Answer] = []
        if callable(script):
            self._respond = script
        else:
            self._queue = list(script)
        self._lock = fork.Lock()
        self.prompts: list[str] = []

    @classmethod
    def by_task(cls, answers: Mapping[str, Answer | Callable[[str], Answer]]) -> ScriptedModel:
        """A client answering each loop task (see :func:`task_of`) from ``answers``: a fixed
        answer or a function of the prompt. A task without an entry gets an empty answer."""

        def respond(prompt: str) -> Answer:
            task = task_of(prompt)
            entry = answers.get(task or "")
            if entry is None:
                return ModelEmptyAnswerError(
                    f"the script has no answer for the task {task!r} (it answers "
                    f"{', '.join(sorted(answers)) or 'nothing'})"
                )
            return entry(prompt) if callable(entry) else entry

        return cls(respond)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """A :meth:`by_task` client from a JSON object file mapping task names to answers.
        A file that cannot be read is :class:`~philont.errors.FilePathError`; one that is not
        UTF-8 JSON (a byte order mark allowed), gives a task twice or an answer that is not
        text, :class:`~philont.errors.InvalidInputError`."""
        filewrite.regular(Path(path))  # a pipe is never waited on, /dev/zero never read
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:  # the path named cannot be used: as any file path
            reason = f"cannot read the model script ({exc.strerror or exc})"
            raise FilePathError(str(path), reason) from exc
        try:  # UTF-8 (a BOM allowed), no key given twice: which answer is meant is not known
            data = loads_unique(raw.decode("utf-8-sig"))
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, RepeatedKeyError too
            raise InvalidInputError(f"cannot read the model script {str(path)!r}: {exc}") from exc
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise InvalidInputError(
                f"the model script {str(path)!r} must be a JSON object of task name -> answer text"
            )
        return cls.by_task(data)

    def complete(self, prompt: str) -> Completion:
        with self._lock:
            self.prompts.append(prompt)
            if self._respond is not None:
                answer = self._respond(prompt)
            elif self._queue:
                answer = self._queue.pop(0)
            else:
                raise ModelUnavailableError("the scripted model has no answers left")
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, Completion):
            require_text(answer.text, who="scripted model")
            return answer
        text = require_text(answer, who="scripted model")
        return Completion(text, estimate_tokens(prompt) + estimate_tokens(text))

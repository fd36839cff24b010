"""The model-client protocol of the self-learning loop: ``complete(prompt) -> Completion``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from philont.errors import ModelEmptyAnswerError

__all__ = ["Completion", "ModelClient", "estimate_tokens", "require_text"]


@dataclass(frozen=True)
class Completion:
    """A model's answer: its text and the tokens the call cost (prompt + answer; 0 if the
    server does not say)."""

    text: str
    tokens_used: int = 0


@runtime_checkable
class ModelClient(Protocol):
    """What the loop needs from a language model: one prompt in, one answer out.

    Implementations raise :class:`~philont.errors.ModelError` subclasses, never their SDK's
    exceptions: :class:`~philont.errors.ModelTimeoutError`,
    :class:`~philont.errors.ModelHTTPError` (with ``status``),
    :class:`~philont.errors.ModelUnavailableError` and
    :class:`~philont.errors.ModelEmptyAnswerError`.
    """

    def complete(self, prompt: str) -> Completion: ...


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token) for clients that report none."""
    return (len(text) + 3) // 4


def require_text(text: object, *, who: str) -> str:
    """The answer text, or :class:`ModelEmptyAnswerError` when there is none (None, not a
    string, or only whitespace)."""
    if not isinstance(text, str) or not text.strip():
        raise ModelEmptyAnswerError(f"{who} returned an empty answer", client=who)
    return text

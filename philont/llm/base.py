"""The model-client protocol of the self-learning loop: ``complete(prompt) -> Completion``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar, runtime_checkable

from philont.domain.graphemes import clip
from philont.errors import (
    ModelEmptyAnswerError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    ModelUnavailableError,
    PhilontError,
)

__all__ = [
    "MAX_TOKENS_PER_CALL",
    "Completion",
    "ModelClient",
    "ask",
    "call_foreign",
    "call_sdk",
    "checked_tokens",
    "estimate_tokens",
    "reported_tokens",
    "require_text",
]


T = TypeVar("T")


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


MAX_TOKENS_PER_CALL: Final = 2**40
"""The most tokens one answer may report (about 10^12, far beyond any model's window). A
count is stored and summed (a batch's total, a report's) in 64-bit columns: larger ones broke
the write after the answer was read (``tokens_used: ... is outside the integers a database
holds``, an ``invalid_input`` that failed the batch and had it asked again and again)."""


def checked_tokens(value: object, *, who: str) -> int:
    """A reported token count: a whole number from 0 to :data:`MAX_TOKENS_PER_CALL` (None,
    "not said", is 0); anything else is :class:`ModelError` (it would corrupt every total it
    is added to)."""
    if value is None:
        return 0
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= MAX_TOKENS_PER_CALL
    ):
        raise ModelError(
            f"{who} reported tokens_used={value!r:.40}; it must be a whole number from 0 to "
            f"{MAX_TOKENS_PER_CALL:,}",
            client=who,
        )
    return value


def reported_tokens(*parts: object) -> int:
    """What a server reported a call cost (the sum of ``parts``, each a count it may not
    give), for an adapter of ours: a part that is no whole number from 0 to
    :data:`MAX_TOKENS_PER_CALL` is not said (0), and so is a sum past it. A server's odd
    accounting (a -1 for unknown) is no reason to lose its answer: taken as it was, it was a
    :class:`ModelError` on every call, and the batch was asked again without end."""
    counts = [p for p in parts if type(p) is int and 0 <= p <= MAX_TOKENS_PER_CALL]
    total = sum(counts)
    return total if total <= MAX_TOKENS_PER_CALL else 0


def _foreign_failure(exc: Exception, who: str) -> ModelError:
    """A client's own exception as the typed error the loop handles."""
    message = f"{who} failed: {type(exc).__name__}: {exc}"[:1_000]
    if isinstance(exc, TimeoutError):
        return ModelTimeoutError(message, client=who)
    if isinstance(exc, ConnectionError):
        return ModelUnavailableError(message, client=who)
    return ModelError(message, client=who)


def call_foreign(who: str, call: Callable[[], T]) -> T:
    """``call()``, a client's or a judge's own code: a typed philont error passes as it is,
    any other exception (a time-out or connection failure included) becomes a
    :class:`~philont.errors.ModelError` naming ``who``."""
    try:
        return call()
    except PhilontError:
        raise
    except Exception as exc:
        raise _foreign_failure(exc, who) from exc


def call_sdk(
    sdk: Any, base_error: type[Exception], vendor: str, model: str, call: Callable[[], T]
) -> T:
    """``call()``, one request through an official SDK (``anthropic``, ``openai``: they name
    their exceptions alike), with the SDK's failures as typed philont errors: a time-out, an
    HTTP status, an unreachable server, any other ``base_error`` of the SDK."""
    try:
        return call()
    except sdk.APITimeoutError as exc:  # before APIConnectionError: it is a subclass
        raise ModelTimeoutError(f"the {vendor} model {model!r} timed out") from exc
    except sdk.APIStatusError as exc:
        raise ModelHTTPError(
            f"the {vendor} server answered HTTP {exc.status_code}: {_short(exc.message)}",
            status=exc.status_code,
        ) from exc
    except sdk.APIConnectionError as exc:
        raise ModelUnavailableError(f"cannot reach the {vendor} server: {exc}") from exc
    except base_error as exc:
        raise ModelError(f"the {vendor} call failed: {_short(str(exc))}") from exc


def _short(text: str, limit: int = 300) -> str:
    return clip(text, limit, mark_within=False)


def ask(model: ModelClient, prompt: str) -> Completion:
    """``model.complete(prompt)`` as the loop makes every call: whatever the client does, the
    result is a :class:`Completion` with text and a token count of at least 0, or a
    :class:`~philont.errors.ModelError` (a client's own exception, a time-out or connection
    failure included, is translated; another typed philont error passes as it is)."""
    who = f"the model client {type(model).__name__}"
    completion: object = call_foreign(who, lambda: model.complete(prompt))
    if not isinstance(completion, Completion):
        raise ModelError(
            f"{who} returned {type(completion).__name__}, not a Completion(text, tokens_used)",
            client=who,
        )
    text = require_text(completion.text, who=who)
    return Completion(text, checked_tokens(completion.tokens_used, who=who))

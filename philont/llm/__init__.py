"""Pluggable language-model clients for the self-learning loop (OpenAI, Anthropic, scripted)."""

from __future__ import annotations

from philont.errors import InvalidInputError
from philont.llm.base import Completion, ModelClient, estimate_tokens
from philont.llm.scripted import ScriptedModel, task_of

__all__ = [
    "Completion",
    "ModelClient",
    "ScriptedModel",
    "check_spec",
    "estimate_tokens",
    "model_from_spec",
    "task_of",
]


def model_from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
) -> ModelClient:
    """A client from a short spec: ``openai:<model>``, ``anthropic:<model>`` or
    ``scripted:<file.json>`` (see :meth:`ScriptedModel.from_file`). API keys come from the
    SDKs' usual environment variables. Raises :class:`~philont.errors.InvalidInputError` for an
    unknown provider and :class:`~philont.errors.ModelUnavailableError` when its SDK is
    missing."""
    _check_spec_arguments(spec, timeout, max_retries)
    provider, rest = check_spec(spec)
    if provider == "openai":
        from philont.llm.openai_client import OpenAIModel

        return OpenAIModel(rest, base_url=base_url, timeout=timeout, max_retries=max_retries)
    if provider == "anthropic":
        from philont.llm.anthropic_client import AnthropicModel

        return AnthropicModel(rest, base_url=base_url, timeout=timeout, max_retries=max_retries)
    return ScriptedModel.from_file(rest)


PROVIDERS = ("openai", "anthropic", "scripted")


def check_spec(spec: str) -> tuple[str, str]:
    """A model spec's provider and the rest (the model, or the script's file), or
    :class:`~philont.errors.InvalidInputError`; nothing is loaded or connected."""
    provider, _, rest = spec.partition(":")
    if not rest.strip():
        raise InvalidInputError.of(
            "spec",
            f"{spec!r} is no model spec: use openai:<model>, anthropic:<model> or "
            "scripted:<file.json>",
        )
    if provider not in PROVIDERS:
        raise InvalidInputError.of(
            "spec", f"unknown model provider {provider!r}: use openai:, anthropic: or scripted:"
        )
    return provider, rest


def _check_spec_arguments(spec: object, timeout: object, max_retries: object) -> None:
    """The arguments of :func:`model_from_spec`, each refused by name (not an AttributeError
    or the SDK's own error later)."""
    if not isinstance(spec, str):
        raise InvalidInputError.of(
            "spec", f"must be text such as 'openai:gpt-4o-mini', got {spec!r}"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise InvalidInputError.of(
            "timeout", f"must be a positive number of seconds, got {timeout!r}"
        )
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidInputError.of(
            "max_retries", f"must be a whole number >= 0, got {max_retries!r}"
        )

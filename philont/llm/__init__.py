"""Pluggable language-model clients for the self-learning loop (OpenAI, Anthropic, scripted)."""

from __future__ import annotations

from philont.errors import InvalidInputError
from philont.llm.base import Completion, ModelClient, estimate_tokens
from philont.llm.scripted import ScriptedModel, task_of

__all__ = [
    "Completion",
    "ModelClient",
    "ScriptedModel",
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
    provider, _, rest = spec.partition(":")
    if not rest.strip():
        raise InvalidInputError(
            f"model spec {spec!r}: use openai:<model>, anthropic:<model> or scripted:<file.json>"
        )
    if provider == "openai":
        from philont.llm.openai_client import OpenAIModel

        return OpenAIModel(rest, base_url=base_url, timeout=timeout, max_retries=max_retries)
    if provider == "anthropic":
        from philont.llm.anthropic_client import AnthropicModel

        return AnthropicModel(rest, base_url=base_url, timeout=timeout, max_retries=max_retries)
    if provider == "scripted":
        return ScriptedModel.from_file(rest)
    raise InvalidInputError(
        f"unknown model provider {provider!r}: use openai:, anthropic: or scripted:"
    )

"""Model client over the official ``openai`` SDK (any OpenAI-compatible server via ``base_url``).

Needs the extra: ``pip install 'philont[openai]'``.
"""

from __future__ import annotations

import os
from typing import Any

from philont.errors import ModelUnavailableError
from philont.llm.base import Completion, call_sdk, reported_tokens, require_text

__all__ = ["OpenAIModel"]

_NO_KEY = "unused"
"""Placeholder key for OpenAI-compatible local servers that need none (the SDK insists)."""


class OpenAIModel:
    """``complete(prompt)`` as one chat-completion request with a single user message.

    ``base_url`` points at any OpenAI-compatible server (default: the SDK's, or
    ``$OPENAI_BASE_URL``); ``api_key`` defaults to ``$OPENAI_API_KEY``. ``timeout`` is in
    seconds; ``max_retries`` is the SDK's own retry count (the consolidator retries failed
    batches itself, with backoff). SDK failures come out as
    :class:`~philont.errors.ModelError` subclasses.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ModelUnavailableError(
                "the OpenAI client needs the extra: pip install 'philont[openai]'"
            ) from exc
        self._sdk = openai
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        key = api_key or os.environ.get("OPENAI_API_KEY") or (_NO_KEY if base_url else None)
        try:
            self._client = openai.OpenAI(
                api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
            )
        except openai.OpenAIError as exc:  # e.g. no API key anywhere
            raise ModelUnavailableError(f"cannot set up the OpenAI client: {exc}") from exc

    def complete(self, prompt: str) -> Completion:
        options: dict[str, Any] = {}
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            options["temperature"] = self.temperature
        response = call_sdk(
            self._sdk,
            self._sdk.OpenAIError,
            "OpenAI",
            self.model,
            lambda: self._client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": prompt}], **options
            ),
        )
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = require_text(getattr(message, "content", None), who=f"OpenAI model {self.model!r}")
        usage = getattr(response, "usage", None)
        return Completion(text, reported_tokens(getattr(usage, "total_tokens", None)))

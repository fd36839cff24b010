"""Model client over the official ``anthropic`` SDK (Messages API).

Needs the extra: ``pip install 'philont[anthropic]'``.
"""

from __future__ import annotations

from philont.errors import ModelUnavailableError
from philont.llm.base import Completion, call_sdk, reported_tokens, require_text

__all__ = ["AnthropicModel"]


class AnthropicModel:
    """``complete(prompt)`` as one Messages request with a single user turn.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``; ``base_url`` to the SDK's (or
    ``$ANTHROPIC_BASE_URL``). ``timeout`` is in seconds; ``max_retries`` is the SDK's own retry
    count. The answer is the concatenated text blocks; tokens are input plus output tokens.
    SDK failures come out as :class:`~philont.errors.ModelError` subclasses.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_tokens: int = 4096,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise ModelUnavailableError(
                "the Anthropic client needs the extra: pip install 'philont[anthropic]'"
            ) from exc
        self._sdk = anthropic
        self.model = model
        self.max_tokens = max_tokens
        try:
            self._client = anthropic.Anthropic(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
            )
        except anthropic.AnthropicError as exc:
            raise ModelUnavailableError(f"cannot set up the Anthropic client: {exc}") from exc

    def complete(self, prompt: str) -> Completion:
        response = call_sdk(
            self._sdk,
            self._sdk.AnthropicError,
            "Anthropic",
            self.model,
            lambda: self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                messages=[{"role": "user", "content": prompt}],
            ),
        )
        blocks = getattr(response, "content", None) or []
        text = "".join(
            block.text
            for block in blocks
            if getattr(block, "type", None) == "text" and isinstance(block.text, str)
        )
        text = require_text(text, who=f"Anthropic model {self.model!r}")
        usage = getattr(response, "usage", None)
        tokens = reported_tokens(
            getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)
        )
        return Completion(text, tokens)

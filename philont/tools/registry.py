"""The tool registry: name → argument model, handler and whether it writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from philont.tools.args import ToolArgs

MAX_RESULT_CHARS = 20_000
"""The size policy of what a model reads back: a result text is cut (at a line) to this many
characters, and says how much was left out."""


def capped(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """``text`` cut at a line (or at ``limit``) to at most ``limit`` characters plus a
    closing line that says how much was left out."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    head = text[: cut if cut > limit // 2 else limit]
    return f"{head}\n… {len(text) - len(head):,} more characters not shown (ask for less)"


if TYPE_CHECKING:
    from philont.memory import Memory

A = TypeVar("A", bound=ToolArgs)


@dataclass(frozen=True)
class ToolContext:
    """What a handler knows besides its arguments."""

    session_id: str
    now: datetime


@dataclass(frozen=True)
class ToolOutput:
    """A handler's success: the text the model sees and structured data for the host."""

    text: str
    data: Any = None


Handler = Callable[[A, "Memory", ToolContext], ToolOutput]


@dataclass(frozen=True)
class Tool(Generic[A]):
    name: str
    args_model: type[A]
    handler: Handler[A]
    writes: bool

    @property
    def description(self) -> str:
        return " ".join((self.args_model.__doc__ or "").split())


REGISTRY: dict[str, Tool[Any]] = {}


def tool(name: str, args_model: type[A], *, writes: bool) -> Callable[[Handler[A]], Handler[A]]:
    """Register ``handler`` as the model tool ``name``."""

    def register(handler: Handler[A]) -> Handler[A]:
        REGISTRY[name] = Tool(name=name, args_model=args_model, handler=handler, writes=writes)
        return handler

    return register

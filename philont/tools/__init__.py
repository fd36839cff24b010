"""The eleven model tools: argument models, handlers, the ``call`` dispatcher, JSON Schemas."""

from philont.tools import handlers as _handlers  # noqa: F401  # registers every tool
from philont.tools.dispatch import ArgumentCheck, ToolResult, call, check_arguments
from philont.tools.registry import REGISTRY
from philont.tools.schema import anthropic_tools, openai_tools

TOOL_NAMES: tuple[str, ...] = tuple(REGISTRY)

__all__ = [
    "REGISTRY",
    "TOOL_NAMES",
    "ArgumentCheck",
    "ToolResult",
    "anthropic_tools",
    "call",
    "check_arguments",
    "openai_tools",
]

"""JSON Schemas of the tools for OpenAI function calling and Anthropic tool use, generated from
the argument models."""

from __future__ import annotations

from typing import Any

from philont.tools.registry import REGISTRY, Tool


def parameters_schema(tool: Tool[Any]) -> dict[str, Any]:
    """The argument model's JSON Schema, self-contained (no $ref) and without titles."""
    schema = tool.args_model.model_json_schema()
    defs = schema.pop("$defs", {})
    schema.pop("description", None)
    return _clean(schema, defs)  # type: ignore[no-any-return]


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _clean(merged, defs)
        node = _hoist_description(node)
        return {k: _clean(v, defs) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_clean(v, defs) for v in node]
    return node


def _hoist_description(node: dict[str, Any]) -> dict[str, Any]:
    """An optional argument (``anyOf: [T, null]``) carries its input type's description on
    the ``T`` branch; the model reads it on the property itself."""
    branches = node.get("anyOf")
    if "description" in node or not isinstance(branches, list):
        return node
    described = [b for b in branches if isinstance(b, dict) and "description" in b]
    if len(described) != 1:
        return node
    description = described[0]["description"]
    branches = [{k: v for k, v in b.items() if k != "description"} for b in branches]
    return {**node, "anyOf": branches, "description": description}


def openai_tools() -> list[dict[str, Any]]:
    """Tool definitions for OpenAI chat completions (``tools=[...]``)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": parameters_schema(t),
            },
        }
        for t in REGISTRY.values()
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """Tool definitions for Anthropic messages (``tools=[...]``)."""
    return [
        {"name": t.name, "description": t.description, "input_schema": parameters_schema(t)}
        for t in REGISTRY.values()
    ]

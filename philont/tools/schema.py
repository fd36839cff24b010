"""JSON Schemas of the tools for OpenAI function calling and Anthropic tool use, generated from
the argument models."""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any

from pydantic import TypeAdapter

from philont.tools.registry import REGISTRY, Tool


def parameters_schema(tool: Tool[Any]) -> dict[str, Any]:
    """The argument model's JSON Schema, self-contained (no $ref) and without titles; every
    optional argument admits ``null`` (the dispatcher reads it as "not given")."""
    schema = tool.args_model.model_json_schema()
    defs = schema.pop("$defs", {})
    schema.pop("description", None)
    cleaned: dict[str, Any] = _clean(schema, defs)
    required = set(cleaned.get("required", ()))
    cleaned["properties"] = {
        name: _described(tool, name, prop if name in required else _nullable(prop))
        for name, prop in cleaned["properties"].items()
    }
    return cleaned


def _described(tool: Tool[Any], name: str, prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` with its input type's description (how a time is written, ...) added to the
    argument's own when the schema lost it: pydantic lets a required argument's description
    replace its type's (an optional one keeps it on its branch)."""
    own = _type_description(tool.name, name)
    if not own or own in json.dumps(prop, ensure_ascii=False):
        return prop
    given = prop.get("description")
    return {**prop, "description": f"{given} {own}" if given else own}


@functools.cache
def _type_description(tool: str, name: str) -> str | None:
    """The description the input type of ``tool``'s argument ``name`` gives itself, if any."""
    field = REGISTRY[tool].args_model.model_fields[name]
    annotation: Any = field.annotation
    if field.metadata:
        annotation = Annotated[(annotation, *field.metadata)]
    schema = TypeAdapter(annotation).json_schema()
    found = schema.get("description")
    return found if isinstance(found, str) else None


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional argument's schema admitting ``null`` too (its description and default
    stay on the property)."""
    branches = prop.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        return prop
    kept: dict[str, Any] = {k: prop[k] for k in ("default", "description") if k in prop}
    value = {k: v for k, v in prop.items() if k not in kept}
    return {"anyOf": [value, {"type": "null"}], **kept}


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _clean(merged, defs)
        node = _hoist_description(node)
        out = {k: _clean(v, defs) for k, v in node.items() if k not in ("title", "properties")}
        if "properties" in node:  # argument names are kept, whatever they are called
            out["properties"] = {k: _clean(v, defs) for k, v in node["properties"].items()}
        return out
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


# --- OpenAI strict mode ----------------------------------------------------------------------
# Structured outputs accept a subset of JSON Schema: every property required (an optional one is
# nullable instead), additionalProperties false on every object, every value typed, and no
# length, range, pattern, format or default keywords. The dispatcher reads null for an optional
# argument as "not given", and the argument models still enforce every constraint.

STRICT_DROPPED = frozenset(
    {
        "default",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "title",
    }
)
_SCALARS: list[dict[str, Any]] = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]


def strict_parameters_schema(tool: Tool[Any]) -> dict[str, Any]:
    """:func:`parameters_schema` in the subset OpenAI's strict mode accepts."""
    schema = parameters_schema(tool)
    required = set(schema.get("required", ()))
    properties = {
        name: _strict_value(prop, nullable=name not in required)
        for name, prop in schema["properties"].items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _strict_value(node: dict[str, Any], *, nullable: bool) -> dict[str, Any]:
    """One property: typed branches only (nested anyOf flattened), null added when the
    argument is optional, unsupported keywords dropped, the description kept."""
    description = " ".join(_descriptions(node))
    branches: list[dict[str, Any]] = []
    for branch in map(_strict_branch, _flatten(node)):
        # two ranges of one type (a time's integers) are one branch without their bounds
        if branch is not None and branch not in branches:
            branches.append(branch)
    if nullable and {"type": "null"} not in branches:
        branches.append({"type": "null"})
    out: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    if description:
        out = {**out, "description": description}
    return out


def _descriptions(node: dict[str, Any]) -> list[str]:
    """The property's description, then those of its branches (a time's format, ...)."""
    found = [node["description"]] if "description" in node else []
    for branch in node.get("anyOf", ()):
        found += [d for d in _descriptions(branch) if d not in found]
    return found


def _flatten(node: dict[str, Any]) -> list[dict[str, Any]]:
    if "anyOf" in node:
        return [leaf for b in node["anyOf"] for leaf in _flatten(b)]
    if "type" not in node and "enum" not in node:
        # An untyped value (a fact's value): any scalar, or a list of scalars. Strict mode
        # cannot describe a free-form object; it arrives as its JSON text.
        return [*_SCALARS, {"type": "array", "items": {"anyOf": _SCALARS}}]
    return [node]


def _strict_branch(node: dict[str, Any]) -> dict[str, Any] | None:
    kept = {k: v for k, v in node.items() if k not in STRICT_DROPPED and k != "description"}
    if kept.get("type") == "object" and "properties" not in kept:
        return None  # a free-form object (see _flatten)
    if kept.get("type") == "array" and "items" not in kept:
        kept["items"] = {"anyOf": _SCALARS}
    return kept


def openai_tools(*, strict: bool = False) -> list[dict[str, Any]]:
    """Tool definitions for OpenAI chat completions (``tools=[...]``); ``strict=True`` gives
    schemas OpenAI's strict mode (structured outputs) accepts, with ``"strict": true``."""
    tools: list[dict[str, Any]] = []
    for t in REGISTRY.values():
        function: dict[str, Any] = {"name": t.name, "description": t.description}
        if strict:
            function["parameters"] = strict_parameters_schema(t)
            function["strict"] = True
        else:
            function["parameters"] = parameters_schema(t)
        tools.append({"type": "function", "function": function})
    return tools


def anthropic_tools() -> list[dict[str, Any]]:
    """Tool definitions for Anthropic messages (``tools=[...]``)."""
    return [
        {"name": t.name, "description": t.description, "input_schema": parameters_schema(t)}
        for t in REGISTRY.values()
    ]

"""The eleven model tools: each handler turns validated arguments into one service call and the
text the model reads."""

from __future__ import annotations

import re
from typing import Any

from philont.domain.kinds import FactKind
from philont.domain.timeparse import parse_time
from philont.errors import FactNotFoundError, InvalidInputError
from philont.memory import Memory
from philont.tools import args as a
from philont.tools.registry import ToolContext, ToolOutput, tool

# A whole value that is an HTTP auth header line, or a scheme followed by one credential-like
# token. The original refused any text starting with "token " or "basic " (spec Q-S9: "Basic
# plan costs $10" was refused); we require the rest to look like a single credential.
AUTH_HEADER = re.compile(
    r"^\s*(authorization|proxy-authorization|x-api-key|x-auth-token|api-key|authentication)\s*:",
    re.IGNORECASE,
)
AUTH_SCHEME = re.compile(
    r"^\s*(bearer|token|basic|digest|api[\s_-]?key)\s+[A-Za-z0-9._~+/=:-]{8,}\s*$", re.IGNORECASE
)


def _json(value: Any) -> str:
    from philont.db.types import dumps_compact

    return dumps_compact(value)


def _dump(record: Any) -> Any:
    return record.model_dump(mode="json")


@tool("store_fact", a.StoreFactArgs, writes=True)
def store_fact(args: a.StoreFactArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    if isinstance(args.value, str):
        if AUTH_HEADER.match(args.value):
            raise InvalidInputError(
                "value looks like a whole HTTP header line; store only the bare value, and never "
                "store secrets you were not asked to keep"
            )
        if AUTH_SCHEME.match(args.value):
            raise InvalidInputError(
                "value carries an auth-scheme prefix followed by a credential "
                f"({args.value[:12]!r}…); store the bare token only if the user asked you to"
            )
    if args.value is None:
        raise InvalidInputError("value must not be null")
    record = mem.facts.store(
        args.namespace,
        args.key,
        args.value,
        confidence=args.confidence,
        fact_kind=FactKind(args.fact_kind),
        occurred_at=parse_time(args.occurred_at, field="occurred_at", tz=args.timezone),
        valid_from=parse_time(args.valid_from, field="valid_from", tz=args.timezone),
        valid_until=parse_time(args.valid_until, field="valid_until", tz=args.timezone),
    )
    note = " (replaced the previous value, kept as history)" if record.supersedes else ""
    return ToolOutput(
        f"Stored {record.namespace}.{record.key} {record.time_tag()}{note}", _dump(record)
    )


@tool("get_fact", a.GetFactArgs, writes=False)
def get_fact(args: a.GetFactArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    record = mem.facts.get(args.namespace, args.key)
    if record is None:
        raise FactNotFoundError(args.namespace, args.key)
    expired = (
        " (expired)"
        if record.valid_until is not None
        and record.valid_until < ctx.now
        and record.fact_kind == FactKind.STATE
        else ""
    )
    return ToolOutput(f"{_json(record.value)} {record.time_tag()}{expired}", _dump(record))


@tool("list_facts", a.ListFactsArgs, writes=False)
def list_facts(args: a.ListFactsArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    namespace = args.namespace
    prefix = namespace.endswith(".*")
    records = mem.facts.list(namespace.removesuffix(".*"), prefix=prefix)
    if not records:
        return ToolOutput(f"No facts in {namespace}", [])
    lines = [f"{r.namespace}.{r.key} = {_json(r.value)}  {r.time_tag()}" for r in records]
    return ToolOutput("\n".join(lines), [_dump(r) for r in records])


@tool("use_skill", a.UseSkillArgs, writes=True)
def use_skill(args: a.UseSkillArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
    # Fetching counts as a use (ranking) but never as a success: the reflector credits the
    # skill later from what the following actions achieved (the original promoted on fetch).
    use = mem.skills.use(args.name)
    s = use.skill
    parts = [
        f"# Skill: {s.name} {use.caveat}",
        s.description,
        "",
        "## Action Template",
        s.action_template,
    ]
    if s.recipe is not None and s.recipe.steps:
        parts += ["", "## Steps", *(f"{i}. {step}" for i, step in enumerate(s.recipe.steps, 1))]
        if s.recipe.verification:
            parts += ["", "## Verify", s.recipe.verification]
        if s.recipe.tool_policy:
            parts += ["", "## Allowed tools", ", ".join(s.recipe.tool_policy)]
    parts += ["", "(Using a skill is not proof it works: check the result before relying on it.)"]
    return ToolOutput("\n".join(parts), _dump(s))

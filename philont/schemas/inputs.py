"""One set of input types: what services, tool arguments and imports accept, each rule once.

Every type here is an ``Annotated`` pydantic type. Tool argument models use them as field types;
services validate their arguments with :func:`check` (``check(Namespace, ns, "namespace")``).
So a length, a limit or a pattern can only disagree with itself, and a refusal reads the same
from every path: ``"<argument>: <what is wrong>"`` (an :class:`~philont.errors.InvalidInputError`
from services, an ``invalid_arguments`` tool result from the dispatcher). The calendar's and
the schedules' types are in :mod:`philont.schemas.planning`, built on the rules here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainValidator,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import SchemaValidator

from philont.db.stored_values import too_deep
from philont.domain import json_values
from philont.domain.kinds import AccessTarget, FactKind, Role
from philont.domain.names import MAX_ID_CHARS, did_you_mean, meant
from philont.domain.shown import place, short
from philont.domain.timepolicy import supported_utc
from philont.errors import InvalidInputError, InvalidTimeRangeError, ReservedNamespaceError

__all__ = [
    "MAX_ID_CHARS",
    "MAX_LIMIT",
    "MAX_SETTING",
    "MAX_SETTING_DURATION",
    "AccessTargetName",
    "Attempts",
    "AwareTime",
    "BusyTimeoutMs",
    "Confidence",
    "Content",
    "Count",
    "FactKey",
    "FactKeyLookup",
    "FactKindName",
    "FactValue",
    "FailureThreshold",
    "HeldFactKey",
    "HeldNamespace",
    "HeldNamespaceSelector",
    "Importance",
    "Limit",
    "ModelNamespace",
    "Namespace",
    "NamespaceLookup",
    "NamespaceSelector",
    "Offset",
    "Order",
    "Query",
    "RecordId",
    "RepeatedKeyError",
    "RoleName",
    "SessionId",
    "SkillName",
    "SkillNameLookup",
    "Threshold",
    "check",
    "describe",
    "first_repeated",
    "loads_unique",
    "optional",
    "repeated_key",
    "unstorable",
    "window",
]

T = TypeVar("T")

# --- limits ----------------------------------------------------------------------------------

MAX_LIMIT: Final = 10_000
"""Every ``limit`` (services, tools, CLI) is a whole number in 1..MAX_LIMIT; what a tool sends
back to the model is capped separately by size (``philont.tools.dispatch``)."""

MAX_NAMESPACE_CHARS: Final = 100
SESSION_SUMMARY_PREFIX: Final = "session-summary-"
"""Id prefix of the per-session summary notes (``session-summary-<session id>``)."""
MAX_RECORD_ID_CHARS: Final = len(SESSION_SUMMARY_PREFIX) + MAX_ID_CHARS
"""A record's id (a note's, ...): room for the summary note of any session id (216)."""
MAX_TEXT_CHARS: Final = 16 * 1024 * 1024
"""Free text stored verbatim (notes, messages): at most this many characters (a tool call's
whole arguments are capped lower: :data:`MAX_ARGUMENT_BYTES`)."""
MAX_ARGUMENT_BYTES: Final = 1_000_000
"""The size policy of one tool call's arguments: at most this many bytes of UTF-8 JSON, whatever
their types (``philont.tools.dispatch`` enforces it; a tool's advertised ``maxLength`` never
exceeds it)."""
MAX_QUERY_CHARS: Final = MAX_ARGUMENT_BYTES
"""A search query, from a service or a tool: at most this many characters (only the first 8,000
are read). The same number is the ``maxLength`` a tool advertises for it."""

NAMESPACE_PATTERN: Final = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
"""Dot-separated lowercase segments, e.g. ``user.preferences.food``."""
ALL_NAMESPACES: Final = "*"
PREFIX_SUFFIX: Final = ".*"
"""A namespace filter: ``'*'`` every namespace, ``'user.*'`` user and its sub-namespaces."""
RESERVED_NAMESPACE_ROOT: Final = "self"
"""``self`` and every ``self.*`` namespace are written only by the self-reflector (the original
protected only the exact ``self``; ``self.x`` let a tool call forge self-description)."""
RUNTIME_NAMESPACE_ROOT: Final = "system"
"""``system`` holds the runtime's own state (the consolidator's cursor
``system.last_consolidated_ts``): a host writes it, the model's ``store_fact`` does not (a
value stored there moved the cursor: learning skipped or repeated messages)."""
RESERVED_ROOTS: Final = {
    RESERVED_NAMESPACE_ROOT: "the self-reflector",
    RUNTIME_NAMESPACE_ROOT: "the runtime's own state (the consolidator's cursor)",
}


def _writable_schema(*reserved: str) -> str:
    return rf"^(?!(?:{'|'.join(reserved)})(?:\.|$))(?:{NAMESPACE_PATTERN.pattern})$"


WRITABLE_NAMESPACE_SCHEMA: Final = _writable_schema(RESERVED_NAMESPACE_ROOT)
"""The advertised rule of a namespace to write: the namespace rule, and not ``self`` or below."""
MODEL_NAMESPACE_SCHEMA: Final = _writable_schema(*RESERVED_ROOTS)
"""The same for the model's tool: not ``self``, not ``system``, nor below them."""
KEY_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")
SKILL_NAME_PATTERN: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")
SPACE_CLASS: Final = "\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
r"""Python's whitespace (``str.isspace``: what ``str.strip`` removes, so what "blank" means
here), spelled out for an advertised pattern's character class, as the characters themselves
(JSON escapes them): every regular expression reader reads them alike, where ``\uXXXX`` is
ECMA-262's and Python's but not RE2's (Go). ``\s`` means another set to a
JSON Schema reader (ECMA-262: U+FEFF, but not U+001C..U+001F or U+0085), so a pattern written
with it admitted what the validator refused ("\x1c" as a title) and refused what it accepted."""
NON_BLANK_SCHEMA: Final = f"[^{SPACE_CLASS}]"
"""The advertised form of "not blank": JSON Schema patterns search, and this finds one
character that is not whitespace (:data:`SPACE_CLASS`)."""


def anchored(pattern: re.Pattern[str]) -> str:
    """``pattern`` as a JSON Schema ``pattern`` that must match the whole value."""
    return f"^{pattern.pattern}$"


def advertised(pattern: str) -> dict[str, Any]:
    """``Field`` arguments that advertise ``pattern`` in the JSON Schema only: the validator
    checks the same rule itself, with the message its callers read."""
    return {"json_schema_extra": {"pattern": pattern}}


# --- JSON text from outside ------------------------------------------------------------------


class RepeatedKeyError(ValueError):
    """JSON text with a key given twice in one object: which value was meant cannot be known
    (Python keeps the last, other readers the first), so it is refused, not guessed."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"the key {key[:80]!r} appears twice in one JSON object; which value is meant "
            "cannot be known (give each key once)"
        )


def first_repeated(pairs: list[tuple[str, Any]]) -> str | None:
    """The first key given twice among a JSON object's ``pairs``, or None."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise RepeatedKeyError(first_repeated(pairs) or "")
    return value


def loads_unique(text: str) -> Any:
    """``json.loads(text)``, refusing a key given twice in one object
    (:class:`RepeatedKeyError`; any other problem raises as ``json.loads`` does)."""
    return json.loads(text, object_pairs_hook=_unique_pairs)


def repeated_key(text: str) -> str | None:
    """Why JSON text is ambiguous (a key given twice in one object), or None (also for text
    that is not JSON: that is for its reader to say)."""
    try:
        loads_unique(text)
    except RepeatedKeyError as exc:
        return str(exc)
    except (ValueError, RecursionError):
        return None
    return None


# --- rules (each raises ValueError with the message a caller reads) ---------------------------


def unstorable(value: str) -> str | None:
    """Why the database cannot store ``value``, or None: it takes valid Unicode only (no lone
    surrogates, which arrive from invalid UTF-8 decoded with ``surrogateescape``)."""
    if value.isascii():
        return None
    bad = json_values.bad_text(value)
    return None if bad is None else f"not valid Unicode text ({bad})"


def _storable(value: str) -> str:
    """Text SQLite can store (:func:`unstorable`)."""
    problem = unstorable(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return _storable(value)


def _namespace_shape(value: str) -> str:
    """The one namespace rule, for writes and reads alike (a read of a namespace no write
    could make is refused with the message the write gets)."""
    if NAMESPACE_PATTERN.fullmatch(value) is None:
        raise ValueError(
            f"{value!r} is not dot-separated lowercase segments of a-z, 0-9, '_' or '-' "
            "(e.g. 'user.preferences')"
        )
    return value


def _reserved(*roots: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        root = _namespace_shape(value).split(".", 1)[0]
        if root in roots:
            raise ReservedNamespaceError(value, RESERVED_ROOTS[root])
        return value

    return check


_namespace = _reserved(RESERVED_NAMESPACE_ROOT)
"""A namespace to write: the rule, and not ``self`` or below (reads may name it)."""
_model_namespace = _reserved(*RESERVED_ROOTS)
"""A namespace the model may write: not ``system`` or below either."""


def held_name(value: str) -> str:
    """A fact's namespace or key as a stored row may hold it: non-blank, storable text. Legacy
    databases (the original checked no namespace, and keys only for spaces and colons) may
    hold names today's write rules refuse; an import keeps them as they are, and a lookup may
    name them (:data:`HeldNamespace`)."""
    if not value.strip():
        raise ValueError("must not be blank")
    return _storable(value)


def _or_held(
    rule: Callable[[str], str], *, before: Callable[[str], None] | None = None
) -> Callable[[str], str]:
    """``rule``, except that a name it refuses which a stored row may hold (:func:`held_name`)
    passes on to the service: it reads the address a row holds exactly, and refuses one no row
    holds with ``rule``'s message (:func:`philont.services.fact_base.held_address`). ``before``
    refuses what no row may hold either, first."""

    def check(value: str) -> str:
        if before is not None:
            before(value)
        try:
            return rule(value)
        except ValueError as refused:
            try:
                return held_name(value)
            except ValueError:
                raise refused from None

    return check


def _selector_length(value: str) -> None:
    """A filter's namespace (``value`` without ``.*``) is at most as long as a write's (a
    stored row's too), refused in the write's words."""
    if len(value.removesuffix(PREFIX_SUFFIX)) > MAX_NAMESPACE_CHARS:
        raise ValueError(f"String should have at most {MAX_NAMESPACE_CHARS} characters")


def _selector(value: str) -> str:
    """'*' (every namespace), 'user' (exact) or 'user.*' (user and its children), the
    namespace following the write rule (``self`` is readable)."""
    if value == ALL_NAMESPACES:
        return value
    root = value.removesuffix(PREFIX_SUFFIX)
    if not root:
        raise ValueError("pattern '.*' has no root; use '*' for all")
    _selector_length(value)
    _namespace_shape(root)
    return value


def _key(value: str) -> str:
    if KEY_PATTERN.fullmatch(value) is None:
        raise ValueError(
            f"{value!r} must be a short slug: 1-64 letters, digits, '_', '.' or '-', starting "
            "with a letter or digit, without spaces or colons (e.g. 'home_city')"
        )
    return value


def _skill_name(value: str) -> str:
    if SKILL_NAME_PATTERN.fullmatch(value) is None:
        raise ValueError(
            f"{value!r} is not a kebab-case slug of 1..80 characters (a-z, 0-9 and '-', not "
            "starting with '-')"
        )
    return value


def _id_text(limit: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value != value.strip() or not value:
            raise ValueError(f"must be 1-{limit} characters without surrounding whitespace")
        return _storable(value)

    return check


def _json_value(value: Any) -> Any:
    if value is None:
        raise ValueError("must not be null (forget the fact instead)")
    from philont.db.types import dumps_compact  # SQLAlchemy's: not for the CLI's start

    # The round trip both validates and gives the value exactly as a later read returns it.
    try:
        text = dumps_compact(value)
    except InvalidInputError as exc:
        raise ValueError(exc.message) from exc
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"is {len(text):,} characters of JSON; at most {MAX_TEXT_CHARS:,}")
    parsed = json.loads(text)
    if (problem := too_deep(parsed, text)) is not None:
        raise ValueError(problem)
    return parsed


def _aware(value: datetime) -> datetime:
    """An aware datetime normalised to UTC at storage precision (milliseconds), inside the
    supported times (:mod:`philont.domain.timepolicy`); naive ones are refused, not guessed."""
    utc = supported_utc(value)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def _number(value: Any) -> Any:
    """Before a float type: true/false is not a number here, and NaN/infinity are refused
    with their own message (not as "greater than or equal to 0"); -0.0 is 0.0, as a REAL
    column keeps it (:data:`philont.db.types.Real`)."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


# --- the types -------------------------------------------------------------------------------


def _valid_unicode(value: object) -> object:
    """Before the text type: a lone surrogate is refused with our message (pydantic's own
    says only that the data is not a unicode string)."""
    return _storable(value) if isinstance(value, str) else value


UNICODE = BeforeValidator(_valid_unicode)
"""Last in a text type's metadata, so that its length constraints stay on the string itself."""

Namespace = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_CHARS,
        description="Dot-separated lowercase namespace: user, user.preferences, "
        "project.<name>, decisions, context. 'self' is reserved.",
        **advertised(WRITABLE_NAMESPACE_SCHEMA),
    ),
    AfterValidator(_namespace),
    UNICODE,
]
ModelNamespace = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_CHARS,
        description="Dot-separated lowercase namespace: user, user.preferences, "
        "project.<name>, decisions, context. 'self' and 'system' are reserved.",
        **advertised(MODEL_NAMESPACE_SCHEMA),
    ),
    AfterValidator(_model_namespace),
    UNICODE,
]
"""A namespace the model's ``store_fact`` writes (:data:`RUNTIME_NAMESPACE_ROOT`)."""
NamespaceLookup = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_CHARS,
        description="The fact's namespace.",
        **advertised(anchored(NAMESPACE_PATTERN)),
    ),
    AfterValidator(_namespace_shape),
    UNICODE,
]
"""A namespace to read: the write rule (``self`` is readable)."""
NamespaceSelector = Annotated[
    StrictStr,
    Field(
        min_length=1,
        description="Exact namespace, prefix form 'user.*' (user and its sub-namespaces), or "
        "'*' for all.",
        # the length is the namespace's own, checked by _selector in the write's words
        json_schema_extra={
            "maxLength": MAX_NAMESPACE_CHARS + len(PREFIX_SUFFIX),
            "pattern": rf"^(?:\*|(?=.{{1,{MAX_NAMESPACE_CHARS}}}(?:\.\*)?$)"
            rf"(?:{NAMESPACE_PATTERN.pattern})(?:\.\*)?)$",
        },
    ),
    AfterValidator(_selector),
    UNICODE,
]
"""A namespace filter: ``'*'``, a namespace or ``'<namespace>.*'``; the namespace follows the
write rule (``self`` is readable)."""
FactKey = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=64,
        description="Short slug naming the fact (home_city, diet, deadline); no spaces or colons.",
        **advertised(anchored(KEY_PATTERN)),
    ),
    AfterValidator(_key),
    UNICODE,
]
FactKeyLookup = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=64,
        description="The fact's key.",
        **advertised(anchored(KEY_PATTERN)),
    ),
    AfterValidator(_key),
    UNICODE,
]
"""A key to read: the write rule."""
HeldNamespace = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_NAMESPACE_CHARS,
        description="The fact's namespace, as list_facts shows it.",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(_or_held(_namespace_shape)),
    UNICODE,
]
"""The namespace a lookup of one fact names (``get_fact``, ``philont facts get``/``history``):
the write rule's (:data:`NamespaceLookup`), or any a stored row may hold (a legacy database's,
``User Prefs``): what a list shows is read by name; the service refuses such a name that no
row holds with the write rule's message."""
HeldFactKey = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=64,
        description="The fact's key, as list_facts shows it.",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(_or_held(_key)),
    UNICODE,
]
"""The key a lookup of one fact names: as :data:`HeldNamespace`, for :data:`FactKeyLookup`."""
HeldNamespaceSelector = Annotated[
    StrictStr,
    Field(
        min_length=1,
        description="Exact namespace as list_facts shows it, prefix form 'user.*' (user and its "
        "sub-namespaces), or '*' for all.",
        # the length is the namespace's own, checked in the write's words (a held one's too)
        json_schema_extra={
            "maxLength": MAX_NAMESPACE_CHARS + len(PREFIX_SUFFIX),
            "pattern": NON_BLANK_SCHEMA,
        },
    ),
    AfterValidator(_or_held(_selector, before=_selector_length)),
    UNICODE,
]
"""The namespace filter of a list (``list_facts``, ``philont facts list``): a
:data:`NamespaceSelector`, or one whose namespace a stored row may hold (a legacy database's,
``User Prefs`` or ``User Prefs.*``), as :data:`HeldNamespace`: the service lists what a row
holds and refuses a filter no row matches with the write rule's message
(:func:`philont.services.fact_base.namespace_filter`)."""
FactKindName = Annotated[
    FactKind,
    Field(description="state: true until changed; event: happened at occurred_at."),
]
FactValue = Annotated[
    Any,
    AfterValidator(_json_value),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "array"},
                {"type": "object"},
            ],
            "description": "The value: text, number, boolean, list or object.",
        }
    ),
]
Confidence = Annotated[
    StrictFloat,
    Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1."),
    BeforeValidator(_number),
]
Importance = Annotated[
    StrictFloat,
    Field(ge=0.0, le=1.0, description="How much it matters, 0 to 1."),
    BeforeValidator(_number),
]
Threshold = Annotated[
    StrictFloat,
    Field(
        ge=0.0,
        le=1.0,
        description="A decay score (0..1): facts scoring below it are candidates.",
    ),
    BeforeValidator(_number),
]
Limit = Annotated[
    StrictInt,
    Field(ge=1, le=MAX_LIMIT, description=f"Most results to return (1..{MAX_LIMIT})."),
]
Offset = Annotated[StrictInt, Field(ge=0, le=2**63 - 1, description="Results to skip.")]
"""Up to the largest integer a database holds, as every service argument: a schema with no
maximum admitted offsets the call refused (``list_facts``)."""
MAX_BUSY_TIMEOUT_MS: Final = 2**31 - 1
"""The longest busy timeout SQLite takes (its ``sqlite3_busy_timeout`` is a C ``int``)."""
BusyTimeoutMs = Annotated[
    StrictInt,
    Field(
        ge=0,
        le=MAX_BUSY_TIMEOUT_MS,
        description="How long an SQLite connection waits for another's lock, in milliseconds "
        "(a negative one switched the wait off).",
    ),
]
MAX_ATTEMPTS: Final = 100
"""The most attempts ``Store.run`` makes of a unit of work."""
Attempts = Annotated[
    StrictInt,
    Field(ge=1, le=MAX_ATTEMPTS, description="How many times a unit of work may run."),
]
Count = Annotated[StrictInt, Field(ge=0, le=2**63 - 1, description="A whole number, 0 or more.")]
MAX_SETTING: Final = 2**31 - 1
"""The largest count a setting of the learning loop takes (a batch's size, a window's, a
prompt's characters, attempts): ``n + 1`` rows are asked for to see whether more wait, which
no 64-bit ``LIMIT`` held for the largest 64-bit count (an ``OverflowError`` at every claim)."""
MAX_SETTING_DURATION: Final = timedelta(days=366)
"""The longest duration a setting of the learning loop takes (a wait, a lease, a backoff):
a year, as the command line's options (a longer one overflowed the clock's arithmetic)."""


def _query(value: object) -> str:
    """Any text is a query (the plan builder makes it safe), lone surrogates included: it is
    searched, never stored."""
    if not isinstance(value, str):
        raise ValueError(f"must be text, got {type(value).__name__}")
    if len(value) > MAX_QUERY_CHARS:
        raise ValueError(f"is {len(value):,} characters long; at most {MAX_QUERY_CHARS:,}")
    return value


Query = Annotated[
    str,
    PlainValidator(_query),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": MAX_QUERY_CHARS,
            "description": "What to look for, in any language (its first 8,000 characters are "
            "read).",
        }
    ),
]
SessionId = Annotated[
    StrictStr,
    Field(min_length=1, max_length=MAX_ID_CHARS, description="A conversation session id."),
    AfterValidator(_id_text(MAX_ID_CHARS)),
    UNICODE,
]
Content = Annotated[
    StrictStr,
    Field(
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="Text stored verbatim.",
        **advertised(NON_BLANK_SCHEMA),
    ),
    AfterValidator(non_blank),
    UNICODE,
]
"""Free text stored as given (a note, a message): non-blank, valid Unicode."""
RecordId = Annotated[
    StrictStr,
    Field(min_length=1, max_length=MAX_RECORD_ID_CHARS, description="A record's id."),
    AfterValidator(_id_text(MAX_RECORD_ID_CHARS)),
    UNICODE,
]
RoleName = Annotated[Role, Field(description="Who wrote the message.")]
AccessTargetName = Annotated[AccessTarget, Field(description="What was read: fact, note, skill.")]
FailureThreshold = Annotated[
    StrictInt,
    Field(ge=1, le=1_000, description="Failures in a row that pause a schedule."),
]
SkillName = Annotated[
    StrictStr,
    Field(min_length=1, max_length=80, description="A skill's kebab-case name."),
    AfterValidator(_skill_name),
    UNICODE,
]
SkillNameLookup = Annotated[
    StrictStr,
    Field(min_length=1, max_length=MAX_ID_CHARS, description="Exact skill name."),
    UNICODE,
]
AwareTime = Annotated[datetime, Field(strict=True), AfterValidator(_aware)]
"""A timezone-aware datetime, normalised to UTC at millisecond precision."""

Order = Literal["asc", "desc"]
"""Oldest first (``asc``) or newest first (``desc``)."""


# --- checking --------------------------------------------------------------------------------

_VALIDATORS: dict[int, tuple[Any, Callable[[object], Any]]] = {}
"""``id(kind)`` -> (``kind``, its validation). The kind is kept so that its id is never reused."""


def _validator(kind: Any) -> Callable[[object], Any]:
    """``kind``'s validation: pydantic-core's own, called straight (TypeAdapter's wrapper
    around it costs more than validating an id; every service call checks a few)."""
    found = _VALIDATORS.get(id(kind))
    if found is None:
        adapter = TypeAdapter(kind)
        core = adapter.validator
        validate = core.validate_python if isinstance(core, SchemaValidator) else None
        found = _VALIDATORS[id(kind)] = (kind, validate or adapter.validate_python)
    return found[1]


def _shows(msg: str, shown: str) -> bool:
    """Whether ``msg`` already shows the refused value ``shown`` as a whole (``0`` is not
    shown by "greater than or equal to 100")."""
    return re.search(rf"(?<![\w.]){re.escape(shown)}(?![\w.])", msg) is not None


def describe(
    exc: ValidationError,
    *,
    prefix: str = "",
    most: int = 5,
    unused: Collection[str] = (),
) -> str:
    """``"where: what"`` for each error (the first ``most``), joined by ``"; "``; ``where`` is
    the argument's name (``prefix``) and the path inside it. ``unused``: the names a closed
    model takes that were not given; an unknown name close to one of them asks whether that
    one was meant."""
    parts = []
    for err in exc.errors()[:most]:
        loc = [p for p in err.get("loc", ()) if p not in ("function-after", "constrained")]
        where = place(prefix, loc) or "arguments"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden" and len(loc) == 1 and isinstance(loc[0], str):
            guess = meant(loc[0], unused)
            msg += did_you_mean([] if guess is None else [guess])
        shown = short(err.get("input"))  # what was refused, cut short
        if err.get("type") != "missing" and "got " not in msg and not _shows(msg, shown):
            msg = f"{msg} (got {shown})"
        # A rule that raised its own typed error already named the argument (or a place in
        # it, as json_values does): once is enough.
        named = msg.startswith(where) and msg[len(where) : len(where) + 1] in (":", ".", "[")
        parts.append(msg if named else f"{where}: {msg}")
    return "; ".join(parts)


def check(kind: Any, value: object, name: str) -> Any:
    """``value`` validated as ``kind`` (one of this module's types, or any pydantic type), or
    :class:`InvalidInputError` naming the argument ``name``. A typed error a rule raises itself
    (e.g. :class:`ReservedNamespaceError`) passes through unchanged."""
    try:
        return _validator(kind)(value)
    except ValidationError as exc:
        raise InvalidInputError(describe(exc, prefix=name), argument=name) from None


def optional(kind: Any, value: object, name: str) -> Any:
    """:func:`check`, with ``None`` passing through."""
    return None if value is None else check(kind, value, name)


def window(
    since: object,
    until: object,
    *,
    what: str = "time window",
    names: tuple[str, str] = ("since", "until"),
) -> tuple[datetime | None, datetime | None]:
    """Inclusive time bounds (either may be None), aware and at storage precision; an end
    before the start is :class:`InvalidTimeRangeError` naming both ``names``."""
    start = optional(AwareTime, since, names[0])
    end = optional(AwareTime, until, names[1])
    if start is not None and end is not None and end < start:
        raise InvalidTimeRangeError(start, end, names=names, what=what)
    return start, end


def now_from(clock: Callable[[], datetime]) -> datetime:
    """The clock's time as a stored value (aware UTC, milliseconds); a clock that returns a
    naive or bad value is refused by name."""
    value = clock()
    if type(value) is datetime and value.tzinfo is UTC and value.microsecond % 1000 == 0:
        return value  # the usual case (philont.clock.utc_now), without a validation round
    return check(AwareTime, value, "clock()")  # type: ignore[no-any-return]

"""The server's stdio transport: one JSON-RPC message per line, checked before the SDK sees it.

The SDK's own stdio transport answers a line it cannot read with a log notification and no
response (a client waiting for that id waits forever), reads bytes that are not UTF-8 as
U+FFFD (so they would be stored), refuses JSON that Python reads (a lone surrogate escape) as
unreadable, and answers every request it cannot validate with one generic "Invalid request
parameters", an unknown method included, with a traceback-sized warning on stderr. Here every
line gets its JSON-RPC answer with a code of ours in ``error.data.code``:

* not JSON, or not UTF-8 text: ``-32700`` parse error (``invalid_json``), with the request's id
  when it can still be read, else ``null``;
* JSON that is no JSON-RPC 2.0 message (a number, no method, a batch where the session takes
  none): ``-32600`` (``invalid_request``);
* an unknown method: ``-32601`` (``unknown_method``);
* a known method with parameters of the wrong shape: ``-32602`` (``invalid_arguments`` for
  ``tools/call``, ``invalid_params`` otherwise), naming what is wrong; so is a tool call whose
  arguments the SDK would not pass on as sent (a key given twice, a number that is not finite:
  ``NaN``, ``1e400``, an integer too long to read, which the SDK turns into ``null``, "not
  given"), and a request nested
  deeper than ``philont.mcp.depth.MAX_MESSAGE_DEPTH`` levels (the SDK's validation gives up at
  255, Python's JSON near 1,000), with its id.

* a line longer than :data:`philont.mcp.lines.MAX_LINE_BYTES`, never held whole: as a request
  with bad parameters (:func:`oversized`), with the id and method its head shows;
* a request other than ``initialize`` or ``ping`` before the session is initialized:
  ``-32600`` (``not_initialized``), saying to send ``initialize`` first (:class:`_Handshake`).

A notification the SDK cannot read (or one sent before ``initialize``) gets no answer (JSON-RPC
answers no notification) and is dropped quietly, as is any response the client sends (the
server sends no requests), and so is the answer to a request the client cancelled while it
was in flight (:class:`_InFlight`). Text that Python reads but the SDK's parser refuses (a lone
surrogate) goes on to the tools, which refuse it by name as any other bad argument.

A batch (a JSON array of messages) is taken under protocol version 2025-03-26 (MCP: an
implementation MUST support receiving them; 2024-11-05 had none, 2025-06-18 removed them),
once ``initialize`` agreed on it: each message is checked and run as if sent alone, and the
answers to its requests are written as one array on one line once all are done
(:func:`check_batch`, :class:`_Batch`). Elsewhere, and before ``initialize``, a batch is one
``-32600`` error with ``id: null`` saying so.

On pipes (how a client runs the server) the event loop itself reads stdin when it has data and
writes an answer of at most ``PIPE_BUF`` bytes once stdout has room: no worker thread to wake
for either, and still nothing that can block the loop. Anything else (a file, a terminal, a
longer answer) goes through a worker thread as before.
"""

from __future__ import annotations

import array
import json
import math
import os
import re
import select
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO, cast, get_args

import anyio
from anyio.abc import ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from philont.db.stored_values import MAX_JSON_DEPTH
from philont.domain.shown import place, short
from philont.log import get_logger
from philont.mcp.depth import MAX_MESSAGE_DEPTH, items, nesting, shallow
from philont.mcp.lines import MAX_BATCH_MESSAGES, MAX_LINE_BYTES, Oversized, fd_of, head_fields
from philont.mcp.lines import lines as _lines
from philont.schemas.inputs import MAX_ARGUMENT_BYTES, describe, repeated_key, unstorable
from philont.tools.dispatch import not_an_object
from philont.tools.registry import capped

log = get_logger(__name__)

PIPE_BUF = getattr(select, "PIPE_BUF", 512)
"""The largest write to a pipe that POSIX makes atomic (512 at least)."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def _models(union: Any) -> dict[str, type[BaseModel]]:
    """The request (or notification) model of each method of a union of them."""
    return {
        method: model
        for model in get_args(union)
        for method in get_args(model.model_fields["method"].annotation)
    }


REQUESTS = _models(types.ClientRequestType)
NOTIFICATIONS = _models(types.ClientNotificationType)
SERVED = frozenset({"initialize", "ping", "tools/list", "tools/call"})
"""The requests the server answers (``philont.mcp.server``: tools only). The others MCP
defines (``resources/list``, ``prompts/list``, ``logging/setLevel``, ``tasks/get`` ...) are
unknown methods here: the SDK answered them a bare "Method not found", no code of ours, and
the refusal of a method listed them as methods to call."""
CANCELLED = "notifications/cancelled"
"""The notification that cancels a request in flight, which then gets no answer
(:class:`_InFlight`)."""


BATCH_VERSIONS = frozenset({"2025-03-26"})
"""The protocol versions under which a client may send a batch (MCP 2025-03-26: implementations
MUST support receiving them; 2024-11-05 had none, 2025-06-18 removed them)."""


def error_line(request_id: Any, code: int, message: str, our_code: str, detail: str) -> str:
    """One JSON-RPC error response (``id`` null when the request's id is unknown); its
    ``detail`` held to the size policy of every text a client reads back (:func:`capped`)."""
    data = {"code": our_code, "message": capped(detail)}
    error = {"code": code, "message": message, "data": data}
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _request_id(data: Any) -> Any:
    """The id of a request as its answer echoes it (:func:`_echoed`), else None."""
    return _echoed(data.get("id")) if isinstance(data, dict) else None


def _echoed(value: Any) -> Any:
    """``value`` if it is an id JSON-RPC allows (a string or a number), else None: a refusal
    is answered with the id its request gave, which its sender waits for. The SDK (and so
    this server) serves ids that are strings or whole numbers only; a request with another
    number (``1.5``, ``1e3``) is refused, and was refused with ``id: null``, which no waiting
    request matches."""
    if _served_id(value) or (type(value) is float and math.isfinite(value)):
        return value
    return None


def _served_id(value: Any) -> bool:
    """Whether ``value`` is an id the SDK serves: a string or a whole number (MCP: not null)."""
    return isinstance(value, str) or type(value) is int


def check_line(line: bytes) -> SessionMessage | str | None:
    """The message a line holds, or the error line that answers it (None: nothing to do)."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        found = _parsed(line.decode("utf-8", "replace"))
        where = f"{exc.reason} at byte {exc.start}"
        return error_line(
            _request_id(found), types.PARSE_ERROR, "Parse error", "invalid_json",
            f"the message is not UTF-8 text ({where})",
        )  # fmt: skip
    return _check_text(text)


def _check_text(text: str) -> SessionMessage | str | None:
    """:func:`check_line` of a line's text (UTF-8), or of one message of a batch."""
    if text.count("[") + text.count("{") > MAX_MESSAGE_DEPTH:  # else it cannot be too deep
        depth = nesting(text)
        if depth > MAX_MESSAGE_DEPTH:
            return _too_deep(text, depth)
    try:
        message = types.JSONRPCMessage.model_validate_json(text)
    except ValidationError:
        return _unambiguous(text, _read_by_python(text))
    return _unambiguous(text, _checked(message))


def _unambiguous(text: str, checked: SessionMessage | str | None) -> SessionMessage | str | None:
    """``checked``, unless it is a tool call whose arguments the SDK cannot pass on as they
    were sent: a key given twice in one object (the SDK's parser keeps the last value; which
    one was meant cannot be known), or a number that is not finite (:func:`_not_finite`: the
    SDK re-reads a request through its JSON form, where it becomes ``null``, "not given").
    Those are refused as ``tools.call`` refuses such arguments."""
    if not isinstance(checked, SessionMessage):
        return checked
    root = checked.message.root
    if not isinstance(root, types.JSONRPCRequest) or root.method != "tools/call":
        return checked
    params = root.params or {}
    problem = repeated_key(text) or _not_finite(params.get("arguments"), ())
    if problem is None:
        return checked
    return error_line(root.id, types.INVALID_PARAMS, "Invalid params", "invalid_arguments", problem)


def _not_finite(value: Any, path: tuple[str | int, ...]) -> str | None:
    """Why an argument holds a number that is not finite (``NaN``, ``Infinity``, ``1e400``, or
    an integer too long to read), naming it as :func:`philont.schemas.inputs.describe` names
    an argument; None when there is none. The line's depth is bounded before this runs."""
    if isinstance(value, float) and not math.isfinite(value):
        return (
            f"{_named(path) or 'arguments'}: a number that is not finite (NaN, Infinity, or beyond "
            f"±1.8e308 such as 1e400, or an integer of more than {_MAX_DIGITS:,} digits); a "
            "number a tool takes must fit a 64-bit float"
        )
    for key, item in _children(value):
        found = _not_finite(item, (*path, key))
        if found is not None:
            return found
    return None


def _children(value: Any) -> Iterable[tuple[Any, Any]]:
    """The (key, value) of an object's members, the (index, item) of an array's items."""
    if isinstance(value, dict):
        return value.items()
    return enumerate(value) if isinstance(value, list) else ()


def _named(path: tuple[str | int, ...]) -> str:
    """A place in a value, as every message names it (:func:`philont.domain.shown.place`)."""
    return place("", path)


def _unwritable_key(value: Any, path: tuple[str | int, ...]) -> str | None:
    """Where ``value`` holds an object key that is not valid Unicode (a lone surrogate, which
    Python's JSON reads), and which; None when there is none. The SDK re-reads every message
    through its JSON form, which cannot hold such a key: it answered a bare "Invalid request
    parameters" and warned on stderr. The line's depth is bounded before this runs."""
    for key, item in _children(value):
        problem = unstorable(key) if isinstance(key, str) else None
        if problem is not None:
            return f"{_named(path) or 'arguments'}: a key {short(key)} that is {problem}"
        found = _unwritable_key(item, (*path, key))
        if found is not None:
            return found
    return None


def _keys_written(checked: SessionMessage | str | None) -> SessionMessage | str | None:
    """``checked``, unless it is a message read by Python whose params hold a key the SDK
    cannot write (:func:`_unwritable_key`): a request is answered (``invalid_arguments``
    naming the key inside a tool's arguments, else ``invalid_params``), a notification is
    dropped."""
    if not isinstance(checked, SessionMessage):
        return checked
    root = checked.message.root
    if not isinstance(root, types.JSONRPCRequest | types.JSONRPCNotification):
        return checked
    params = root.params or {}
    call = root.method == "tools/call"
    problem = _unwritable_key(params.get("arguments"), ()) if call else None
    ours = "invalid_arguments"
    if problem is None:  # the rest of params (a call's arguments are walked once)
        rest = {k: v for k, v in params.items() if not (call and k == "arguments")}
        problem, ours = _unwritable_key(rest, ("params",)), "invalid_params"
    if problem is None:
        return checked
    if isinstance(root, types.JSONRPCNotification):
        log.debug("mcp.notification_dropped", method=root.method[:80])
        return None
    return error_line(root.id, types.INVALID_PARAMS, "Invalid params", ours, problem)


def _too_deep(text: str, depth: int) -> str | None:
    """The answer to a line nested deeper than :data:`MAX_MESSAGE_DEPTH` (None: a
    notification, dropped), with the id, method and tool name its shallow copy shows."""
    data = _parsed(shallow(text, MAX_MESSAGE_DEPTH))
    detail = (
        f"the message nests {depth:,} levels of arrays and objects; at most "
        f"{MAX_MESSAGE_DEPTH} (a tool argument's value: at most {MAX_JSON_DEPTH})"
    )
    method = data.get("method") if isinstance(data, dict) else None
    request_id = _request_id(data)
    if isinstance(method, str) and request_id is None and "id" not in data:
        log.debug("mcp.notification_dropped", method=method[:80])
        return None
    if not isinstance(method, str) or request_id is None:
        return error_line(
            request_id, types.INVALID_REQUEST, "Invalid Request", "invalid_request", detail
        )
    ours = "invalid_arguments" if method == "tools/call" else "invalid_params"
    return error_line(request_id, types.INVALID_PARAMS, "Invalid params", ours, detail)


def oversized(line: Oversized) -> str:
    """The answer to a line longer than :data:`MAX_LINE_BYTES` (never read whole), with the
    id and method its head shows (a notification that long is answered too: whether it has an
    id later on cannot be known, and its sender may be waiting)."""
    data = head_fields(line.head.decode("utf-8", "replace"))
    detail = (
        f"the message is more than {MAX_LINE_BYTES:,} bytes ({line.size:,} read); a tool's "
        f"arguments are at most {MAX_ARGUMENT_BYTES:,} bytes of JSON (store large content in "
        "pieces, or keep a reference instead)"
    )
    method, request_id = data.get("method"), _request_id(data)
    if not isinstance(method, str) or request_id is None:
        return error_line(
            request_id, types.INVALID_REQUEST, "Invalid Request", "invalid_request", detail
        )
    ours = "invalid_arguments" if method == "tools/call" else "invalid_params"
    return error_line(request_id, types.INVALID_PARAMS, "Invalid params", ours, detail)


def _parsed(text: str) -> Any:
    try:
        return _loads(text)
    except (ValueError, RecursionError):
        return None


_MAX_DIGITS = sys.get_int_max_str_digits() or sys.maxsize
"""The longest integer Python reads from text (its default guard against slow conversions)."""


def _whole(digits: str) -> int | float:
    """A JSON integer; one too long to read is an infinity (refused by :func:`_not_finite`
    with the request's id: ``json.loads`` raised, and the line was answered without one)."""
    if len(digits.lstrip("-")) > _MAX_DIGITS:
        return -math.inf if digits.startswith("-") else math.inf
    return int(digits)


def _loads(text: str) -> Any:
    return json.loads(text, parse_int=_whole)


def _read_by_python(text: str) -> SessionMessage | str | None:
    """A line the SDK's parser refused: JSON that Python reads (a lone surrogate escape goes
    on, for the tools to refuse by name), or the error that answers it."""
    try:
        data = _loads(text)
    except (ValueError, RecursionError) as exc:
        return _not_json(exc)
    try:
        message = types.JSONRPCMessage.model_validate(data)
    except (ValidationError, RecursionError):
        what = _NO_BATCH if isinstance(data, list) else None
        return error_line(
            _request_id(data), types.INVALID_REQUEST, "Invalid Request", "invalid_request",
            f"not a JSON-RPC 2.0 request, notification or response: {what or _shape(data)}",
        )  # fmt: skip
    return _keys_written(_checked(message))


def _not_json(exc: Exception) -> str:
    return error_line(
        None, types.PARSE_ERROR, "Parse error", "invalid_json", f"not valid JSON ({exc})"
    )


_NO_BATCH = (
    "a batch (a JSON array), which this session does not take: MCP has batches under protocol "
    f"version {' and '.join(sorted(BATCH_VERSIONS))} only (2025-06-18 removed them), once "
    "initialize has agreed on it; send one message per line"
)


def check_batch(line: bytes) -> list[SessionMessage | str | None] | str:
    """The messages of a batch line (a JSON array, in a session that takes batches), each
    checked as a line of its own (:func:`check_line`: a message, the error that answers it,
    or None), or the one error that answers the whole line: not JSON (or not UTF-8), an empty
    array, more than :data:`MAX_BATCH_MESSAGES` messages (then each request is refused by its
    id). ``initialize`` is refused inside a batch (MCP 2025-03-26: it MUST NOT be part of
    one)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return cast(str, check_line(line))  # the parse error
    try:  # the array and its messages' upper levels: a message too deep is refused by its id
        data = _loads(shallow(text, MAX_MESSAGE_DEPTH + 1))
    except (ValueError, RecursionError) as exc:
        return _not_json(exc)
    if not data:
        return error_line(
            None, types.INVALID_REQUEST, "Invalid Request", "invalid_request",
            "an empty batch: a batch holds one message at least (JSON-RPC 2.0)",
        )  # fmt: skip
    if len(data) > MAX_BATCH_MESSAGES:
        detail = (
            f"a batch of {len(data):,} messages; at most {MAX_BATCH_MESSAGES} (send the rest in "
            "another batch, or one message per line)"
        )
        ids = [_request_id(item) for item in data if isinstance(item, dict) and "id" in item]
        refused = [i for i in ids if i is not None] or [None]
        return [
            error_line(i, types.INVALID_REQUEST, "Invalid Request", "invalid_request", detail)
            for i in refused
        ]
    return [_in_batch(item) for item in items(text)]


def _in_batch(text: str) -> SessionMessage | str | None:
    """A message of a batch checked as a line of its own, unless it is ``initialize`` or
    another batch."""
    if text.startswith("["):
        return error_line(
            None, types.INVALID_REQUEST, "Invalid Request", "invalid_request",
            "a batch inside a batch: a batch's messages are JSON objects",
        )  # fmt: skip
    checked = _check_text(text)
    root = checked.message.root if isinstance(checked, SessionMessage) else None
    if not isinstance(root, types.JSONRPCRequest) or root.method != "initialize":
        return checked
    return error_line(
        root.id, types.INVALID_REQUEST, "Invalid Request", "invalid_request",
        "initialize inside a batch (MCP 2025-03-26: it MUST NOT be part of one)",
    )  # fmt: skip


def is_batch(line: bytes) -> bool:
    """Whether ``line`` holds a JSON array (JSON-RPC: a batch)."""
    return line.lstrip(b" \t\r\n").startswith(b"[")


def _shape(data: Any) -> str:
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if data.get("jsonrpc") != "2.0":
        return 'it needs "jsonrpc": "2.0"'
    if "method" in data and not isinstance(data["method"], str):
        return "its method must be a string"
    if "id" in data and not _served_id(data["id"]):
        return "its id must be a string or a whole number (MCP: not null)"
    if "params" in data and not isinstance(data["params"], dict):
        return "its params must be an object"
    return "it needs a method (a request or notification) or a result or error (a response)"


def _checked(message: types.JSONRPCMessage) -> SessionMessage | str | None:
    """``message`` as the SDK will read it, or the error that answers a request it cannot."""
    root = message.root
    if _bad_id(root):
        return error_line(  # read as a notification only because its id is not one
            _echoed((root.model_extra or {}).get("id")),
            types.INVALID_REQUEST, "Invalid Request", "invalid_request",
            "a request's id must be a string or a whole number here (MCP: not null)",
        )  # fmt: skip
    if isinstance(root, types.JSONRPCRequest | types.JSONRPCNotification):
        shaped = {"method": root.method, "params": root.params}
        models = REQUESTS if isinstance(root, types.JSONRPCRequest) else NOTIFICATIONS
        served = isinstance(root, types.JSONRPCNotification) or root.method in SERVED
        model = models.get(root.method) if served else None
        try:
            if model is None:
                raise LookupError(root.method)
            model.model_validate(shaped)
        except (LookupError, ValidationError) as exc:
            if isinstance(root, types.JSONRPCRequest):
                return _refused(root, exc)
            log.debug("mcp.notification_dropped", method=root.method[:80])
            return None
    return SessionMessage(message)


def _bad_id(root: object) -> bool:
    """Whether ``root`` is a request whose id is not one (``null``, ``true``, ``1.5``), which
    the SDK reads as a notification of an unknown method and drops: its sender waits
    forever. (A notification that carries an id goes on, as the SDK reads it.)"""
    if not isinstance(root, types.JSONRPCNotification) or root.method in NOTIFICATIONS:
        return False
    return "id" in (root.model_extra or {})


def _refused(root: types.JSONRPCRequest, exc: Exception) -> str:
    """The error that answers a request for an unknown method, or with bad parameters."""
    if not isinstance(exc, ValidationError):
        other = " (this server offers tools only)" if root.method in REQUESTS else ""
        return error_line(
            root.id, types.METHOD_NOT_FOUND, "Method not found", "unknown_method",
            f"no method {root.method[:80]!r}{other}; methods: {', '.join(sorted(SERVED))}",
        )  # fmt: skip
    if root.method != "tools/call":
        return error_line(
            root.id, types.INVALID_PARAMS, "Invalid params", "invalid_params", describe(exc)
        )
    detail = describe(exc)
    given = (root.params or {}).get("arguments")
    if isinstance(given, str):  # text, perhaps the arguments' JSON encoded once more
        detail = f"params.arguments: must be a JSON object, {not_an_object(given)}"
    return error_line(root.id, types.INVALID_PARAMS, "Invalid params", "invalid_arguments", detail)


class _Handshake:
    """The messages the SDK may be given at this point of the session. Before ``initialize``
    (or ``notifications/initialized``, which the SDK takes as well) it refuses every request
    but ``ping`` with a bare "Invalid request parameters" and a warning on stderr: here such a
    request is answered ``-32600`` (``not_initialized``) saying what to send first, and a
    notification is dropped. A response from the client is always dropped (debug log): the
    server sends no requests, so it answers none, and the SDK would report an "Internal Server
    Error" to the client and on stderr.

    It keeps the protocol version ``initialize`` agreed on, as the SDK answers it (the one
    asked for if the SDK supports it, else its latest): under 2025-03-26 a line may be a batch
    (:attr:`batches`)."""

    def __init__(self) -> None:
        self.ready = False
        self.version: str | None = None

    @property
    def batches(self) -> bool:
        """Whether a line may be a batch (JSON-RPC: an array of messages)."""
        return self.ready and self.version in BATCH_VERSIONS

    def check(self, checked: SessionMessage | str | None) -> SessionMessage | str | None:
        if not isinstance(checked, SessionMessage):
            return checked
        root = checked.message.root
        if isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
            log.debug("mcp.response_dropped", id=str(root.id)[:80])
            return None
        method = root.method
        if method in ("initialize", "notifications/initialized"):
            self.ready = True
        if isinstance(root, types.JSONRPCRequest) and method == "initialize":
            asked = (root.params or {}).get("protocolVersion")
            known = asked in SUPPORTED_PROTOCOL_VERSIONS
            self.version = asked if known else types.LATEST_PROTOCOL_VERSION
        if self.ready or method == "ping":
            return checked
        if isinstance(root, types.JSONRPCNotification):
            log.debug("mcp.notification_dropped", method=method[:80])
            return None
        return error_line(
            root.id, types.INVALID_REQUEST, "Invalid Request", "not_initialized",
            f"{method[:80]!r} before the session is initialized: send initialize first "
            "(then notifications/initialized), as an MCP client does",
        )  # fmt: skip


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> AsyncIterator[Streams]:
    """The read and write streams of :meth:`mcp.server.lowlevel.Server.run` over stdio.

    A client that closes its end of stdout (the server's answers go nowhere) stops the
    server quietly (no traceback, no "Exception ignored" at exit); the process ends when stdin
    ends too, as it does when the client exits."""
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    lock = anyio.Lock()
    out_fd = fd_of(sink, stat.S_ISFIFO)

    async with anyio.create_task_group() as tg:

        async def emit(line: str) -> None:
            data = utf8(line) + b"\n"
            async with lock:
                try:
                    if out_fd is not None and len(data) <= PIPE_BUF:
                        await _write_pipe(out_fd, data)
                    else:
                        await anyio.to_thread.run_sync(_write, sink, data)
                except (BrokenPipeError, ConnectionResetError):
                    _silence(sink)  # the client is gone: no "Exception ignored" at exit
                    tg.cancel_scope.cancel()

        in_flight = _InFlight()

        async def batch(checked: list[SessionMessage | str | None] | str) -> None:
            """Pass a batch's messages on, its answers written as one array once all are
            done (:class:`_Batch`)."""
            if isinstance(checked, str):
                await emit(checked)
                return
            messages = [session.check(item) for item in checked]  # responses dropped
            passed = [m for m in messages if isinstance(m, SessionMessage)]
            requests = sum(isinstance(m.message.root, types.JSONRPCRequest) for m in passed)
            answers = _Batch(emit, [m for m in messages if isinstance(m, str)], requests)
            for message in passed:
                in_flight.add(message.message.root, answers)
                await to_server.send(message)
            if not requests:
                await answers.write()

        session = _Handshake()

        async def read() -> None:
            async with to_server:
                async for line in _lines(source):
                    if isinstance(line, bytes) and session.batches and is_batch(line):
                        await batch(check_batch(line))
                        continue
                    given = check_line(line) if isinstance(line, bytes) else oversized(line)
                    checked = session.check(given)
                    if isinstance(checked, SessionMessage):
                        in_flight.add(checked.message.root)
                        await to_server.send(checked)
                    elif checked is not None:
                        await emit(checked)
                # stdin ended: the SDK cancels the requests it has not answered once it reads
                # the end, so it is told only when they are answered.
                await in_flight.answered()

        tg.start_soon(read)
        yield from_client, cast(MemoryObjectSendStream[SessionMessage], _Answers(emit, in_flight))


class _InFlight:
    """The requests passed to the SDK and not yet answered, by id. When stdin ends the server
    answers them before it stops: a call still running then (``printf ... | philont mcp``,
    a client that closes stdin and reads on) ran to its end, its effect kept, but its answer
    was dropped, so the client could not know what it did.

    A request the client cancels (``notifications/cancelled``) while it is in flight gets no
    answer (MCP: the receiver of a cancellation SHOULD NOT answer the cancelled request; its
    sender has stopped waiting for it). The SDK answered every cancellation at once with an
    error ``0 "Request cancelled"`` although the call ran on to its end and kept its effect,
    and an official client reads an answer to a request it cancelled as an error of its own
    ("a response for an unknown message ID")."""

    def __init__(self) -> None:
        self._ids: dict[Any, deque[_Batch | None]] = {}  # the batch each came in (None: a line)
        self._open = 0  # requests whose answer is not written yet
        self._none = anyio.Event()
        self._none.set()
        self._cancelled: set[Any] = set()  # ids in flight the client cancelled

    def add(self, root: object, batch: _Batch | None = None) -> None:
        if isinstance(root, types.JSONRPCRequest):
            self._ids.setdefault(root.id, deque()).append(batch)
            self._open += 1
            if self._none.is_set():
                self._none = anyio.Event()
        elif isinstance(root, types.JSONRPCNotification) and root.method == CANCELLED:
            request_id = (root.params or {}).get("requestId")
            known = isinstance(request_id, str) or type(request_id) is int
            if known and request_id in self._ids:
                self._cancelled.add(request_id)

    def unanswered(self, root: object) -> bool:
        """Whether ``root`` answers a request the client cancelled: it is not written."""
        if not isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
            return False
        return root.id in self._cancelled

    def take(self, root: object) -> tuple[bool, _Batch | None]:
        """Whether ``root`` answers a request in flight (then :meth:`done` once it is written
        or dropped), and the batch that request came in (None: a line of its own). Answers to
        requests that share an id go to them in the order they came."""
        if not isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
            return False, None
        owners = self._ids.get(root.id)
        if not owners:
            return False, None
        batch = owners.popleft()
        if not owners:
            del self._ids[root.id]
            self._cancelled.discard(root.id)
        return True, batch

    def done(self) -> None:
        self._open -= 1
        if not self._open:
            self._none.set()

    async def answered(self) -> None:
        await self._none.wait()


class _Batch:
    """The answers to one batch line, written as one JSON array once each of its requests is
    answered (JSON-RPC 2.0; in any order), the errors of the messages the transport refused
    among them; none when there is nothing to answer (notifications, cancelled requests)."""

    def __init__(self, emit: Callable[[str], Awaitable[None]], refused: list[str], requests: int):
        self._emit = emit
        self._answers = refused
        self._left = requests

    async def answered(self, text: str | None) -> None:
        """One request answered (None: cancelled, not answered)."""
        if text is not None:
            self._answers.append(text)
        self._left -= 1
        if not self._left:
            await self.write()

    async def write(self) -> None:
        if self._answers:
            await self._emit(f"[{','.join(self._answers)}]")


class _Answers(ObjectSendStream[SessionMessage]):
    """The SDK's write stream: each message written out by the task that sends it (the
    request's own), with no task of ours to hand it to in between. Closed (the SDK closes it
    when stdin ends), it refuses messages as a closed memory stream does."""

    def __init__(self, emit: Callable[[str], Awaitable[None]], in_flight: _InFlight) -> None:
        self._emit = emit
        self._in_flight = in_flight
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        root = item.message.root
        text = None if self._in_flight.unanswered(root) else _json(item.message)
        waited, batch = self._in_flight.take(root)
        try:
            if batch is not None:
                await batch.answered(text)
            elif text is not None:
                await self._emit(text)
        finally:  # written, or dropped (its request cancelled meanwhile): not waited for
            if waited:
                self._in_flight.done()

    async def aclose(self) -> None:
        self._closed = True


def _json(message: types.JSONRPCMessage) -> str:
    """The JSON text of an answer. Pydantic refuses to write a lone surrogate (a request's
    text that Python reads: its id, a ping's, echoed back); :func:`utf8` escapes it."""
    try:
        return message.model_dump_json(by_alias=True, exclude_none=True)
    except PydanticSerializationError:
        data = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8(line: str) -> bytes:
    """The bytes of an answer's JSON text: UTF-8, a lone surrogate in it (echoed from the
    request: an id, a tool's name, a value quoted) written as the escape a client sends,
    ``\\udc80`` (in JSON text such a character can only be inside a string). It was written
    as bytes that are not UTF-8 (``surrogatepass``), which a client cannot read, or crashed
    the server (pydantic refuses to write one)."""
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        escaped = _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", line)
        return escaped.encode("utf-8")


async def _write_pipe(fd: int, data: bytes) -> None:
    """Write ``data`` (at most ``PIPE_BUF`` bytes) to a pipe from the event loop, once the pipe
    has a free buffer: a write that small then goes in whole, at once (POSIX: atomic), so
    a client that stops reading blocks this task, never the event loop. An empty pipe (the
    client has read every answer, as it has between a request and its answer) has every
    buffer free: no wait then (one ioctl instead of a pass of the event loop)."""
    if _unread(fd) != 0:
        await anyio.wait_writable(fd)
    os.write(fd, data)


def _unread(fd: int) -> int:
    """The bytes in the pipe that the client has not read yet (Linux: ``FIONREAD`` answers for
    either end of a pipe); -1 where that is unknown."""
    if sys.platform != "linux":
        return -1
    import fcntl
    import termios

    count = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, count)
    except OSError:
        return -1
    return count[0]


def _write(sink: BinaryIO, data: bytes) -> None:
    sink.write(data)
    sink.flush()


def _silence(sink: BinaryIO) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sink.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (a test's buffer)
        pass

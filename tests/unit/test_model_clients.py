"""Model clients: the OpenAI and Anthropic adapters against a stub server on 127.0.0.1 speaking
their wire formats, and the scripted client. No network beyond the loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont.errors import (
    InvalidInputError,
    ModelEmptyAnswerError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from philont.llm import Completion, ModelClient, ScriptedModel, model_from_spec, task_of
from philont.llm.anthropic_client import AnthropicModel
from philont.llm.base import MAX_TOKENS_PER_CALL, ask
from philont.llm.openai_client import OpenAIModel
from tests.support import is_utf8


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    delay: float = 0.0


@dataclass
class Stub:
    """What the stub answers (in order; the last reply repeats) and what it was sent."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                reply = state.replies.pop(0) if len(state.replies) > 1 else state.replies[0]
            if reply.delay:
                time.sleep(reply.delay)
            data = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (time-out test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def openai_answer(text: str | None, total_tokens: int = 42) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": "stub-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": total_tokens},
    }


def anthropic_answer(blocks: list[dict[str, Any]], inp: int = 25, out: int = 9) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "stub-model",
        "content": blocks,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }


def openai_client(stub: Stub, **kw: Any) -> OpenAIModel:
    options: dict[str, Any] = {"api_key": "sk-test", "timeout": 5.0, "max_retries": 0}
    options.update(kw)
    return OpenAIModel("stub-model", base_url=f"{stub.url}/v1", **options)


def anthropic_client(stub: Stub, **kw: Any) -> AnthropicModel:
    options: dict[str, Any] = {"api_key": "ak-test", "timeout": 5.0, "max_retries": 0}
    options.update(kw)
    return AnthropicModel("stub-model", base_url=stub.url, **options)


# --- OpenAI-compatible ---------------------------------------------------------------------


def test_the_openai_client_sends_the_prompt_as_one_user_message_and_reads_text_and_tokens(
    stub: Stub,
) -> None:
    stub.replies = [Reply(body=openai_answer("[]", total_tokens=57))]
    client = openai_client(stub)
    result = client.complete("TASK: reflect\nhello 你好")
    assert result == Completion("[]", 57)
    request = stub.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "stub-model"
    assert request["body"]["messages"] == [{"role": "user", "content": "TASK: reflect\nhello 你好"}]
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert isinstance(client, ModelClient)


def test_an_openai_compatible_server_without_a_key_is_reachable_by_base_url(
    stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub.replies = [Reply(body=openai_answer("ok"))]
    client = OpenAIModel("stub-model", base_url=f"{stub.url}/v1", max_retries=0)
    assert client.complete("hi").text == "ok"


@pytest.mark.parametrize(
    ("status", "retryable"), [(400, False), (401, False), (429, True), (500, True), (503, True)]
)
def test_an_http_error_of_the_openai_server_is_a_typed_error_with_its_status(
    stub: Stub, status: int, retryable: bool
) -> None:
    body = {"error": {"message": "nope", "type": "server_error", "code": None}}
    stub.replies = [Reply(status=status, body=body)]
    with pytest.raises(ModelHTTPError) as info:
        openai_client(stub).complete("hi")
    assert info.value.status == status
    assert info.value.code == "model_http_error"
    assert info.value.retryable is retryable


@pytest.mark.parametrize("text", [None, "", "   \n"])
def test_an_empty_openai_answer_is_a_typed_error(stub: Stub, text: str | None) -> None:
    stub.replies = [Reply(body=openai_answer(text))]
    with pytest.raises(ModelEmptyAnswerError) as info:
        openai_client(stub).complete("hi")
    assert info.value.code == "model_empty_answer"


def test_an_openai_answer_without_choices_is_an_empty_answer(stub: Stub) -> None:
    body = openai_answer("x")
    body["choices"] = []
    stub.replies = [Reply(body=body)]
    with pytest.raises(ModelEmptyAnswerError):
        openai_client(stub).complete("hi")


def test_a_slow_openai_server_is_a_time_out(stub: Stub) -> None:
    stub.replies = [Reply(body=openai_answer("late"), delay=1.5)]
    with pytest.raises(ModelTimeoutError) as info:
        openai_client(stub, timeout=0.3).complete("hi")
    assert info.value.code == "model_timeout"


def test_an_unreachable_openai_server_is_unavailable() -> None:
    client = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(ModelUnavailableError):
        client.complete("hi")


def test_an_openai_answer_that_is_not_json_is_a_model_error(stub: Stub) -> None:
    stub.replies = [Reply(body="not an object")]
    with pytest.raises(ModelError):
        openai_client(stub).complete("hi")


# --- Anthropic -----------------------------------------------------------------------------


def test_the_anthropic_client_sends_one_user_turn_and_joins_the_text_blocks(stub: Stub) -> None:
    blocks = [
        {"type": "text", "text": '[{"name": '},
        {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
        {"type": "text", "text": '"a"}]'},
    ]
    stub.replies = [Reply(body=anthropic_answer(blocks, inp=25, out=9))]
    result = anthropic_client(stub, max_tokens=512).complete("TASK: judge\nrun")
    assert result == Completion('[{"name": "a"}]', 34)
    request = stub.requests[0]
    assert request["path"] == "/v1/messages"
    # SDK versions differ in how they send the key (x-api-key, or a bearer token)
    headers = request["headers"]
    assert headers.get("x-api-key") == "ak-test" or headers["authorization"] == "Bearer ak-test"
    assert "anthropic-version" in headers
    assert request["body"]["max_tokens"] == 512
    assert request["body"]["messages"] == [{"role": "user", "content": "TASK: judge\nrun"}]


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit_error"), (529, "overloaded_error")])
def test_an_anthropic_http_error_is_a_typed_retryable_error(
    stub: Stub, status: int, kind: str
) -> None:
    body = {"type": "error", "error": {"type": kind, "message": "slow down"}}
    stub.replies = [Reply(status=status, body=body)]
    with pytest.raises(ModelHTTPError) as info:
        anthropic_client(stub).complete("hi")
    assert info.value.status == status
    assert info.value.retryable


def test_an_anthropic_answer_without_text_blocks_is_empty(stub: Stub) -> None:
    stub.replies = [Reply(body=anthropic_answer([]))]
    with pytest.raises(ModelEmptyAnswerError):
        anthropic_client(stub).complete("hi")


def test_a_slow_anthropic_server_is_a_time_out(stub: Stub) -> None:
    stub.replies = [Reply(body=anthropic_answer([{"type": "text", "text": "x"}]), delay=1.5)]
    with pytest.raises(ModelTimeoutError):
        anthropic_client(stub, timeout=0.3).complete("hi")


# --- the factory and the scripted client -------------------------------------------------------


def test_a_model_spec_picks_the_provider(stub: Stub, tmp_path: Path) -> None:
    stub.replies = [Reply(body=openai_answer("from spec"))]
    client = model_from_spec("openai:stub-model", base_url=f"{stub.url}/v1", max_retries=0)
    assert client.complete("hi").text == "from spec"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"reflect": "[]"}))
    scripted = model_from_spec(f"scripted:{script}")
    assert scripted.complete("TASK: reflect\n...").text == "[]"
    with pytest.raises(ModelEmptyAnswerError) as caught:
        scripted.complete("TASK: extract\n...")
    assert "task 'extract' (it answers reflect)" in caught.value.message  # which one to add


@pytest.mark.parametrize("spec", ["openai", "openai:", "gemini:x", ":x", "scripted:/no/such.json"])
def test_a_bad_model_spec_is_refused(spec: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        model_from_spec(spec)
    if not spec.startswith("scripted:"):  # a file that cannot be read: file_path, its path
        assert caught.value.message.startswith("spec: ")
        assert caught.value.details["argument"] == "spec"


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"spec": None}, "spec"),
        ({"spec": 5}, "spec"),
        ({"spec": b"openai:x"}, "spec"),
        ({"spec": "anthropic:x", "timeout": 0}, "timeout"),
        ({"spec": "anthropic:x", "timeout": -1.5}, "timeout"),
        ({"spec": "anthropic:x", "timeout": "60"}, "timeout"),
        ({"spec": "anthropic:x", "timeout": True}, "timeout"),
        ({"spec": "anthropic:x", "max_retries": -1}, "max_retries"),
        ({"spec": "anthropic:x", "max_retries": 1.5}, "max_retries"),
    ],
)
def test_bad_factory_arguments_are_refused_by_name(arguments: dict[str, Any], name: str) -> None:
    # A spec that was not text was an AttributeError ('NoneType' has no attribute 'partition').
    with pytest.raises(InvalidInputError) as caught:
        model_from_spec(**arguments)
    # named as every argument's refusal is (it said "spec must be ..." with no details)
    assert caught.value.message.startswith(f"{name}: must be ")
    assert caught.value.details["argument"] == name


def test_the_scripted_model_answers_in_order_raises_scripted_errors_and_then_runs_out() -> None:
    boom = ModelTimeoutError("scripted time-out")
    model = ScriptedModel(["one", Completion("two", 7), boom])
    assert model.complete("p1").text == "one"
    assert model.complete("p2") == Completion("two", 7)
    with pytest.raises(ModelTimeoutError):
        model.complete("p3")
    with pytest.raises(ModelUnavailableError):
        model.complete("p4")
    assert model.prompts == ["p1", "p2", "p3", "p4"]


def test_the_scripted_model_estimates_tokens_from_prompt_and_answer() -> None:
    model = ScriptedModel(lambda prompt: prompt.upper())
    assert model.complete("abcdefgh") == Completion("ABCDEFGH", 4)


@pytest.mark.parametrize(
    ("prompt", "task"),
    [("TASK: reflect\nbody", "reflect"), ("TASK: \nx", None), ("reflect", None), ("", None)],
)
def test_the_task_of_a_prompt_is_its_first_line_marker(prompt: str, task: str | None) -> None:
    assert task_of(prompt) == task


_NOT_UTF8 = st.binary(min_size=1, max_size=40).filter(lambda b: not is_utf8(b))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    content=st.one_of(
        _NOT_UTF8.map(lambda b: b'{"reflect": "' + b + b'"}'),  # Latin-1 text, binary junk
        st.sampled_from([b"\xff\xfe{}", b'{"reflect": "\xe9t\xe9"}']),
        st.integers(1, 3).map(lambda n: b'{"reflect": "[]", ' * n + b'"reflect": "x"' + b"}" * n),
        st.integers(2_000, 5_000).map(lambda n: b"[" * n + b"]" * n),  # nested past the limit
    )
)
def test_a_model_script_that_cannot_be_read_is_refused_by_name(
    tmp_path: Path, content: bytes
) -> None:
    # A script that was not UTF-8 raised UnicodeDecodeError (a traceback on the command line),
    # one nested too deep RecursionError; a key given twice was read as its last value.
    path = tmp_path / "script.json"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError) as caught:
        model_from_spec(f"scripted:{path}")
    assert caught.value.message.startswith(f"cannot read the model script {str(path)!r}")


def test_a_model_script_may_begin_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"reflect": "[]"}).encode())
    assert model_from_spec(f"scripted:{path}").complete("TASK: reflect\n").text == "[]"


ODD_COUNTS = [-1, -5, MAX_TOKENS_PER_CALL + 1, 2**70, 1.5, None]  # the SDKs read "12" as 12


@pytest.mark.parametrize("count", ODD_COUNTS)
def test_a_servers_odd_token_count_is_not_said_and_the_answer_is_kept(
    stub: Stub, count: object
) -> None:
    # A count outside 0..2**40 (a -1 for unknown) was passed on as it was: every call was a
    # ModelError, and the batch was asked again without end, its answers lost.
    answer = openai_answer("[]")
    answer["usage"]["total_tokens"] = count
    stub.replies = [Reply(body=answer)]
    assert ask(openai_client(stub), "TASK: reflect\n") == Completion("[]", 0)
    answer = anthropic_answer([{"type": "text", "text": "[]"}])
    answer["usage"] = {"input_tokens": count, "output_tokens": 9}
    stub.replies = [Reply(body=answer)]
    assert ask(anthropic_client(stub), "TASK: reflect\n").tokens_used == 9

"""Every failure of a provider call, whatever its shape, is a ModelError naming the provider,
the model and the endpoint in one line; the caller's own callback raises through unchanged.
The providers' official SDKs against a real server on loopback."""

from __future__ import annotations

import socket

import pytest
from helpers.serving import Replier

from callctx import ModelError, agentic, setup
from callctx.models import AnthropicMessages, Gemini, OpenAIChat, OpenAIResponses
from callctx.models.base import ModelRequest

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")

CLIENTS = {
    "openai-chat": lambda url: OpenAIChat("gpt-4o-mini", api_key="sk-test", base_url=f"{url}/v1", max_retries=0),
    "openai-responses": lambda url: OpenAIResponses("gpt-4o-mini", api_key="sk-test", base_url=f"{url}/v1",
                                                    max_retries=0),
    "anthropic": lambda url: AnthropicMessages("claude-sonnet-4-6", api_key="sk-ant", base_url=url, max_retries=0),
    "gemini": lambda url: Gemini("gemini-2.5-flash", api_key="key", base_url=url, max_retries=0),
}  # fmt: skip
PROVIDERS = {"openai-chat": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}
BODIES = {
    "openai-chat": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    "openai-responses": {"model": "gpt-4o-mini", "input": "hi"},
    "anthropic": {"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
}
REPLIES = {
    "not json": (200, b"<html><body>Bad gateway\nupstream down</body></html>", "text/html"),
    "torn json": (200, b'{"id": "chatcmpl-1", "choi', "application/json"),
    "wrong shape": (200, b'{"ok": true}', "application/json"),
    "server error": (500, b'{"error": {"message": "boom"}}', "application/json"),
}


def _request(name: str) -> ModelRequest:
    return ModelRequest(BODIES[name], None, None)  # type: ignore[arg-type]


def _check(error: ModelError, name: str, model, url: str) -> None:
    text = str(error)
    assert "\n" not in text
    assert error.provider == PROVIDERS[name] and text.startswith(f"{PROVIDERS[name]} {model.params.model} at ")
    assert error.model == model.params.model and error.endpoint and error.endpoint.startswith(url)
    assert error.endpoint in text


@pytest.mark.parametrize("reply", sorted(REPLIES))
@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_any_reply_but_the_api_is_a_model_error(name, reply):
    status, body, kind = REPLIES[reply]
    server = Replier((status, body, kind))
    try:
        model = CLIENTS[name](server.url)
        with pytest.raises(ModelError) as info:
            model.complete(_request(name))
        _check(info.value, name, model, server.url)
        if status == 500:
            assert info.value.status == 500 and info.value.retryable
        else:
            assert info.value.status is None and not info.value.retryable
    finally:
        server.close()


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_streaming_a_reply_that_is_not_the_api_is_a_model_error(name):
    server = Replier((200, b"<html>not a stream</html>", "text/html"))
    try:
        model = CLIENTS[name](server.url)
        with pytest.raises(ModelError) as info:
            model.stream(_request(name), lambda text: None)
        _check(info.value, name, model, server.url)
    finally:
        server.close()


@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_an_unreachable_server_is_a_retryable_model_error(name):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    model = CLIENTS[name](url)
    with pytest.raises(ModelError) as info:
        model.complete(_request(name))
    _check(info.value, name, model, url)
    assert info.value.retryable


def test_the_callers_callback_raises_through_unchanged():
    sse = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",'
        b'"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'
    )
    server = Replier((200, sse, "text/event-stream"))
    try:
        model = CLIENTS["openai-chat"](server.url)

        class Mine(Exception):
            pass

        def on_text(text):
            raise Mine(text)

        with pytest.raises(Mine, match="Hel"):
            model.stream(_request("openai-chat"), on_text)
    finally:
        server.close()


def test_exec_against_a_server_answering_html_fails_with_a_model_error(tmp_path):
    server = Replier((200, b"<html>maintenance</html>", "text/html"))
    rt = setup(tmp_path / "events.jsonl", model=CLIENTS["openai-chat"](server.url))
    try:

        @agentic
        def ask():
            return rt.exec("hello")

        with pytest.raises(
            ModelError, match=r"^openai gpt-4o-mini at http://127\.0\.0\.1:\d+/v1: the reply is not JSON"
        ):
            ask()
    finally:
        rt.close()
        server.close()


OPENAI_OK = (
    b'{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,'
    b'"finish_reason":"stop","message":{"role":"assistant","content":"fine"}}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}'
)
ANTHROPIC_OK = (
    b'{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text",'
    b'"text":"fine"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}'
)


@pytest.mark.parametrize("name", ["openai-chat", "anthropic"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_each_retry_is_an_event_on_the_chat_span(tmp_path, name, asynchronous):
    import asyncio

    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from callctx.models.base import RETRY_EVENT

    ok = OPENAI_OK if name == "openai-chat" else ANTHROPIC_OK
    busy = (503, b'{"error": {"message": "overloaded"}}', "application/json")
    server = Replier(busy, busy, (200, ok, "application/json"))
    make = OpenAIChat if name == "openai-chat" else AnthropicMessages
    model = make("gpt-4o-mini" if name == "openai-chat" else "claude-sonnet-4-6", api_key="k",
                 base_url=f"{server.url}/v1" if name == "openai-chat" else server.url, max_retries=2)  # fmt: skip
    rt = setup(tmp_path / "events.jsonl", model=model)
    spans = InMemorySpanExporter()
    rt.provider.add_span_processor(SimpleSpanProcessor(spans))
    try:
        if asynchronous:
            assert asyncio.run(rt.aexec("hello")) == "fine"
        else:
            assert rt.exec("hello") == "fine"
    finally:
        rt.close()
        server.close()
    assert server.requests == 3
    (chat,) = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    retries = [dict(e.attributes) for e in chat.events if e.name == RETRY_EVENT]
    assert retries == [{"attempt": 2, "after": "status 503"}, {"attempt": 3, "after": "status 503"}]

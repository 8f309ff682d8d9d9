"""The requests we build are what each provider's official SDK sends, and type-check against
the SDK's own parameter types."""

from __future__ import annotations

from typing import Union

import pytest
from helpers.contexts import seed_ctx
from helpers.sdk import (
    ANTHROPIC_TEXT,
    GEMINI_TEXT,
    OPENAI_TEXT,
    RESPONSES_TEXT,
    Capture,
    anthropic_client,
    gemini_client,
    openai_client,
    strict,
    validate,
)
from pydantic import ValidationError

from callctx.components import Attachment, assemble, wire
from callctx.components.wire.anthropic import count_breakpoints
from callctx.components.wire.exchange import AssistantTurn, ToolCall, ToolResult, ToolResults, UserNote
from callctx.components.wire.params import Params
from callctx.models.gemini import sdk_arguments

EXCHANGES = [
    AssistantTurn("Let me search.", [ToolCall("call_1", "arxiv_search", {"q": "agents"})]),
    ToolResults([ToolResult("call_1", "arxiv_search", '[{"id": "2603.22386"}]')]),
    AssistantTurn("not json"),
    UserNote("Your output did not match the output schema. Reply again."),
]


@pytest.fixture
def context(runtime, tmp_path):
    ctx = seed_ctx(runtime, tmp_path)
    ctx = ctx.replace(turn=ctx.turn.__class__(**{**_fields(ctx.turn), "attachments": [
        Attachment("chart.png", "image/png", data=b"\x89PNG\r\n\x1a\nfake")]}))  # fmt: skip
    return assemble(ctx)


def _fields(struct):
    return {f: getattr(struct, f) for f in struct.__struct_fields__}


@pytest.mark.parametrize("exchanges", [[], EXCHANGES], ids=["first call", "tool loop"])
def test_anthropic_body_is_what_the_sdk_sends(context, exchanges):
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    body = wire.build("anthropic", context, exchanges, Params(model="claude-sonnet-4-6", max_tokens=1024))
    cap = Capture(ANTHROPIC_TEXT)
    anthropic_client(cap).messages.create(**body)
    assert cap.bodies() == [body]
    assert cap.requests[0].url.path == "/v1/messages"
    validate(strict(MessageCreateParamsNonStreaming), body)
    assert count_breakpoints(body) == 4  # tools, first layer, project part, call tree


def test_anthropic_content_blocks_are_strictly_typed(context):
    from anthropic.types import ImageBlockParam, TextBlockParam, ToolResultBlockParam, ToolUseBlockParam

    body = wire.build("anthropic", context, EXCHANGES, Params(model="m"))
    blocks = Union[TextBlockParam, ImageBlockParam, ToolUseBlockParam, ToolResultBlockParam]  # noqa: UP007
    adapter = strict(list[blocks])
    for message in body["messages"]:
        validate(adapter, message["content"])
    validate(strict(list[TextBlockParam]), body["system"])
    with pytest.raises(ValidationError):  # the helper does reject a malformed block
        validate(adapter, [{"type": "text", "text": "a", "cache_control": {"type": "persistent"}}])


@pytest.mark.parametrize("exchanges", [[], EXCHANGES], ids=["first call", "tool loop"])
def test_openai_chat_body_is_what_the_sdk_sends(context, exchanges):
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    body = wire.build("openai-chat", context, exchanges, Params(model="gpt-4o-mini", max_tokens=512))
    cap = Capture(OPENAI_TEXT)
    openai_client(cap).chat.completions.create(**body)
    assert cap.bodies() == [body]
    assert cap.requests[0].url.path == "/v1/chat/completions"
    validate(strict(CompletionCreateParamsNonStreaming), body)
    with pytest.raises(ValidationError):
        validate(strict(CompletionCreateParamsNonStreaming), {**body, "messages": [{"role": "robot", "content": "x"}]})


@pytest.mark.parametrize("exchanges", [[], EXCHANGES], ids=["first call", "tool loop"])
def test_openai_responses_body_is_what_the_sdk_sends(context, exchanges):
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    body = wire.build("openai-responses", context, exchanges, Params(model="gpt-4o-mini"))
    cap = Capture(RESPONSES_TEXT)
    openai_client(cap).responses.create(**body)
    assert cap.bodies() == [body]
    assert cap.requests[0].url.path == "/v1/responses"
    validate(strict(ResponseCreateParamsNonStreaming), body)


@pytest.mark.parametrize("exchanges", [[], EXCHANGES], ids=["first call", "tool loop"])
def test_gemini_body_is_what_the_sdk_sends(context, exchanges):
    from google.genai import types

    body = wire.build("gemini", context, exchanges, Params(model="gemini-2.5-flash", max_tokens=256))
    cap = Capture(GEMINI_TEXT)
    client = gemini_client(cap)
    client.models.generate_content(model="gemini-2.5-flash", **sdk_arguments(body))
    assert cap.bodies() == [body]
    assert cap.requests[0].url.path.endswith("/models/gemini-2.5-flash:generateContent")
    for content in body["contents"]:
        types.Content.model_validate(content)
        assert content["role"] in ("user", "model")
    types.Tool.model_validate(body["tools"][0])
    types.Content.model_validate(body["systemInstruction"])


def test_every_wire_keeps_the_same_text_in_the_same_order(context):
    """Whatever the provider, the model reads the same bytes: system, then tree, then turn."""
    texts = {}
    for name in wire.WIRES:
        body = wire.build(name, context, [], Params(model="m"))
        if name == "anthropic":
            system = "".join(b["text"] for b in body["system"])
            user = "".join(b["text"] for b in body["messages"][0]["content"] if b["type"] == "text")
        elif name == "openai-chat":
            system = body["messages"][0]["content"]
            user = "".join(p["text"] for p in body["messages"][1]["content"] if p["type"] == "text")
        elif name == "openai-responses":
            system = body["instructions"]
            user = "".join(p["text"] for p in body["input"][0]["content"] if p["type"] == "input_text")
        else:
            system = body["systemInstruction"]["parts"][0]["text"]
            user = "".join(p.get("text", "") for p in body["contents"][0]["parts"])
        texts[name] = (system, user)
    assert len(set(texts.values())) == 1
    assert texts["anthropic"] == (context.system, context.tree + context.turn)


def test_request_hash_is_canonical(context):
    body = wire.build("anthropic", context, [], Params(model="m"))
    reordered = dict(reversed(list(body.items())))
    assert wire.request_hash(body) == wire.request_hash(reordered)
    assert wire.request_hash(body) != wire.request_hash({**body, "max_tokens": 1})


def test_unknown_wire_is_a_clear_error(context):
    with pytest.raises(ValueError, match="unknown provider wire format 'mistral'"):
        wire.build("mistral", context)

"""The requests we build are what each provider's official SDK sends, and type-check against
the SDK's own parameter types."""

from __future__ import annotations

import itertools
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


# ---- OpenAI's cache controls: breakpoints from GPT-5.6 on, a session key for every model ------
BREAKPOINT_MODELS = ["gpt-5.6-sol", "gpt-6-luna", "gpt-6.2-sol"]
PREFIX_MODELS = ["gpt-4o-mini", "gpt-4.1", "gpt-5.5", "o3"]


def _send(name, body):
    """Send ``body`` through the official SDK; what went over the wire, and the strict check."""
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    chat = name == "openai-chat"
    cap = Capture(OPENAI_TEXT if chat else RESPONSES_TEXT)
    client = openai_client(cap)
    (client.chat.completions.create if chat else client.responses.create)(**body)
    validate(strict(CompletionCreateParamsNonStreaming if chat else ResponseCreateParamsNonStreaming), body)
    return cap.bodies()[0]


def _marked(body):
    """The texts of the parts a prompt_cache_breakpoint closes, in order."""
    out = []
    for item in body.get("messages") or body["input"]:
        content = item.get("content") if "content" in item else item.get("output")
        for part in content if isinstance(content, list) else ():
            if "prompt_cache_breakpoint" in part:
                assert part["prompt_cache_breakpoint"] == {"mode": "explicit"}
                out.append(part["text"])
    return out


@pytest.mark.parametrize("name", ["openai-chat", "openai-responses"])
@pytest.mark.parametrize("model", BREAKPOINT_MODELS)
@pytest.mark.parametrize("exchanges", [[], EXCHANGES], ids=["first call", "tool loop"])
def test_openai_breakpoint_models_get_marks_the_sdk_sends(context, name, model, exchanges):
    body = wire.build(name, context, exchanges, Params(model=model, max_tokens=256))
    assert _send(name, body) == body
    assert body["prompt_cache_options"] == {"mode": "explicit"}  # no implicit breakpoint: every mark is written
    assert body["prompt_cache_key"].startswith("callctx-")
    first = body["messages"][0] if name == "openai-chat" else body["input"][0]
    assert first["role"] == "developer" and "instructions" not in body
    assert "".join(p["text"] for p in first["content"]) == context.system  # the system part, as text parts
    # the context's positions: the end of each system stretch, the tree block where the call begins...
    stretches = [p["text"] for p in first["content"]]
    tree = context.segment("call_tree")
    assert tree is not None and tree.breakpoint_block is not None
    here = tree.blocks[tree.breakpoint_block]
    if not exchanges:  # ...and the one where its parent begins (no earlier call of the session to find)
        assert tree.parent_block is not None and tree.reuse_block is None
        assert _marked(body) == [*stretches, tree.blocks[tree.parent_block], here]
    else:  # ...and in a tool round the end of the loop so far and where the round before marked it;
        # past four, the first stretch goes (the latest marks cover the longest prefixes)
        assert _marked(body) == [stretches[1], here, exchanges[1].results[-1].content, exchanges[3].text]
    assert json_mentions(body, "prompt_cache_breakpoint") == len(_marked(body))


def json_mentions(body, key):
    import json

    return json.dumps(body).count(f'"{key}"')


@pytest.mark.parametrize("name", ["openai-chat", "openai-responses"])
@pytest.mark.parametrize("model", PREFIX_MODELS)
def test_openai_prefix_models_get_a_session_key_and_no_marks(context, name, model):
    body = wire.build(name, context, EXCHANGES, Params(model=model))
    assert _send(name, body) == body
    assert body["prompt_cache_key"].startswith("callctx-") and len(body["prompt_cache_key"]) <= 64
    assert json_mentions(body, "prompt_cache_breakpoint") == 0 and "prompt_cache_options" not in body
    system = body["messages"][0]["content"] if name == "openai-chat" else body["instructions"]
    assert system == context.system  # one string, as before


def test_the_session_key_is_stable_secret_free_and_per_session(tmp_path):
    from callctx import setup
    from callctx.cli.research_agent import SCRIPT, run
    from callctx.models import ScriptedModel

    keys = []
    for session in ("demo-session-1", "demo-session-2"):
        rt = setup(tmp_path / f"{session}.jsonl", session_id=session)
        try:
            bodies = [c.body for c in run(rt, model=ScriptedModel(SCRIPT, model="gpt-4.1", wire="openai-chat"))]
        finally:
            rt.close()
        assert len(bodies) > 5 and len({b["prompt_cache_key"] for b in bodies}) == 1  # every call: the same key
        key = bodies[0]["prompt_cache_key"]
        assert session not in key and "research" not in key  # a hash: no session id, no agent name
        keys.append(key)
    assert keys[0] != keys[1]  # another session, another key


@pytest.mark.parametrize("name", ["openai-chat", "openai-responses"])
def test_a_run_on_a_breakpoint_model_marks_where_the_previous_call_wrote(tmp_path, name):
    """Across a session's calls the OpenAI marks land where earlier calls put theirs: OpenAI
    finds an entry only at a breakpoint the request carries."""
    from callctx import setup
    from callctx.cli.research_agent import SKILLS, demo_workspace, run, scaled_script
    from callctx.models import ScriptedModel

    workspace, memory = demo_workspace(tmp_path, scale=2)
    rt = setup(tmp_path / "events.jsonl", workspace=workspace, memory=memory, skills=SKILLS, session_id="s")
    try:
        calls = run(rt, model=ScriptedModel(scaled_script(3), model="gpt-5.6-sol", wire=name))
    finally:
        rt.close()
    found = 0
    for prev, cur in itertools.pairwise(calls):
        assert _send(name, cur.body) == cur.body
        assert len(_marked(cur.body)) <= 4
        if cur.exchanges:
            continue
        tree = cur.context.segment("call_tree")
        written = set(_marked(prev.body))
        if tree is not None and tree.reuse_block is not None:
            assert tree.blocks[tree.reuse_block] in _marked(cur.body)
            found += tree.blocks[tree.reuse_block] in written
    assert found > len(calls) // 2


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
    for name, kind in (("openai-chat", "text"), ("openai-responses", "input_text")):  # GPT-5.6: parts, marked
        body = wire.build(name, context, [], Params(model="gpt-5.6-sol"))
        first, user_message = (body["messages"] if name == "openai-chat" else body["input"])[:2]
        system = "".join(p["text"] for p in first["content"])
        user = "".join(p["text"] for p in user_message["content"] if p["type"] == kind)
        texts[name + " breakpoints"] = (system, user)
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

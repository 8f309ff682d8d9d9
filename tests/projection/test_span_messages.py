"""The messages of a foreign model call, read from what agent frameworks actually put in their
spans: the GenAI per-message events and the ``gen_ai.client.inference.operation.details``
event (as JSON text and as structured values), structured attribute values, Google ADK's
request and response, and messages written as Python ``repr`` strings. Every span goes through
OTLP protobuf and OTLP/JSON first, so values arrive as the decoder gives them. Also: which spans
carry usage (the one-call-per-request rule), and a model call's output read from its events
in the tree, whichever of its records comes first."""

from __future__ import annotations

import json

import pytest
from helpers.received import FORMATS, received, span
from helpers.trees import parse

from callctx.projection import Projection
from callctx.projection.dialects import classify
from callctx.projection.events import SpanEnded, SpanEvent, SpanStarted
from callctx.projection.llm import Message, carries_usage, messages_of
from callctx.projection.spans import records


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)  # strands/telemetry/tracer.py serialize()


def read(sp, fmt):
    attrs, events = received(sp, fmt)
    return messages_of(attrs, events=events)


# ---- Strands Agents, default (GenAI conventions v1.36): one event per message ----------------
# strands-agents/sdk-python src/strands/telemetry/tracer.py: start_model_invoke_span adds
# _add_system_prompt_event (gen_ai.system.message, {"content": serialize(content_blocks)}) and
# _add_event_messages (gen_ai.{role}.message, or gen_ai.tool.message for a toolResult, with
# {"content": serialize(message["content"])}); end_model_invoke_span adds gen_ai.choice with
# {"finish_reason": str(stop_reason), "message": serialize(message["content"])}.
STRANDS_CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.system": "strands-agents",
    "gen_ai.request.model": "us.anthropic.claude-sonnet-4-20250514-v1:0",
    "gen_ai.event.start_time": "2026-12-02T10:00:00+00:00",
    "gen_ai.usage.prompt_tokens": 412,
    "gen_ai.usage.input_tokens": 412,
    "gen_ai.usage.completion_tokens": 31,
    "gen_ai.usage.output_tokens": 31,
    "gen_ai.usage.total_tokens": 443,
    "gen_ai.usage.cache_read_input_tokens": 256,
}
STRANDS_LEGACY_EVENTS = [
    SpanEvent("gen_ai.system.message", 1_001, {"content": dumps([{"text": "You are a weather bot."}])}),
    SpanEvent("gen_ai.user.message", 1_002, {"content": dumps([{"text": "Weather in Paris?"}])}),
    SpanEvent("gen_ai.assistant.message", 1_003, {"content": dumps([
        {"text": "Let me look."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
    ])}),
    SpanEvent("gen_ai.tool.message", 1_004, {"content": dumps([
        {"toolResult": {"toolUseId": "tooluse_1", "status": "success", "content": [{"text": "rainy, 12°C"}]}},
    ])}),
    SpanEvent("gen_ai.choice", 1_400, {"finish_reason": "end_turn",
                                       "message": dumps([{"text": "It is rainy in Paris."}])}),
]  # fmt: skip

WEATHER_MESSAGES = [
    Message("user", "Weather in Paris?"),
    Message("assistant", 'Let me look.\n[tool call get_weather({"city":"Paris"})]'),
    Message("tool", "[tool result] rainy, 12°C"),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_strands_default_per_message_events(fmt):
    rec = read(span(1, "chat", STRANDS_CHAT, STRANDS_LEGACY_EVENTS), fmt)
    assert rec.source == "gen_ai.{role}.message"
    assert rec.system == ["You are a weather bot."]
    assert rec.messages == WEATHER_MESSAGES
    assert rec.output == [Message("assistant", "It is rainy in Paris.")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_strands_agent_span_choice_is_plain_text(fmt):
    # end_agent_span: gen_ai.choice {"message": str(response), "finish_reason": ...}, not JSON
    events = [
        SpanEvent("gen_ai.user.message", 1, {"content": dumps([{"text": "Plan my day"}])}),
        SpanEvent("gen_ai.choice", 2, {"message": "[1] coffee [2] code", "finish_reason": "end_turn"}),
    ]
    rec = read(span(1, "invoke_agent Strands Agents", {"gen_ai.operation.name": "invoke_agent"}, events), fmt)
    assert rec.messages == [Message("user", "Plan my day")]
    assert rec.output == [Message("assistant", "[1] coffee [2] code")]


# ---- Strands Agents under OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental -----------
# Same file: every content goes into a gen_ai.client.inference.operation.details event, one
# per call to _add_event: the system instructions (_add_system_prompt_event), the input
# messages (_add_event_messages) and, at the end, the output messages; each a JSON string of
# OTel parts (_map_content_blocks_to_otel_parts: text / tool_call / tool_call_response).
DETAILS = "gen_ai.client.inference.operation.details"
LATEST_INPUT = [
    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    {"role": "assistant", "parts": [
        {"type": "text", "content": "Let me look."},
        {"type": "tool_call", "name": "get_weather", "id": "tooluse_1", "arguments": {"city": "Paris"}},
    ]},
    {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "tooluse_1", "response": [{"text": "rainy, 12°C"}]},
    ]},
]  # fmt: skip
LATEST_OUTPUT = [{"role": "assistant", "parts": [{"type": "text", "content": "It is rainy in Paris."}],
                  "finish_reason": "end_turn"}]  # fmt: skip
LATEST_SYSTEM = [{"type": "text", "content": "You are a weather bot."}]


@pytest.mark.parametrize("fmt", FORMATS)
def test_strands_latest_details_events_as_json_text(fmt):
    events = [
        SpanEvent(DETAILS, 1_001, {"gen_ai.system_instructions": dumps(LATEST_SYSTEM)}),
        SpanEvent(DETAILS, 1_002, {"gen_ai.input.messages": dumps(LATEST_INPUT)}),
        SpanEvent(DETAILS, 1_400, {"gen_ai.output.messages": dumps(LATEST_OUTPUT)}),
    ]
    attrs = {**STRANDS_CHAT, "gen_ai.provider.name": "strands-agents"}
    del attrs["gen_ai.system"]
    rec = read(span(1, "chat", attrs, events), fmt)
    assert rec.source == DETAILS
    assert rec.system == ["You are a weather bot."]
    assert rec.messages == WEATHER_MESSAGES
    assert rec.output == [Message("assistant", "It is rainy in Paris.")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_details_event_with_structured_values(fmt):
    # The conventions (gen-ai-events.md, gen_ai.input.messages note [10]): "When the attribute is
    # recorded on events, it MUST be recorded in structured form." One event, every key.
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [{"type": "function", "name": "get_weather", "description": "Weather in a city.", "parameters": city}]
    event = SpanEvent(DETAILS, 1_400, {"gen_ai.operation.name": "chat", "gen_ai.system_instructions": LATEST_SYSTEM,
                                       "gen_ai.input.messages": LATEST_INPUT, "gen_ai.output.messages": LATEST_OUTPUT,
                                       "gen_ai.tool.definitions": tools})  # fmt: skip
    attrs, events = received(span(1, "chat gpt-4o", {"gen_ai.operation.name": "chat"}, [event]), fmt)
    assert isinstance(events[0].attributes["gen_ai.input.messages"], list)  # structured on arrival
    rec = messages_of(attrs, events=events)
    assert (rec.source, rec.system, rec.messages) == (DETAILS, ["You are a weather bot."], WEATHER_MESSAGES)
    assert rec.output == [Message("assistant", "It is rainy in Paris.")]
    assert [(t.name, t.description) for t in rec.tools] == [("get_weather", "Weather in a city.")]
    assert json.loads(rec.tools[0].parameters) == tools[0]["parameters"]


# ---- structured attribute values ---------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_structured_attributes_read_like_json_text(fmt):
    # gen-ai-spans.md: on spans the content attributes "SHOULD be recorded in structured form"
    # (JSON text only where structured values are not supported).
    as_text = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system_instructions": dumps(LATEST_SYSTEM),
        "gen_ai.input.messages": dumps(LATEST_INPUT),
        "gen_ai.output.messages": dumps(LATEST_OUTPUT),
    }
    structured = {**as_text, "gen_ai.system_instructions": LATEST_SYSTEM, "gen_ai.input.messages": LATEST_INPUT,
                  "gen_ai.output.messages": LATEST_OUTPUT}  # fmt: skip
    a, b = read(span(1, "chat m", as_text), fmt), read(span(2, "chat m", structured), fmt)
    assert a == b
    assert (a.source, a.system, a.messages) == ("gen_ai.input.messages", ["You are a weather bot."], WEATHER_MESSAGES)


# ---- Azure AI Inference: the event body as JSON in gen_ai.event.content ------------------------
# Azure/azure-sdk-for-python sdk/ai/azure-ai-inference/azure/ai/inference/tracing.py:
# _add_request_chat_message_events (gen_ai.{role}.message, {"gen_ai.system": ...,
# "gen_ai.event.content": json.dumps(message)}) and _add_response_chat_message_events
# (gen_ai.choice, {"message": {"content", "tool_calls"}, "finish_reason", "index"} as JSON).
@pytest.mark.parametrize("fmt", FORMATS)
def test_azure_event_content(fmt):
    system = {"gen_ai.system": "az.ai.inference"}
    events = [
        SpanEvent("gen_ai.system.message", 1, {**system, "gen_ai.event.content": dumps(
            {"role": "system", "content": "You answer in French."})}),
        SpanEvent("gen_ai.user.message", 2, {**system, "gen_ai.event.content": dumps(
            {"role": "user", "content": "What's the weather like in Boston?"})}),
        SpanEvent("gen_ai.choice", 3, {**system, "gen_ai.event.content": dumps({
            "message": {"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\": \"Boston\"}"}}]},
            "finish_reason": "tool_calls", "index": 0})}),
    ]  # fmt: skip
    rec = read(span(1, "chat gpt-4o", {"gen_ai.operation.name": "chat", **system}, events), fmt)
    assert rec.system == ["You answer in French."]
    assert rec.messages == [Message("user", "What's the weather like in Boston?")]
    assert rec.output == [Message("assistant", '[tool call get_weather({"city": "Boston"})]')]


# ---- conventions before the per-message events -------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_content_prompt_and_completion_events(fmt):
    # semantic-conventions v1.27 gen-ai-spans: events gen_ai.content.prompt (attribute
    # gen_ai.prompt) and gen_ai.content.completion (gen_ai.completion), OpenAI messages as JSON
    events = [SpanEvent("gen_ai.content.prompt", 1, {"gen_ai.prompt": dumps(
                  [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])}),
              SpanEvent("gen_ai.content.completion", 2, {"gen_ai.completion": dumps(
                  [{"role": "assistant", "content": "4"}])})]  # fmt: skip
    rec = read(span(1, "chat gpt-4", {"gen_ai.operation.name": "chat"}, events), fmt)
    assert (rec.source, rec.system, rec.messages) == ("gen_ai.content.prompt", ["Be brief."], [Message("user", "2+2?")])
    assert rec.output == [Message("assistant", "4")]


# ---- PydanticAI ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_pydantic_ai_chat_span(fmt):
    # pydantic/pydantic-ai pydantic_ai_slim/pydantic_ai/models/instrumented.py handle_messages:
    # gen_ai.input.messages / gen_ai.output.messages / gen_ai.system_instructions as JSON text;
    # _otel_messages.py: tool_call_response parts carry "name" and "result", thinking parts
    # "content"; _instrumentation.py: gen_ai.tool.definitions on the chat span.
    attrs = {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
        "gen_ai.agent.name": "weather_agent",
        "gen_ai.system_instructions": dumps([{"type": "text", "content": "Be concise."}]),
        "gen_ai.input.messages": dumps([
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
            {"role": "assistant", "parts": [{"type": "thinking", "content": "I should call the tool."},
                                            {"type": "tool_call", "id": "c1", "name": "get_weather",
                                             "arguments": {"city": "Paris"}}]},
            {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "name": "get_weather",
                                        "result": "rainy"}]},
        ]),
        "gen_ai.output.messages": dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}],
                                          "finish_reason": "stop"}]),
        "gen_ai.tool.definitions": dumps([{"type": "function", "name": "get_weather", "description": "Weather.",
                                           "parameters": {"type": "object", "properties": {}}}]),
        "gen_ai.usage.input_tokens": 90, "gen_ai.usage.output_tokens": 4,
    }  # fmt: skip
    rec = read(span(1, "chat gpt-4o", attrs), fmt)
    assert rec.system == ["Be concise."]
    assert [m.text for m in rec.messages] == [
        "Weather in Paris?",
        'I should call the tool.\n[tool call get_weather({"city":"Paris"})]',
        "[tool result] rainy",
    ]
    assert rec.output == [Message("assistant", "Rainy.")]
    assert [t.name for t in rec.tools] == ["get_weather"]


# ---- Google ADK ---------------------------------------------------------------------------------
# google/adk-python src/google/adk/telemetry/tracing.py trace_call_llm: the call_llm span has no
# gen_ai.operation.name; gen_ai.system = gcp.vertex.agent, gcp.vertex.agent.llm_request =
# JSON of _build_llm_request_for_trace (model, config, contents), gcp.vertex.agent.llm_response =
# LlmResponse.model_dump_json(exclude_none=True); usage as gen_ai.usage.*.
ADK_REQUEST = {
    "model": "gemini-2.0-flash",
    "config": {
        "system_instruction": "You are a helpful weather agent.",
        "tools": [{"function_declarations": [
            {"name": "get_weather", "description": "Weather in a city.",
             "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}},
            {"name": "get_time", "description": "Local time in a city."},
        ]}],
    },
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {"role": "model", "parts": [{"function_call": {"id": "adk-1", "name": "get_weather",
                                                       "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"function_response": {"id": "adk-1", "name": "get_weather",
                                                          "response": {"result": "rainy"}}}]},
    ],
}  # fmt: skip
ADK_RESPONSE = {"content": {"role": "model", "parts": [{"text": "It is rainy in Paris."}]},
                "usage_metadata": {"prompt_token_count": 120, "candidates_token_count": 9}}  # fmt: skip
ADK_CALL = {
    "gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": "gemini-2.0-flash",
    "gcp.vertex.agent.invocation_id": "e-1", "gcp.vertex.agent.session_id": "s-1", "gcp.vertex.agent.event_id": "ev-1",
    "gcp.vertex.agent.llm_request": dumps(ADK_REQUEST), "gcp.vertex.agent.llm_response": dumps(ADK_RESPONSE),
    "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 9,
}  # fmt: skip


@pytest.mark.parametrize("fmt", FORMATS)
def test_google_adk_call_llm(fmt):
    attrs, events = received(span(1, "call_llm", ADK_CALL), fmt)
    assert classify("call_llm", attrs) == "llm"
    rec = messages_of(attrs, events=events)
    assert rec.source == "gcp.vertex.agent.llm_request"
    assert rec.system == ["You are a helpful weather agent."]
    assert rec.messages == [
        Message("user", "Weather in Paris?"),
        Message("assistant", '[tool call get_weather({"city":"Paris"})]'),
        Message("user", '[tool result] {"result":"rainy"}'),
    ]
    assert rec.output == [Message("assistant", "It is rainy in Paris.")]
    assert [t.name for t in rec.tools] == ["get_weather", "get_time"]
    assert carries_usage(attrs)


def test_adk_tool_spans_and_placeholders_are_not_messages():
    # trace_tool_call sets the llm request and response to "{}" on tool spans (and on every span
    # when ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS is off): nothing to read.
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gcp.vertex.agent.llm_request": "{}", "gcp.vertex.agent.llm_response": "{}"}  # fmt: skip
    assert classify("execute_tool get_weather", tool) == "tool"
    assert messages_of(tool).empty and messages_of(tool).source == ""


# ---- messages written as repr strings -----------------------------------------------------------
# Arize-ai/openinference python/instrumentation/openinference-instrumentation-llama-index/src/
# openinference/instrumentation/llama_index/_handler.py: process_input sets input.value =
# safe_json_dumps(bound_args.arguments, cls=_Encoder), whose _encoder falls back to repr(obj)
# for LlamaIndex's (pydantic v2) ChatMessage, which pydantic.v1's encoder does not know.
OLD_REPR = [
    "ChatMessage(role=<MessageRole.SYSTEM: 'system'>, content='You are terse.', additional_kwargs={})",
    "ChatMessage(role=<MessageRole.USER: 'user'>, content=\"What's 2+2?\", additional_kwargs={})",
]
NEW_REPR = [
    "ChatMessage(role=<MessageRole.SYSTEM: 'system'>, additional_kwargs={}, "
    "blocks=[TextBlock(block_type='text', text='You are terse.')])",
    "ChatMessage(role=<MessageRole.USER: 'user'>, additional_kwargs={}, "
    "blocks=[TextBlock(block_type='text', text=\"What's 2+2?\")])",
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("reprs", [OLD_REPR, NEW_REPR], ids=["content", "blocks"])
def test_llama_index_wrapper_span_with_repr_messages(fmt, reprs):
    attrs = {
        "openinference.span.kind": "LLM",
        "input.value": dumps({"messages": reprs, "kwargs": {}}),
        "input.mime_type": "application/json",
        # process_output: a ChatResponse (pydantic) as model_dump_json(exclude_unset=True)
        "output.value": dumps({"message": {"role": "assistant", "additional_kwargs": {},
                                           "blocks": [{"block_type": "text", "text": "4"}]}}),
        "output.mime_type": "application/json",
    }  # fmt: skip
    rec = read(span(1, "OpenAI.achat_with_tools", attrs), fmt)
    assert rec.source == "input.value"
    assert rec.system == ["You are terse."]
    assert rec.messages == [Message("user", "What's 2+2?")]
    assert rec.output == [Message("assistant", "4")]
    assert not carries_usage(attrs)  # a wrapper: the usage is on the LLM span under it


def test_repr_shapes_and_fallbacks():
    smolagents = (
        "ChatMessage(role=<MessageRole.USER: 'user'>, content=[{'type': 'text', 'text': 'Find the 'paper'.'}], "
        "tool_calls=None, raw=None, token_usage=None)"
    )
    assert messages_of({"input.value": dumps({"messages": [smolagents]})}).messages == [
        Message("user", smolagents)  # not a literal (the quotes inside are not escaped): kept whole
    ]
    smolagents_ok = smolagents.replace("'paper'", "\\'paper\\'")
    assert messages_of({"input.value": dumps({"messages": [smolagents_ok]})}).messages == [
        Message("user", "Find the 'paper'.")
    ]
    escaped = (
        "ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, content='line one\\nline two', additional_kwargs={})"
    )
    assert messages_of({"input.value": dumps({"messages": [escaped]})}).messages == [
        Message("assistant", "line one\nline two")
    ]
    langchain = "HumanMessage(content='hello there', additional_kwargs={}, response_metadata={})"
    assert messages_of({"input.value": dumps({"messages": [langchain]})}).messages == [Message("user", "hello there")]
    # a known shape with empty content (an assistant turn that only called tools): never empty
    tool_turn = ("ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, content=None, "
                 "additional_kwargs={'tool_calls': [...]})")  # fmt: skip
    unknown = "<llama_index.core.base.llms.types.ChatMessage object at 0x7f>"
    got = messages_of({"input.value": dumps({"messages": [tool_turn, unknown, "plain words"]})}).messages
    assert got == [Message("assistant", tool_turn), Message("user", unknown), Message("user", "plain words")]
    assert all(m.text for m in got)


def test_llama_index_chat_with_tools_arguments():
    # FunctionCallingLLM.chat_with_tools(tools, user_msg=None, chat_history=None, ...): bound arguments
    value = {"tools": ["<FunctionTool object>"], "user_msg": "Weather in Paris?",
             "chat_history": [OLD_REPR[0]], "verbose": False}  # fmt: skip
    rec = messages_of({"openinference.span.kind": "LLM", "input.value": dumps(value)})
    assert rec.system == ["You are terse."] and rec.messages == [Message("user", "Weather in Paris?")]


# ---- which spans carry usage: the one-call-per-request rule --------------------------------------
def test_carries_usage():
    assert carries_usage(STRANDS_CHAT)
    assert carries_usage({"llm.token_count.prompt": 120})  # the inner LlamaIndex / smolagents span
    assert carries_usage({}, {"langfuse.observation.usage_details": '{"input": 7}'})
    assert carries_usage({"gen_ai.usage.input_tokens": 0})  # reported, even if zero
    assert not carries_usage({"openinference.span.kind": "LLM", "input.value": "[]"})
    assert not carries_usage({"gen_ai.usage.input_tokens": "lots"})  # not a count


# ---- in the tree: a model call's output from its events, in any order of its records ------------
def _turn_records():
    sp = span(1, "chat", STRANDS_CHAT, STRANDS_LEGACY_EVENTS)
    return [r for r in records([sp]) if type(r) in (SpanStarted, SpanEnded)]


@pytest.mark.parametrize("end_first", [False, True])
def test_a_top_level_call_shows_the_output_its_events_carry(end_first):
    recs = _turn_records()
    p = Projection()
    p.apply_all(reversed(recs) if end_first else recs)
    assert parse(p.session_tree(recs[0].trace_id)) == [{"function": "turn", "output": "It is rainy in Paris."}]
    assert all(not (n.extra or {}).get("end_events") for n in p.nodes.values())  # nothing kept once read

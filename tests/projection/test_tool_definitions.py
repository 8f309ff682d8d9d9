"""The tools a foreign model call was offered, as a typed list in the order sent: from
``gen_ai.tool.definitions`` (JSON text or structured, on the span or in the details event),
OpenInference ``llm.tools.N.tool.json_schema`` (the frameworks' captured spans, and every shape
instrumentations write there) and OpenLLMetry ``llm.request.functions.N.*``; two calls' lists
compare entry by entry. Spans go through OTLP protobuf and OTLP/JSON first."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from helpers.received import FORMATS, received, span

from callctx.projection.events import SpanEvent
from callctx.projection.llm import messages_of, tools_of
from callctx.projection.otlp import decode_json
from callctx.projection.tooldefs import ToolDef

FIXTURES = Path(__file__).resolve().parents[1] / "frameworks" / "fixtures"
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def names(tools: list[ToolDef]) -> list[str]:
    return [t.name for t in tools]


WRITER_HAS_NO_TOOLS: list[str] = []
FRAMEWORKS = [
    ("openai_agents", [["get_weather"], ["get_weather"]]),
    ("langgraph", [["search_papers"], WRITER_HAS_NO_TOOLS]),
]


@pytest.mark.parametrize(("fixture", "expected"), FRAMEWORKS)
def test_openinference_tools_of_the_captured_frameworks(fixture, expected):
    # tests/frameworks/README.md: the Agents SDK's and LangChain's LLM spans carry
    # llm.tools.<i>.tool.json_schema (chat-completions shaped JSON), exactly as exported; the
    # LangGraph writer node's model has no tools bound
    batch = decode_json((FIXTURES / f"{fixture}.otlp.json").read_bytes())
    llm = sorted((r for r in batch.spans if r.started.attributes.get("openinference.span.kind") == "LLM"),
                 key=lambda r: r.start_ns)  # fmt: skip
    found = []
    for r in llm:
        assert r.ended is not None
        found.append(messages_of(r.started.attributes, r.ended.attributes, events=r.ended.events).tools)
    assert [names(t) for t in found] == expected
    first = found[0][0]
    assert first.description and json.loads(first.parameters)["type"] == "object"


@pytest.mark.parametrize("fmt", FORMATS)
def test_llm_tools_in_index_order_and_every_shape(fmt):
    shapes = {
        # the OpenAI envelope (openinference-instrumentation-openai-agents, -langchain, -smolagents)
        0: {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": CITY}},
        # Anthropic's tool (openinference-instrumentation-anthropic)
        1: {"name": "get_time", "description": "Time.", "input_schema": CITY},
        # flat, as the GenAI conventions and the Responses API write it
        2: {"type": "function", "name": "search", "parameters": {"type": "object", "properties": {}}},
        # a provider's own tool names only its type
        10: {"type": "web_search_preview"},
        11: {"type": "function"},  # names no tool: left out
    }
    attrs = {"openinference.span.kind": "LLM", **{f"llm.tools.{i}.tool.json_schema": json.dumps(v) for i, v in
                                                  sorted(shapes.items(), reverse=True)}}  # fmt: skip
    a, e = received(span(1, "response", attrs), fmt)
    tools = tools_of(a, events=e)
    assert names(tools) == ["get_weather", "get_time", "search", "web_search_preview"]  # 10 after 2
    assert tools[0] == ToolDef("get_weather", "Weather.", msgspec.json.encode(CITY).decode())
    assert tools[1].parameters == tools[0].parameters
    assert tools[3] == ToolDef("web_search_preview")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("structured", [False, True])
def test_genai_tool_definitions_attribute(fmt, structured):
    # pydantic_ai_slim/pydantic_ai/_instrumentation.py build_tool_definitions:
    # {"type": "function", "name", "description"?, "parameters"?} per tool, in request order
    defs = [{"type": "function", "name": "final_result", "description": "The final response.",
             "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}}},
            {"type": "function", "name": "get_weather", "parameters": CITY},
            {"type": "function", "name": "roll_dice"}]  # fmt: skip
    value = defs if structured else json.dumps(defs)
    a, e = received(span(1, "chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": value}), fmt)
    tools = tools_of(a, events=e)
    assert names(tools) == ["final_result", "get_weather", "roll_dice"]
    assert [t.description for t in tools] == ["The final response.", "", ""]
    assert [t.parameters for t in tools][1:] == [msgspec.json.encode(CITY).decode(), ""]


@pytest.mark.parametrize("fmt", FORMATS)
def test_strands_tool_definitions(fmt):
    # strands/telemetry/tracer.py _construct_tool_definitions (OTEL_SEMCONV_STABILITY_OPT_IN=
    # gen_ai_tool_definitions), on the invoke_agent span: the schema is wrapped, {"json": {...}}
    defs = [{"name": "get_weather", "description": "Weather in a city.", "inputSchema": {"json": CITY},
             "outputSchema": None},
            {"name": "calculator", "description": "Arithmetic.",
             "inputSchema": {"json": {"type": "object", "properties": {"expression": {}}}}}]  # fmt: skip
    attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Strands Agents",
        "gen_ai.agent.tools": json.dumps(["get_weather", "calculator"]),
        "gen_ai.tool.definitions": json.dumps(defs),
    }
    a, e = received(span(1, "invoke_agent Strands Agents", attrs), fmt)
    tools = tools_of(a, events=e)
    assert names(tools) == ["get_weather", "calculator"]
    assert json.loads(tools[0].parameters) == CITY


def test_openllmetry_request_functions():
    # opentelemetry-instrumentation-openai (OpenLLMetry): llm.request.functions.<i>.name /
    # .description / .parameters (JSON text)
    attrs = {"traceloop.span.kind": "llm", "llm.request.functions.0.name": "get_weather",
             "llm.request.functions.0.description": "Weather.", "llm.request.functions.0.parameters": json.dumps(CITY),
             "llm.request.functions.1.name": "get_time"}  # fmt: skip
    weather = ToolDef("get_weather", "Weather.", msgspec.json.encode(CITY).decode())
    assert tools_of(attrs) == [weather, ToolDef("get_time")]


def test_two_calls_compare_tool_by_tool():
    """What a cache-miss explainer reads: which tool was added, removed or changed."""

    def call(*tools):
        return {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": json.dumps(list(tools))}

    a = {"type": "function", "name": "a", "parameters": CITY}
    b = {"type": "function", "name": "b", "description": "Bee."}
    b2 = {**b, "description": "Bee, reworded."}
    c = {"type": "function", "name": "c"}
    first, second = tools_of(call(a, b)), tools_of(call(a, b2, c))
    assert first[0] == second[0]  # unchanged: equal
    assert first[1] != second[1] and first[1].name == second[1].name  # changed
    assert {t.name for t in second} - {t.name for t in first} == {"c"}  # added
    # key order is kept as sent: a reordered schema is another request to a prompt cache
    swapped = {"type": "function", "name": "a", "parameters": {"required": ["city"], **CITY}}
    assert tools_of(call(swapped))[0].parameters != first[0].parameters


def test_a_details_event_gives_tools_when_the_span_does_not():
    event = {"gen_ai.tool.definitions": [{"type": "function", "name": "lookup"}]}
    evs = [SpanEvent("gen_ai.client.inference.operation.details", 1, event)]
    assert names(tools_of({"gen_ai.operation.name": "chat"}, events=evs)) == ["lookup"]
    # the span's own attribute comes first
    own = {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": '[{"type": "function", "name": "own"}]'}
    assert names(tools_of(own, events=evs)) == ["own"]

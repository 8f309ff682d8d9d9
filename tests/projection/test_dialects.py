"""Foreign dialects fold into the same tree shape as ours (attribute shapes as each library
writes them; the libraries themselves run in tests/dialects, see test_dialect_libraries.py)."""

from __future__ import annotations

import json

from helpers.trees import parse

from callctx.projection import Projection
from callctx.projection.dialects import classify, conversation
from callctx.projection.spans import SpanData, records

T = "ef" * 16


def span(i, parent, name, attrs, output_attrs=None, status="unset"):
    return SpanData(T, format(i, "016x"), format(parent, "016x") if parent else None, name, i * 10, 1000 - i,
                    {**attrs, **(output_attrs or {})}, status)  # fmt: skip


def fold(spans):
    p = Projection()
    p.apply_all([r for r in records(spans) if type(r).__name__ != "Blob"])
    return p


EXPECTED = [{
    "function": "planner",
    "output": "the plan",
    "children": [
        {"function": "researcher", "status": "done"},
    ],
}]  # fmt: skip


def open_root(p):
    """The root seen from inside its first child: the child shows its input and output."""
    key = p.sessions()[0]
    return parse(p.session_tree(key))


def test_openinference():
    p = fold([
        span(1, None, "planner", {"openinference.span.kind": "AGENT", "input.value": "paris",
                                   "input.mime_type": "text/plain"}, {"output.value": "the plan"}),
        span(2, 1, "researcher", {"openinference.span.kind": "CHAIN", "input.value": '{"topic": "paris", "k": 2}',
                                   "input.mime_type": "application/json"}, {"output.value": "notes"}),
        span(3, 2, "search", {"openinference.span.kind": "TOOL", "tool.name": "search"}),
        span(4, 2, "fake_llm", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-x"}),
    ])  # fmt: skip
    assert open_root(p) == EXPECTED


def test_genai_conventions():
    p = fold([
        span(1, None, "invoke_workflow trip", {"gen_ai.operation.name": "invoke_workflow"},
             {"output.value": "the plan"}),
        span(2, 1, "invoke_agent researcher", {"gen_ai.operation.name": "invoke_agent",
                                               "gen_ai.agent.name": "researcher"}),
        span(3, 2, "execute_tool search", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                                            "gen_ai.tool.call.arguments": '{"q": "paris"}'}),
        span(4, 2, "chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                         "gen_ai.input.messages": json.dumps([{"role": "user"}])}),
    ])  # fmt: skip
    tree = open_root(p)
    assert tree[0]["function"] == "trip" and tree[0]["children"] == EXPECTED[0]["children"]


def test_langfuse():
    p = fold([
        span(1, None, "planner", {"langfuse.observation.type": "agent",
                                  "langfuse.observation.input": '{"args": ["paris"], "kwargs": {}}',
                                  "session.id": "sess-1"}, {"langfuse.observation.output": "the plan"}),
        span(2, 1, "researcher", {"langfuse.observation.type": "span",
                                  "langfuse.observation.input": '{"args": [], "kwargs": {"topic": "paris"}}'}),
        span(3, 2, "search", {"langfuse.observation.type": "tool"}),
        span(4, 2, "call_llm", {"langfuse.observation.type": "generation"}),
    ])  # fmt: skip
    assert p.sessions() == ["sess-1"]
    assert open_root(p) == EXPECTED


def test_traceloop():
    p = fold([
        span(1, None, "planner.workflow", {"traceloop.span.kind": "workflow", "traceloop.entity.name": "planner",
                                           "traceloop.entity.input": '{"args": ["paris"], "kwargs": {}}',
                                           "traceloop.association.properties.session_id": "s-9"},
             {"traceloop.entity.output": json.dumps("the plan")}),
        span(2, 1, "researcher.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"}),
        span(3, 2, "search.tool", {"traceloop.span.kind": "tool", "traceloop.entity.name": "search"}),
        span(4, 2, "GET", {"http.method": "GET"}),  # auto-instrumented HTTP: transparent
    ])  # fmt: skip
    assert p.sessions() == ["s-9"]
    assert open_root(p) == EXPECTED


def test_inputs_of_every_dialect_render_as_arguments():
    from callctx.projection.events import SpanStarted

    wrapped = '{"args": [], "kwargs": {"topic": "paris"}}'
    plain = '{"topic": "paris"}'
    for attrs in (
        {"openinference.span.kind": "AGENT", "input.value": plain, "input.mime_type": "application/json"},
        {"langfuse.observation.type": "agent", "langfuse.observation.input": wrapped},
        {"traceloop.span.kind": "agent", "traceloop.entity.input": wrapped},
    ):
        p = Projection()
        p.apply(SpanStarted(T, "0" * 15 + "1", None, "agent", 1, attrs))  # still running: its input shows
        assert parse(p.view("0" * 15 + "1").text)[0]["input"] == {"topic": "paris"}, attrs


def test_classification_and_sessions():
    assert classify("x", {"langfuse.observation.type": "retriever"}) == "other"
    assert classify("x", {"traceloop.span.kind": "task"}) == "agentic"
    assert classify("x", {"openinference.span.kind": "RETRIEVER"}) == "other"
    assert conversation({"session.id": "a"}) == "a"
    assert conversation({"gen_ai.conversation.id": "b", "session.id": "a"}) == "b"

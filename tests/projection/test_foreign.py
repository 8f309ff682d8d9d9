"""Spans other instrumentations wrote: their model calls are calls (with usage, model,
provider, function), a trace of model calls alone still has a tree, and nothing is lost
through the log, OTLP/JSON and Jaeger JSON: usage, resources, kinds, statuses, events, links."""

from __future__ import annotations

import json

import pytest
from helpers.stores import calls_in, log_of
from helpers.trees import parse

from callctx.cli.main import main
from callctx.projection import Projection, jaeger
from callctx.projection.events import SpanEvent, SpanLink
from callctx.projection.llm import messages_of
from callctx.projection.otlp import decode_json, encode_json
from callctx.projection.spans import SpanData, from_log, records
from callctx.store.contexts import reconstruct
from callctx.store.local import LocalStore

T = "ab" * 16


def sid(i: int) -> str:
    return format(i, "016x")


def span(i, parent, name, attrs, *, start=None, service="shop-agent", **kw):
    start = start if start is not None else 1_000 * i
    return SpanData(T, sid(i), sid(parent) if parent else None, name, start, start + 500, attrs,
                    resource={"service.name": service, "service.instance.id": f"{service}-1",
                              "telemetry.sdk.language": "python"}, **kw)  # fmt: skip


LLM = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4o-mini",
    "llm.provider": "openai",
    "llm.token_count.prompt": 120,
    "llm.token_count.completion": 30,
    "llm.token_count.prompt_details.cache_read": 64,
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "You are terse.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.contents.0.message_content.type": "text",
    "llm.input_messages.1.message.contents.0.message_content.text": "What is 2+2?",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "4",
}


def test_a_trace_of_model_calls_alone_has_a_tree_of_turns():
    p = Projection()
    p.apply_all(records([span(1, None, "ChatOpenAI", LLM), span(2, None, "ChatOpenAI", LLM, start=5_000)]))
    tree = parse(p.session_tree(T))
    assert tree == [{"function": "turn", "output": "4"}, {"function": "turn", "output": "4"}]


def test_foreign_calls_are_calls_and_aggregates_are_not():
    agent = {"openinference.span.kind": "AGENT", "agent.name": "Shopper",
             "llm.token_count.prompt": 9999}  # an agent span with a whole run's usage: not a call  # fmt: skip
    spans = [
        span(1, None, "run", agent),
        span(2, 1, "http GET", {}),  # a plain span: transparent
        span(3, 2, "response", LLM, status="error", error="RateLimitError: slow down"),
        span(4, 1, "gen_ai chat", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-sonnet-4-5",
                                   "gen_ai.provider.name": "anthropic", "gen_ai.usage.input_tokens": 50,
                                   "gen_ai.usage.output_tokens": 5,
                                   "gen_ai.usage.cache_creation.input_tokens": 40}),
        span(5, 1, "generation", {"langfuse.observation.type": "generation",
                                  "langfuse.observation.model.name": "gemini-2.5-flash",
                                  "langfuse.observation.usage_details": '{"input": 7, "output": 3}'}),
        span(6, 1, "openai.chat", {"traceloop.span.kind": "llm", "gen_ai.request.model": "gpt-4.1",
                                   "gen_ai.usage.prompt_tokens": 11, "gen_ai.usage.completion_tokens": 2,
                                   "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hello",
                                   "gen_ai.completion.0.role": "assistant",
                                   "gen_ai.completion.0.content": "hi"}),
    ]  # fmt: skip
    spans[5].attributes["openinference.span.kind"] = "LLM"  # OpenLLMetry marks LLM spans as kind LLM too
    log = log_of(records(spans))
    calls = calls_in(log)
    assert [(c.model, c.function, c.status) for c in calls] == [
        ("gpt-4o-mini", "Shopper", "error"),
        ("claude-sonnet-4-5", "Shopper", "ok"),
        ("gemini-2.5-flash", "Shopper", "ok"),
        ("gpt-4.1", "Shopper", "ok"),
    ]
    assert calls[0].usage.counts() == {"input": 120, "output": 30, "cache_read": 64}
    assert calls[1].usage.counts() == {"input": 50, "output": 5, "cache_write": 40} and calls[1].provider == "anthropic"
    assert calls[2].usage.counts() == {"input": 7, "output": 3}
    assert all(c.foreign and c.service == "shop-agent" and c.latency_ms == 0.0005 for c in calls)
    assert 9999 not in [c.usage.input for c in calls]
    with LocalStore(log) as store:
        first = reconstruct(store.recorded(calls[0])).messages
        assert first.system == ["You are terse."] and first.messages[0].text == "What is 2+2?"
        assert first.output[0].text == "4"
        assert [m.text for m in reconstruct(store.recorded(calls[3])).messages.messages] == ["hello"]


@pytest.mark.parametrize("parts", [True, False])
def test_genai_messages_in_both_forms(parts):
    if parts:
        sent = [
            {"role": "user", "parts": [{"type": "text", "content": "Plan a trip"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "name": "search", "arguments": {"q": "x"}}]},
        ]
    else:
        sent = [
            {"role": "user", "content": "Plan a trip"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": '{"q": "x"}'}}]},
        ]
    attrs = {"gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
             "gen_ai.input.messages": json.dumps(sent)}  # fmt: skip
    rec = messages_of(attrs)
    assert rec.system == ["Be brief."]
    assert rec.messages[0].text == "Plan a trip" and "search" in rec.messages[1].text


def _everything():
    a = span(
        1,
        None,
        "invoke_agent planner",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"},
        kind=2,
        events=[SpanEvent("exception", 1_100, {"exception.type": "ValueError", "exception.message": "x"})],
        links=[SpanLink("cd" * 16, sid(9), {"why": "retry of"})],
        status="error",
        error="ValueError: x",
    )
    b = span(
        2,
        1,
        "chat gpt-4o-mini",
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 12},
        service="model-gateway",
        kind=3,
    )
    return [a, b]  # fmt: skip


@pytest.mark.parametrize("fmt", ["otlp", "jaeger"])
def test_nothing_is_lost_through_the_log_export_and_import(tmp_path, fmt):
    log = tmp_path / "in.jsonl"
    log.write_bytes(b"".join(__import__("callctx.projection.events", fromlist=["encode"]).encode(r)
                             for r in records(_everything())))  # fmt: skip
    again = list(from_log(log))
    assert [s.service for s in again] == ["shop-agent", "model-gateway"]
    assert again[0].kind == 2 and again[1].kind == 3
    assert again[0].links == [SpanLink("cd" * 16, sid(9), {"why": "retry of"})]
    assert [e.name for e in again[0].events] == ["exception"] and again[0].status == "error"
    assert again[0].resource["service.instance.id"] == "shop-agent-1"
    out = tmp_path / f"out.{fmt}.json"
    assert main(["export", str(log), "--format", fmt, "--raw", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    if fmt == "otlp":
        assert len(doc["resourceSpans"]) == 2  # one resource per service
    else:
        assert sorted(p["serviceName"] for p in doc["data"][0]["processes"].values()) == ["model-gateway", "shop-agent"]
    back = tmp_path / "back.jsonl"
    assert main(["import", str(out), "-o", str(back)]) == 0
    spans = list(from_log(back))
    assert [(s.service, s.kind, s.status) for s in spans] == [(s.service, s.kind, s.status) for s in again]
    ids = [(lk.trace_id, lk.span_id) for lk in spans[0].links]
    assert ids == [(lk.trace_id, lk.span_id) for lk in again[0].links]  # Jaeger references carry no attributes
    assert fmt == "jaeger" or spans[0].links == again[0].links
    assert [e.name for e in spans[0].events] == ["exception"]
    assert spans[0].resource.get("service.instance.id") == "shop-agent-1"
    calls = calls_in(back)
    assert calls[0].usage.counts() == {"input": 12} and calls[0].service == "model-gateway"


def test_otlp_json_and_jaeger_keep_resources_per_service():
    from_otlp = decode_json(json.dumps(encode_json(_everything())).encode())
    from_jaeger = jaeger.decode(jaeger.encode(_everything()))
    services = [["shop-agent", "model-gateway"]] * 2
    assert [[r.started.service for r in b.spans] for b in (from_otlp, from_jaeger)] == services
    assert [r.started.kind for r in from_otlp.spans] == [r.started.kind for r in from_jaeger.spans] == [2, 3]

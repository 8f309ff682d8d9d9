"""LlamaIndex's agents as OpenInference traces them: three LLM-kind spans for one request to
the provider (the outer ``predict_and_call`` wrapper, a ``_prepare_chat_with_tools``
preparation under it, and the client's ``chat`` that carries the usage)."""

from __future__ import annotations

import json

from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted

TRACE = "cd" * 16
LLM = {s.SPAN_KIND: "LLM"}


def span(n: int, parent: int | None, name: str, start: int, end: int, attrs=None, usage=None) -> tuple:
    sid, pid = format(n, "016x"), format(parent, "016x") if parent else None
    started = SpanStarted(TRACE, sid, pid, name, start, {**LLM, **(attrs or {})} if name != "agent" else
                          {s.SPAN_KIND: "AGENT", s.AGENT_NAME: "support"})  # fmt: skip
    ended = SpanEnded(TRACE, sid, end, "ok", None, usage or {})
    return started, ended


def llama_request() -> list:
    """An agent span, and the three LLM spans of one request under it."""
    said = json.dumps(["ChatMessage(role=<MessageRole.USER: 'user'>, content='What is the refund policy?')"])
    out = []
    for pair in (
        span(1, None, "agent", 0, 100),
        span(2, 1, "OpenAI.predict_and_call", 10, 90, {s.INPUT_VALUE: said, "llm.model_name": "gpt-4o"}),
        span(3, 2, "OpenAI._prepare_chat_with_tools", 11, 12, {"llm.model_name": "gpt-4o"}),
        span(4, 2, "OpenAI.chat", 13, 80, {"llm.model_name": "gpt-4o", "llm.input_messages.0.message.role": "user",
                                           "llm.input_messages.0.message.content": "What is the refund policy?"},
             {"llm.token_count.prompt": 1200, "llm.token_count.completion": 30}),
    ):  # fmt: skip
        out += pair
    return out

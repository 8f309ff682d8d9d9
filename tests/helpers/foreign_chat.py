"""A framework agent's session as another instrumentation traces it (GenAI chat spans with
their system text, messages and reported cache use), with cache busters at known calls."""

from __future__ import annotations

import json

from callctx.components import cache
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted

MODEL = "claude-sonnet-4-5"
SYSTEM = " ".join(f"rule{i}" for i in range(2500))  # well over the model's minimum
T0 = 1_800_000_000 * 10**9


def chat(n: int, *, at: float, system: str = SYSTEM, user: str = "hello", read: int | None = 0, write: int = 0,
         model: str = MODEL, provider: str = "anthropic", trace: str = "ab" * 16) -> list:  # fmt: skip
    """A GenAI chat span another instrumentation recorded: its system text and messages, and the
    cache read and write its provider reported."""
    span = format(n, "016x")
    start = T0 + int(at * 1e9)
    attrs = {
        s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: model, "gen_ai.provider.name": provider,
        s.SYSTEM_INSTRUCTIONS: json.dumps([{"type": "text", "content": system}]),
        s.INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
        "service.name": "support",
    }  # fmt: skip
    end: dict = {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}
    if read is not None:  # None: the provider reported no cache figures
        end |= {s.USAGE_CACHE_READ: read, s.USAGE_CACHE_WRITE: write}
    return [
        SpanStarted(trace, span, None, f"chat {model}", start, attrs),
        SpanEnded(trace, span, start + 10**6, "ok", None, end),
    ]


PREFIX = len(cache.Tokenizer()(SYSTEM))  # what a cache keeps of these requests: the system text, before the turn


def session(reported: bool = True) -> list:
    """Five calls: a first, a hit, a timestamp in the system text, a pause past the TTL, a switch
    of model; with ``reported``, the cache read and write a caching provider would report."""
    stamped = SYSTEM.replace("rule1200", "2026-12-02T10:00:00Z")
    if not reported:
        # an automatic prefix cache (no breakpoints to ask for) whose usage says nothing of it
        return [
            r
            for n, at in enumerate((0, 10, 20), 1)
            for r in chat(n, at=at, read=None, model="gpt-4o", provider="openai")
        ]
    return [
        *chat(1, at=0, write=PREFIX),
        *chat(2, at=10, user="hello again", read=PREFIX),
        *chat(3, at=20, system=stamped, write=PREFIX),
        *chat(4, at=400, system=stamped, user="later"),
        *chat(5, at=410, system=stamped, user="later", model="claude-opus-4-6"),
    ]

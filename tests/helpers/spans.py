"""Synthetic span streams for fold tests: trees of agentic, llm, tool and plain spans."""

from __future__ import annotations

import itertools
import json

from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted

_ids = itertools.count(1)


def sid() -> str:
    return format(next(_ids), "016x")


class Builder:
    """Makes complete spans with increasing timestamps, like a real (sequential) program."""

    def __init__(self, trace_id: str = "ab" * 16, conversation: str | None = None) -> None:
        self.trace_id = trace_id
        self.conversation = conversation
        self.clock = 1_000
        self.events: list = []

    def tick(self) -> int:
        self.clock += 10
        return self.clock

    def span(
        self,
        name,
        parent=None,
        *,
        kind="agentic",
        output=None,
        status="ok",
        children=(),
        attrs=None,
        expose=None,
        error=None,
    ):
        """Emit a span (and, recursively, its children built by the ``children`` callables)."""
        span_id = sid()
        a = dict(attrs or {})
        if kind == "agentic":
            a.update(
                {
                    s.OPERATION: s.OP_INVOKE_AGENT,
                    s.AGENT_NAME: name,
                    s.SPAN_KIND: "AGENT",
                    s.INPUT_VALUE: json.dumps({"q": name}),
                    s.INPUT_MIME: s.MIME_JSON,
                }
            )
            if expose:
                a[s.EXPOSE] = expose
        elif kind == "llm":
            a.update({s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: name, s.INPUT_VALUE: "prompt"})
        elif kind == "tool":
            a.update({s.OPERATION: s.OP_EXECUTE_TOOL, s.TOOL_NAME: name, s.TOOL_ARGUMENTS: "{}"})
        if self.conversation and parent is None:
            a[s.CONVERSATION] = self.conversation
        self.events.append(SpanStarted(self.trace_id, span_id, parent, name, self.tick(), a))
        for child in children:
            child(self, span_id)
        end_attrs = {}
        if output is not None:
            end_attrs = {s.OUTPUT_VALUE: output, s.OUTPUT_MIME: s.MIME_TEXT}
        self.events.append(SpanEnded(self.trace_id, span_id, self.tick(), status, error, end_attrs))
        return span_id


def leaf(name, **kw):
    return lambda b, parent: b.span(name, parent, **kw)


def node(name, *children, **kw):
    return lambda b, parent: b.span(name, parent, children=children, **kw)

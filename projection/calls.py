"""A model call as every reader lists it, its usage, its status, and how calls are numbered.

One shape, :class:`ModelCall`, for callctx's own ``chat`` spans (they carry a manifest of
what they were sent, so their request is rebuilt and hash-verified) and for the model calls
other instrumentations trace (OpenInference ``LLM``, GenAI ``chat`` / ``text_completion`` /
``generate_content``, Langfuse ``generation``, OpenLLMetry LLM spans: their messages are
reconstructed from the span, not verified).

Numbering: calls are numbered from 1 in the order they started, then by span id
(:func:`call_order`), over everything a log or store holds. A call that arrives late with an
earlier start renumbers the ones after it, as a fresh read would; a store answers with the
same order (``ORDER BY start_ns, span_id``).

A call runs in the function of its nearest agentic ancestor (:mod:`callctx.projection.ancestry`);
none: a top-level turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec

from . import schema as s
from .llm import model_of, provider_of, usage_of

RunStatus = Literal["running", "ok", "error", "interrupted"]
"""Where a span, a call or a tree stands for a reader: still running, ended well, ended in an
error, or never ended and never will (its writer is gone, or the log says it was cut off)."""

RUN_STATUSES: tuple[RunStatus, ...] = ("running", "ok", "error", "interrupted")


class Usage(msgspec.Struct, frozen=True, omit_defaults=True):
    """Tokens of one model call, as its span reports them (None: not reported).

    ``input`` is the provider's input count as the span carries it: callctx's own calls and
    OpenAI-style providers count cached tokens in it; some instrumentations of Anthropic do not.
    """

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None

    @classmethod
    def of(cls, *layers: Mapping[str, Any]) -> Usage:
        """The usage a span's attributes report (later layers win: pass start, then end)."""
        found = usage_of(*layers)
        return cls(found.get("input"), found.get("output"), found.get("cache_read"), found.get("cache_write"))

    def plus(self, other: Usage) -> Usage:
        """Both added up (a field reported by neither stays None)."""

        def add(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else a + b

        return Usage(
            add(self.input, other.input),
            add(self.output, other.output),
            add(self.cache_read, other.cache_read),
            add(self.cache_write, other.cache_write),
        )

    def counts(self) -> dict[str, int]:
        """The reported fields, by name (what the read API and the page show)."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class ModelCall(msgspec.Struct, kw_only=True):
    """One model call, numbered from 1 in start order (:func:`call_order`).

    ``manifest`` is set for callctx's own calls (rebuilt and hash-verified); a call another
    instrumentation traced has none (its context is reconstructed from its span). ``path`` is
    the functions of the agentic calls it ran under, the outermost first; ``function`` the
    innermost of them (None: a top-level turn). ``tree`` is the session or trace it belongs to.
    ``agent_span`` is the span id of that innermost agentic call (its nearest agentic
    ancestor), and ``excerpt`` the first words of that call's input, on one line (None: not
    known, or no input), so that calls of one function can be told apart.
    """

    index: int = 0
    trace_id: str
    span_id: str
    parent_id: str | None = None
    start_ns: int
    end_ns: int | None = None
    provider: str | None = None
    model: str | None = None
    function: str | None = None
    path: list[str] = msgspec.field(default_factory=list)
    manifest: str | None = None
    status: RunStatus = "running"
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    service: str | None = None
    session: str | None = None
    tree: str | None = None
    agent_span: str | None = None
    excerpt: str | None = None

    @property
    def foreign(self) -> bool:
        """Traced by another instrumentation: its context is reconstructed, not verified."""
        return self.manifest is None

    @property
    def call_path(self) -> str | None:
        """The path as a person reads it: ``research → read``."""
        return " → ".join(self.path) if self.path else None

    @property
    def latency_ms(self) -> float | None:
        return (self.end_ns - self.start_ns) / 1e6 if self.end_ns is not None else None


def call_order(call: ModelCall) -> tuple[int, str]:
    """The key calls are numbered by: start time, then span id."""
    return call.start_ns, call.span_id


def number(calls: Iterable[ModelCall]) -> list[ModelCall]:
    """``calls`` sorted by :func:`call_order` and numbered from 1 (in place)."""
    out = sorted(calls, key=call_order)
    for i, call in enumerate(out, start=1):
        call.index = i
    return out


def model_call(
    *,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    start_ns: int,
    start: Mapping[str, Any],
    end: Mapping[str, Any] | None = None,
    end_ns: int | None = None,
    status: RunStatus = "running",
    error: str | None = None,
    service: str | None = None,
    session: str | None = None,
) -> ModelCall:
    """A model call from its span: the start's attributes and, once it ended, the end's.

    For callctx's own calls, the function and path are the ones the runtime recorded on the
    span; for others, the caller resolves them from the span's ancestors
    (:func:`callctx.projection.ancestry.agentic_chain`)."""
    end_attrs = end or {}
    ours = start.get(s.CONTEXT)
    path: list[str] = []
    function = None
    if isinstance(ours, str):
        fn = start.get(s.FUNCTION)
        function = fn if isinstance(fn, str) else None
        recorded = start.get(s.CALL_PATH)
        if isinstance(recorded, str) and recorded:
            path = recorded.split(" → ")
    return ModelCall(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        start_ns=start_ns,
        end_ns=end_ns,
        provider=provider_of(start, end_attrs),
        model=model_of(start, end_attrs),
        function=function,
        path=path,
        manifest=ours if isinstance(ours, str) else None,
        status=status,
        error=error,
        usage=Usage.of(start, end_attrs),
        service=service,
        session=session,
    )


__all__ = ["RUN_STATUSES", "ModelCall", "RunStatus", "Usage", "call_order", "model_call", "number"]

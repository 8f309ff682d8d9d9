"""The model calls a log recorded: our own ``chat`` spans, each with the manifest of what it
was sent, and the model calls other instrumentations traced (OpenInference ``LLM``, GenAI
``chat`` / ``text_completion`` / ``generate_content``, Langfuse ``generation``, OpenLLMetry
LLM spans), with the texts the manifests point to.

A call runs in the function of its nearest agentic ancestor (none: a top-level turn). Usage
is read from a span's start and end attributes alike: a span that arrived whole (OTLP, a
file) carries everything on its start record.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from . import schema as s
from .dialects import classify, function_name
from .events import Blob, Record, SpanEnded, SpanStarted
from .llm import model_of, provider_of, usage_of
from .log import Damage, read_log


class ModelCall(msgspec.Struct):
    """One model call, numbered from 1 in the order the calls started.

    ``manifest`` is set for callctx's own calls (rebuilt and hash-verified from the log);
    a call another instrumentation traced has none, and keeps its span's ``attributes`` so
    its messages can be reconstructed (not verified)."""

    index: int
    trace_id: str
    span_id: str
    parent_id: str | None
    start_ns: int
    end_ns: int | None = None
    provider: str | None = None
    model: str | None = None
    function: str | None = None
    call_path: str | None = None
    manifest: str | None = None
    status: Literal["running", "ok", "error"] = "running"
    error: str | None = None
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    service: str | None = None
    attributes: dict[str, Any] | None = None  # foreign calls only: start and end attributes merged

    @property
    def foreign(self) -> bool:
        """Traced by another instrumentation: its context is reconstructed, not verified."""
        return self.manifest is None

    @property
    def latency_ms(self) -> float | None:
        return (self.end_ns - self.start_ns) / 1e6 if self.end_ns is not None else None


class _Span(msgspec.Struct):
    parent_id: str | None
    kind: str
    function: str
    start: SpanStarted
    end: SpanEnded | None = None


def calls_of(records: Iterable[Record]) -> tuple[list[ModelCall], dict[str, str]]:
    """(the model calls, the stored texts by hash) of a stream of records."""
    spans: dict[str, _Span] = {}
    ends: dict[str, SpanEnded] = {}
    blobs: dict[str, str] = {}
    for rec in records:
        t = type(rec)
        if t is Blob:
            blobs[rec.hash] = rec.text  # type: ignore[union-attr]
        elif t is SpanStarted:
            if rec.span_id not in spans:  # type: ignore[union-attr]
                a = rec.attributes  # type: ignore[union-attr]
                kind = classify(rec.name, a)  # type: ignore[union-attr]
                spans[rec.span_id] = _Span(rec.parent_id, kind, function_name(rec.name, kind, a), rec)  # type: ignore[union-attr]
        elif t is SpanEnded:
            ends.setdefault(rec.span_id, rec)  # type: ignore[union-attr]
    out: list[ModelCall] = []
    for span_id, sp in spans.items():
        if sp.kind != "llm":
            continue
        start = sp.start
        end = ends.get(span_id)
        a = start.attributes
        end_attrs = end.attributes if end is not None else {}
        ours = a.get(s.CONTEXT)
        call = ModelCall(
            index=0,
            trace_id=start.trace_id,
            span_id=span_id,
            parent_id=start.parent_id,
            start_ns=start.start_ns,
            end_ns=end.end_ns if end is not None else None,
            provider=provider_of(a, end_attrs),
            model=model_of(a, end_attrs),
            function=a.get(s.FUNCTION) if ours else _caller(spans, start.parent_id),
            call_path=a.get(s.CALL_PATH) if ours else _path(spans, start.parent_id),
            manifest=ours if isinstance(ours, str) else None,
            usage=usage_of(a, end_attrs),
            service=start.service,
            attributes=None if isinstance(ours, str) else {**a, **end_attrs},
        )
        if end is not None:
            call.status = "error" if end.status == "error" else "ok"
            call.error = end.error
        out.append(call)
    out.sort(key=lambda c: (c.start_ns, c.span_id))
    for i, call in enumerate(out, start=1):
        call.index = i
    return out, blobs


def _agentic_chain(spans: dict[str, _Span], parent_id: str | None) -> list[str]:
    """The functions of the agentic ancestors, nearest first (plain spans are transparent)."""
    names: list[str] = []
    seen: set[str] = set()
    while parent_id is not None and parent_id in spans and parent_id not in seen:
        seen.add(parent_id)
        sp = spans[parent_id]
        if sp.kind == "agentic":
            names.append(sp.function)
        parent_id = sp.parent_id
    return names


def _caller(spans: dict[str, _Span], parent_id: str | None) -> str | None:
    chain = _agentic_chain(spans, parent_id)
    return chain[0] if chain else None


def _path(spans: dict[str, _Span], parent_id: str | None) -> str | None:
    chain = _agentic_chain(spans, parent_id)
    return " → ".join(reversed(chain)) if chain else None


def read_calls(
    path: str | os.PathLike[str], *, damage: list[Damage] | None = None
) -> tuple[list[ModelCall], dict[str, str]]:
    """(the model calls, the stored texts by hash) of a log."""
    return calls_of(read_log(path, damage=damage))

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


class SpanInfo(msgspec.Struct):
    """What a ledger keeps of one span: its place, kind and displayed name, its records."""

    parent_id: str | None
    kind: str
    function: str
    start: SpanStarted
    end: SpanEnded | None = None


class CallLedger:
    """The model calls of a stream of records, kept up to date as records arrive (a log being
    written, a live receiver). :func:`calls_of` is one pass of it.

    Calls are numbered from 1 in start order (then span id), over the whole stream: a call
    that arrives late with an earlier start renumbers the ones after it, as a fresh read of
    the log would. Threading: not thread-safe; callers serialise ``add`` and reads.
    """

    def __init__(self) -> None:
        self.spans: dict[str, SpanInfo] = {}
        self.blobs: dict[str, str] = {}
        self._ends: dict[str, SpanEnded] = {}  # ends whose start has not arrived
        self._llm: list[str] = []  # model-call span ids, unordered
        self._calls: list[ModelCall] | None = None
        self._by_span: dict[str, ModelCall] = {}

    def add(self, rec: Record) -> None:
        t = type(rec)
        if t is Blob:
            self.blobs[rec.hash] = rec.text  # type: ignore[union-attr]
        elif t is SpanStarted:
            sid = rec.span_id  # type: ignore[union-attr]
            if sid not in self.spans:
                a = rec.attributes  # type: ignore[union-attr]
                kind = classify(rec.name, a)  # type: ignore[union-attr]
                info = SpanInfo(rec.parent_id, kind, function_name(rec.name, kind, a), rec)  # type: ignore[union-attr,arg-type]
                info.end = self._ends.pop(sid, None)
                self.spans[sid] = info
                if kind == "llm":
                    self._llm.append(sid)
                self._calls = None
        elif t is SpanEnded:
            sid = rec.span_id  # type: ignore[union-attr]
            info = self.spans.get(sid)
            if info is None:
                self._ends.setdefault(sid, rec)  # type: ignore[arg-type]
            elif info.end is None:
                info.end = rec  # type: ignore[assignment]
                if info.kind == "llm":
                    self._by_span.pop(sid, None)
                self._calls = None

    def calls(self) -> list[ModelCall]:
        """Every model call so far, numbered. The list and its calls are rebuilt only for
        what changed since the last read; treat them as read-only."""
        if self._calls is None:
            out = []
            for sid in self._llm:
                call = self._by_span.get(sid)
                if call is None or (call.manifest is None and call.function is None):
                    call = self._by_span[sid] = self._call(sid, self.spans[sid])
                out.append(call)
            out.sort(key=lambda c: (c.start_ns, c.span_id))
            for i, call in enumerate(out, start=1):
                call.index = i
            self._calls = out
        return self._calls

    def _call(self, span_id: str, sp: SpanInfo) -> ModelCall:
        start, end = sp.start, sp.end
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
            function=a.get(s.FUNCTION) if ours else _caller(self.spans, start.parent_id),
            call_path=a.get(s.CALL_PATH) if ours else _path(self.spans, start.parent_id),
            manifest=ours if isinstance(ours, str) else None,
            usage=usage_of(a, end_attrs),
            service=start.service,
            attributes=None if isinstance(ours, str) else {**a, **end_attrs},
        )
        if end is not None:
            call.status = "error" if end.status == "error" else "ok"
            call.error = end.error
        return call


def calls_of(records: Iterable[Record]) -> tuple[list[ModelCall], dict[str, str]]:
    """(the model calls, the stored texts by hash) of a stream of records."""
    ledger = CallLedger()
    for rec in records:
        ledger.add(rec)
    return ledger.calls(), ledger.blobs


def _agentic_chain(spans: dict[str, SpanInfo], parent_id: str | None) -> list[str]:
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


def _caller(spans: dict[str, SpanInfo], parent_id: str | None) -> str | None:
    chain = _agentic_chain(spans, parent_id)
    return chain[0] if chain else None


def _path(spans: dict[str, SpanInfo], parent_id: str | None) -> str | None:
    chain = _agentic_chain(spans, parent_id)
    return " → ".join(reversed(chain)) if chain else None


def read_calls(
    path: str | os.PathLike[str], *, damage: list[Damage] | None = None
) -> tuple[list[ModelCall], dict[str, str]]:
    """(the model calls, the stored texts by hash) of a log."""
    return calls_of(read_log(path, damage=damage))

"""Complete spans, format-neutral: the form a span is encoded from (OTLP, Jaeger JSON).

:func:`from_log` reads an event log back into complete :class:`SpanData`, which the encoders
(:mod:`.otlp`, :mod:`.jaeger`) and export shaping write out; decoding goes the other way
straight to records (:mod:`.batch`), never through this form. Texts a model call was sent
travel with the chat span as ``callctx.blob`` events (hash and text), so a receiver far from
the agent can rebuild the call's context too; a span that never ended is marked
``callctx.interrupted``, so it reads as interrupted again once imported.

Pure functions; :func:`from_log` raises :class:`~callctx.projection.log.LogError` for a log
that cannot be read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from . import batch
from . import schema as s
from .events import (
    DEFAULT_KIND,
    Blob,
    Dropped,
    Origin,
    Record,
    SpanEnded,
    SpanEvent,
    SpanKind,
    SpanLink,
    SpanStarted,
    SpanStatus,
)
from .log_reader import read_log
from .manifest import ManifestError
from .manifest import decode as decode_manifest
from .schema import BLOB_EVENT, INTERRUPTED


class SpanData(msgspec.Struct):
    trace_id: str  # 32 hex
    span_id: str  # 16 hex
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)
    status: SpanStatus = "unset"
    error: str | None = None
    kind: SpanKind = DEFAULT_KIND
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    resource: dict[str, Any] = msgspec.field(default_factory=dict)  # service.name, service.instance.id, ...
    scope: str | None = None
    links: list[SpanLink] = msgspec.field(default_factory=list)
    origin: Origin | None = None  # trace state, flags, the scope's version..., as the span came
    dropped: Dropped | None = None  # what its sender dropped

    @property
    def service(self) -> str | None:
        name = self.resource.get("service.name")
        return name if isinstance(name, str) else None

    def resource_or(self, service: str) -> dict[str, Any]:
        """The span's resource, named ``service`` when it names none (or only the SDK's
        ``unknown_service`` placeholder)."""
        name = self.service
        if name and not name.startswith("unknown_service"):
            return self.resource
        return {**self.resource, "service.name": service}


def to_records(span: SpanData) -> list[Record]:
    """The fold's view of a complete span (:func:`~callctx.projection.batch.received`): its
    texts, then a start and an end."""
    r = batch.received(
        span.trace_id, span.span_id, span.parent_id, span.name, span.start_ns, span.end_ns, span.attributes,
        span.status, span.error, span.kind, span.events, span.resource, span.scope, span.links, span.origin,
        span.dropped,
    )  # fmt: skip
    return batch.records(batch.Batch([r]))


def from_log(path: str | os.PathLike[str]) -> Iterator[SpanData]:
    """The spans of an event log, complete (a span never ended ends where it started and is
    marked ``callctx.interrupted``); each text rides on the first chat span that uses it."""
    starts: dict[str, SpanStarted] = {}
    ends: dict[str, SpanEnded] = {}
    blobs: dict[str, str] = {}
    order: list[str] = []
    for rec in read_log(path):
        if type(rec) is SpanStarted:
            if rec.span_id not in starts:
                starts[rec.span_id] = rec
                order.append(rec.span_id)
        elif type(rec) is SpanEnded:
            ends.setdefault(rec.span_id, rec)
        elif type(rec) is Blob:
            blobs[rec.hash] = rec.text
    sent: set[str] = set()
    resources: dict[str, dict[str, Any]] = {}  # span id -> the resource it (or its nearest ancestor) names
    for span_id in order:
        st = starts[span_id]
        end = ends.get(span_id)
        attrs = dict(st.attributes)
        if end is not None:
            attrs.update(end.attributes)
        else:
            attrs[INTERRUPTED] = True
        resource = st.resource or (resources.get(st.parent_id, {}) if st.parent_id else {})
        resources[span_id] = resource
        events = [
            SpanEvent(BLOB_EVENT, st.start_ns, {"hash": h, "text": blobs[h]})
            for h in _blob_refs(attrs)
            if h in blobs and not (h in sent or sent.add(h))  # type: ignore[func-returns-value]
        ]
        if end is not None:
            events.extend(end.events)
        yield SpanData(
            trace_id=st.trace_id,
            span_id=st.span_id,
            parent_id=st.parent_id,
            name=st.name,
            start_ns=st.start_ns,
            end_ns=end.end_ns if end is not None else st.start_ns,
            attributes=attrs,
            status=end.status if end is not None else "unset",
            error=end.error if end is not None else None,
            kind=st.kind,
            events=events,
            resource=resource,
            scope=st.scope,
            links=list(end.links) if end is not None else [],
            origin=st.origin,
            dropped=end.dropped if end is not None else None,
        )


def _blob_refs(attrs: dict[str, Any]) -> list[str]:
    """The text hashes a chat span's manifest refers to."""
    text = attrs.get(s.CONTEXT)
    if not isinstance(text, str):
        return []
    try:
        return decode_manifest(text).text_hashes()
    except ManifestError:
        return []


def records(spans: Iterable[SpanData]) -> Iterator[Record]:
    """:func:`to_records` of each span, in order."""
    for span in spans:
        yield from to_records(span)

"""OTLP trace requests built by hand, field by field, as a sender could write them."""

from __future__ import annotations

import hashlib
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from callctx.projection.otlp import encode_value
from callctx.projection.schema import BLOB_EVENT


def put(target: Any, attrs: list[tuple[str, Any]]) -> None:
    for key, value in attrs:
        kv = target.add()
        kv.key = key
        encode_value(value, kv.value)  # None leaves the value unset


def build(resource_list: list[Any]) -> ExportTraceServiceRequest:
    """A request of ``[(resource attributes, [(scope name, [span tuple, ...]), ...]), ...]``;
    a span tuple is (trace id, span id, parent id, name, start, end, kind, status code, status
    message, attributes, events, links), events (name, time, attributes, blob text), links
    (trace id, span id, attributes)."""
    req = ExportTraceServiceRequest()
    for resource_attrs, scopes in resource_list:
        rs = req.resource_spans.add()
        put(rs.resource.attributes, resource_attrs)
        for scope, span_list in scopes:
            ss = rs.scope_spans.add()
            ss.scope.name = scope
            for tid, sid, pid, name, start, end, kind, code, message, span_attrs, evs, lks in span_list:
                sp = ss.spans.add()
                sp.trace_id, sp.span_id, sp.parent_span_id, sp.name = tid, sid, pid, name
                sp.start_time_unix_nano, sp.end_time_unix_nano, sp.kind = start, end, kind
                sp.status.code, sp.status.message = code, message
                put(sp.attributes, span_attrs)
                for ev_name, ev_time, ev_attrs, text in evs:
                    ev = sp.events.add()
                    ev.name, ev.time_unix_nano = ev_name, ev_time
                    if ev_name == BLOB_EVENT and text:
                        ev_attrs = [*ev_attrs, ("hash", hashlib.sha256(text.encode()).hexdigest()), ("text", text)]
                    put(ev.attributes, ev_attrs)
                for lt, ls, la in lks:
                    lk = sp.links.add()
                    lk.trace_id, lk.span_id = lt, ls
                    put(lk.attributes, la)
    return req


def span(trace: bytes, sid: int, parent: int | None, name: str, start: int, end: int, attrs=(), code: int = 0,
         message: str = "") -> tuple[Any, ...]:  # fmt: skip
    """One span tuple for :func:`build`; span ids are a byte below 256, eight times (``1`` is
    ``0101010101010101``)."""
    return (trace, bytes([sid]) * 8, bytes([parent]) * 8 if parent else b"", name, start, end, 1, code,
            message, list(attrs), [], [])  # fmt: skip

"""Jaeger's JSON trace format (``/api/traces/{id}`` responses, and files the Jaeger UI loads):
decoded to records (a :class:`~callctx.projection.batch.Batch`), encoded from complete spans
(:class:`SpanData`). Jaeger times are microseconds; OTel status, span kind and events map to
Jaeger's tags and logs the way Jaeger's own OTLP translator maps them.

Decoding applies the checks of :mod:`.batch` (ids exact hex once the leading zeros Jaeger may
drop are restored, not all zeros; times non-negative). Pure functions: any thread may call
them. Errors: a document that is not Jaeger JSON raises ``ValueError``; a span that cannot be
read is rejected and counted, the rest kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from .batch import Batch, InvalidSpan, Received, hex_bytes, link_ids, received, span_ids, text_bytes, time_ns
from .events import DEFAULT_KIND, SpanEvent, SpanKind, SpanLink, SpanStatus
from .spans import SpanData

_KINDS: dict[SpanKind, str] = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_KIND_CODES: dict[str, SpanKind] = {v: k for k, v in _KINDS.items()}
_RESERVED = {"span.kind", "otel.status_code", "otel.status_description", "error", "otel.scope.name"}


def _tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, (list, dict)):
        return {"key": key, "type": "string", "value": msgspec.json.encode(value).decode()}
    return {"key": key, "type": "string", "value": "" if value is None else str(value)}


def encode(spans: Iterable[SpanData], service: str = "callctx") -> dict[str, Any]:
    """``{"data": [trace, ...]}`` with one trace per trace id."""
    traces: dict[str, dict[str, Any]] = {}
    for sp in spans:
        trace = traces.setdefault(sp.trace_id, {"traceID": sp.trace_id, "spans": [], "processes": {}, "warnings": None})
        resource = sp.resource_or(service)
        process = {
            "serviceName": resource["service.name"],
            "tags": [_tag(k, v) for k, v in sorted(resource.items()) if k != "service.name"],
        }
        pid = next((k for k, v in trace["processes"].items() if v == process), None)
        if pid is None:
            pid = f"p{len(trace['processes']) + 1}"
            trace["processes"][pid] = process
        tags = [_tag(k, v) for k, v in sp.attributes.items()]
        tags.append(_tag("span.kind", _KINDS.get(sp.kind, _KINDS[DEFAULT_KIND])))
        if sp.scope:
            tags.append(_tag("otel.scope.name", sp.scope))
        if sp.status != "unset":
            tags.append(_tag("otel.status_code", sp.status.upper()))
        if sp.status == "error":
            tags.append(_tag("error", True))
            if sp.error:
                tags.append(_tag("otel.status_description", sp.error))
        start_us = sp.start_ns // 1000
        trace["spans"].append(
            {
                "traceID": sp.trace_id,
                "spanID": sp.span_id,
                "operationName": sp.name,
                "references": (
                    [{"refType": "CHILD_OF", "traceID": sp.trace_id, "spanID": sp.parent_id}] if sp.parent_id else []
                )
                + [{"refType": "FOLLOWS_FROM", "traceID": lk.trace_id, "spanID": lk.span_id} for lk in sp.links],
                "startTime": start_us,
                "duration": max(0, sp.end_ns // 1000 - start_us),
                "tags": tags,
                "logs": [_log(e) for e in sp.events],
                "processID": pid,
                "warnings": None,
                "flags": 1,
            }
        )
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}


def _log(e: SpanEvent) -> dict[str, Any]:
    fields = [_tag("event", e.name)] + [_tag(k, v) for k, v in e.attributes.items()]
    return {"timestamp": e.time_ns // 1000, "fields": fields}


def _fields(items: Any) -> dict[str, Any]:
    return {f["key"]: _value(f) for f in items or () if isinstance(f, dict) and "key" in f}


def _value(tag: dict[str, Any]) -> Any:
    v: Any = tag.get("value")
    t = tag.get("type", "string")
    if t == "int64":
        return int(v)
    if t == "float64":
        return float(v)
    if t == "bool":
        return bool(v)
    return v if isinstance(v, str) else ("" if v is None else str(v))


def decode(obj: Any) -> Batch:
    """The spans of a Jaeger JSON document (``{"data": [...]}``, or a single trace, or a list of
    traces), as records."""
    if isinstance(obj, dict) and "data" in obj:
        traces = obj["data"] or []
    elif isinstance(obj, dict) and "spans" in obj:
        traces = [obj]
    elif isinstance(obj, list):
        traces = obj
    else:
        raise ValueError("not Jaeger JSON: expected {'data': [traces]}")
    spans: list[Received] = []
    errors: list[str] = []
    for trace in traces:
        if not isinstance(trace, dict):
            raise ValueError("not Jaeger JSON: a trace is not an object")
        processes = trace.get("processes") or {}
        for js in trace.get("spans") or ():
            try:
                if not isinstance(js, dict):
                    raise InvalidSpan("span is not an object")
                spans.append(_span(js, trace, processes))
            except (InvalidSpan, ValueError, TypeError, AttributeError) as e:
                errors.append(f"span {str(js.get('spanID', '?'))[:32] if isinstance(js, dict) else '?'}: {e}")
    return Batch(spans, len(errors), errors)


def _span(js: dict[str, Any], trace: dict[str, Any], processes: Any) -> Received:
    start_us = int(js.get("startTime") or 0)
    start_ns = time_ns(start_us * 1000, "start time")
    end_ns = time_ns((start_us + int(js.get("duration") or 0)) * 1000, "end time")
    tags = _fields(js.get("tags"))
    parent = None
    links = []
    for ref in js.get("references") or ():
        if not isinstance(ref, dict):
            continue
        if ref.get("refType", "CHILD_OF") == "CHILD_OF" and parent is None:
            parent = ref.get("spanID")
        elif ref.get("refType") == "FOLLOWS_FROM":
            ids = link_ids(_id_bytes(ref.get("traceID"), 32), _id_bytes(ref.get("spanID"), 16))
            if ids is not None:  # a broken link is dropped, the span kept
                links.append(SpanLink(*ids))
    if parent is None and js.get("parentSpanID"):
        parent = js["parentSpanID"]
    trace_id, span_id, parent_id = span_ids(
        text_bytes(_pad(str(js.get("traceID", trace.get("traceID", ""))), 32), "trace"),
        text_bytes(_pad(str(js.get("spanID", "")), 16), "span"),
        _id_bytes(parent, 16),
    )
    events = []
    for entry in js.get("logs") or ():
        fields = _fields(entry.get("fields"))
        name = str(fields.pop("event", "log"))
        events.append(SpanEvent(name, time_ns(int(entry.get("timestamp") or 0) * 1000, "log time"), fields))
    code = str(tags.get("otel.status_code", "")).lower()
    status: SpanStatus = "error" if tags.get("error") is True or code == "error" else "ok" if code == "ok" else "unset"
    scope = tags.get("otel.scope.name")
    process = processes.get(js.get("processID"), {}) if isinstance(processes, dict) else {}
    attributes = {k: v for k, v in tags.items() if k not in _RESERVED}
    error = _description(tags) if status == "error" else None
    kind = _KIND_CODES.get(str(tags.get("span.kind", "")), DEFAULT_KIND)
    return received(
        trace_id, span_id, parent_id, str(js.get("operationName", "")), start_ns, end_ns, attributes, status, error,
        kind, events, _resource(process), scope if isinstance(scope, str) else None, links,
    )  # fmt: skip


def _description(tags: dict[str, Any]) -> str | None:
    text = tags.get("otel.status_description")
    return str(text) if text not in (None, "") else None


def _resource(process: Any) -> dict[str, Any]:
    """A Jaeger process as the OTel resource it came from."""
    if not isinstance(process, dict):
        return {}
    resource = _fields(process.get("tags"))
    if isinstance(process.get("serviceName"), str):
        resource["service.name"] = process["serviceName"]
    return resource


def _id_bytes(value: Any, size: int) -> bytes:
    """The bytes of an optional id (a parent, a link's): empty when missing or not hex."""
    return (hex_bytes(_pad(str(value), size)) or b"") if value else b""


def _pad(hex_id: str, size: int) -> str:
    """Jaeger may drop leading zeros of ids."""
    return hex_id.rjust(size, "0") if len(hex_id) < size else hex_id

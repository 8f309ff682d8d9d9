"""Jaeger's JSON trace format (``/api/traces/{id}`` responses, and files the Jaeger UI loads)
to :class:`SpanData` and back. Jaeger times are microseconds; OTel status, span kind and
events map to Jaeger's tags and logs the way Jaeger's own OTLP translator maps them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from .events import SpanEvent, SpanLink
from .spans import InvalidSpan, SpanData, checked

_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_KIND_CODES = {v: k for k, v in _KINDS.items()}
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
        tags.append(_tag("span.kind", _KINDS.get(sp.kind, "internal")))
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
    v = tag.get("value")
    t = tag.get("type", "string")
    if t == "int64":
        return int(v)
    if t == "float64":
        return float(v)
    if t == "bool":
        return bool(v)
    return v if isinstance(v, str) else ("" if v is None else str(v))


def decode(obj: Any) -> tuple[list[SpanData], int, list[str]]:
    """(spans, rejected count, reasons) from a Jaeger JSON document (``{"data": [...]}``, or a
    single trace, or a list of traces)."""
    if isinstance(obj, dict) and "data" in obj:
        traces = obj["data"] or []
    elif isinstance(obj, dict) and "spans" in obj:
        traces = [obj]
    elif isinstance(obj, list):
        traces = obj
    else:
        raise ValueError("not Jaeger JSON: expected {'data': [traces]}")
    spans: list[SpanData] = []
    rejected = 0
    errors: list[str] = []
    for trace in traces:
        if not isinstance(trace, dict):
            raise ValueError("not Jaeger JSON: a trace is not an object")
        processes = trace.get("processes") or {}
        for js in trace.get("spans") or ():
            try:
                if not isinstance(js, dict):
                    raise InvalidSpan("span is not an object")
                tags = _fields(js.get("tags"))
                parent = None
                links = []
                for ref in js.get("references") or ():
                    if not isinstance(ref, dict):
                        continue
                    if ref.get("refType", "CHILD_OF") == "CHILD_OF" and parent is None:
                        parent = ref.get("spanID")
                    elif ref.get("refType") == "FOLLOWS_FROM" and ref.get("traceID") and ref.get("spanID"):
                        links.append(SpanLink(_pad(str(ref["traceID"]), 32), _pad(str(ref["spanID"]), 16)))
                if parent is None and js.get("parentSpanID"):
                    parent = js["parentSpanID"]
                status = str(tags.get("otel.status_code", "")).lower()
                if tags.get("error") is True:
                    status = "error"
                start_us = int(js.get("startTime") or 0)
                process = processes.get(js.get("processID"), {}) if isinstance(processes, dict) else {}
                events = []
                for entry in js.get("logs") or ():
                    fields = {
                        f["key"]: _value(f) for f in entry.get("fields") or () if isinstance(f, dict) and "key" in f
                    }
                    name = str(fields.pop("event", "log"))
                    events.append(SpanEvent(name, int(entry.get("timestamp") or 0) * 1000, fields))
                span = SpanData(
                    trace_id=_pad(str(js.get("traceID", trace.get("traceID", ""))), 32),
                    span_id=_pad(str(js.get("spanID", "")), 16),
                    parent_id=_pad(str(parent), 16) if parent else None,
                    name=str(js.get("operationName", "")),
                    start_ns=start_us * 1000,
                    end_ns=(start_us + int(js.get("duration") or 0)) * 1000,
                    attributes={k: v for k, v in tags.items() if k not in _RESERVED},
                    status=status if status in ("ok", "error") else "unset",
                    error=tags.get("otel.status_description") if status == "error" else None,
                    kind=_KIND_CODES.get(str(tags.get("span.kind", "internal")), 1),
                    events=events,
                    resource=_resource(process),
                    scope=tags.get("otel.scope.name") if isinstance(tags.get("otel.scope.name"), str) else None,
                    links=links,
                )
                spans.append(checked(span))
            except (InvalidSpan, ValueError, TypeError) as e:
                rejected += 1
                errors.append(f"span {js.get('spanID', '?') if isinstance(js, dict) else '?'}: {e}")
    return spans, rejected, errors


def _resource(process: Any) -> dict[str, Any]:
    """A Jaeger process as the OTel resource it came from."""
    if not isinstance(process, dict):
        return {}
    resource = _fields(process.get("tags"))
    if isinstance(process.get("serviceName"), str):
        resource["service.name"] = process["serviceName"]
    return resource


def _pad(hex_id: str, size: int) -> str:
    """Jaeger may drop leading zeros of ids."""
    return hex_id.rjust(size, "0") if len(hex_id) < size else hex_id

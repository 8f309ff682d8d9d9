"""OTLP traces: protobuf and JSON requests to :class:`SpanData` and back.

Decoding never trusts its input: a span with bad ids is rejected and counted (OTLP partial
success), the rest of the request is kept. OTLP/JSON follows the spec (hex ids, integer
enums, int64 as strings or numbers) and also reads base64 ids, as protobuf's own JSON
mapping writes them; the Collector's file exporter (one request per line) reads too.
(``callctx serve`` reads protobuf requests straight into the fold's records instead, through
:mod:`callctx.projection.otlp_events`, which gives what ``to_records`` makes of these spans.)
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

import msgspec
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from .events import SpanEvent, SpanLink
from .spans import InvalidSpan, SpanData, checked

_STATUS = {0: "unset", 1: "ok", 2: "error"}
_STATUS_CODE = {"unset": 0, "ok": 1, "error": 2}
MAX_DEPTH = 16  # nested arrays / maps in attribute values


class Decoded(msgspec.Struct):
    spans: list[SpanData]
    rejected: int = 0
    errors: list[str] = msgspec.field(default_factory=list)

    @property
    def message(self) -> str:
        return rejection_message(self.rejected, self.errors)


def rejection_message(rejected: int, errors: list[str]) -> str:
    """The OTLP partial-success message: how many spans were rejected, and the first reasons."""
    if not rejected:
        return ""
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"{rejected} spans rejected: " + "; ".join(errors[:3]) + more


# ---- protobuf ---------------------------------------------------------------------------------
def _any(v: AnyValue, depth: int = 0) -> Any:
    which = v.WhichOneof("value")
    if which == "string_value":
        return v.string_value
    if which == "bool_value":
        return v.bool_value
    if which == "int_value":
        return v.int_value
    if which == "double_value":
        return v.double_value
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    if depth >= MAX_DEPTH:
        raise InvalidSpan("attribute value nested too deeply")
    if which == "array_value":
        return [_any(x, depth + 1) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any(kv.value, depth + 1) for kv in v.kvlist_value.values}
    return None


def _attrs(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: _any(kv.value) for kv in kvs if kv.key}


def decode_request(req: ExportTraceServiceRequest) -> Decoded:
    out = Decoded([])
    for rs in req.resource_spans:
        try:
            resource = _attrs(rs.resource.attributes)
        except InvalidSpan:
            resource = {}
        for ss in rs.scope_spans:
            scope = ss.scope.name or None
            for sp in ss.spans:
                try:
                    span = SpanData(
                        trace_id=sp.trace_id.hex(),
                        span_id=sp.span_id.hex(),
                        parent_id=sp.parent_span_id.hex() or None,
                        name=sp.name,
                        start_ns=sp.start_time_unix_nano,
                        end_ns=sp.end_time_unix_nano,
                        attributes=_attrs(sp.attributes),
                        status=_STATUS.get(sp.status.code, "unset"),
                        error=sp.status.message or None,
                        kind=sp.kind or 1,
                        events=[SpanEvent(e.name, e.time_unix_nano, _attrs(e.attributes)) for e in sp.events],
                        resource=resource,
                        scope=scope,
                        links=[
                            SpanLink(lk.trace_id.hex(), lk.span_id.hex(), _attrs(lk.attributes))
                            for lk in sp.links
                            if len(lk.trace_id) == 16 and len(lk.span_id) == 8
                        ],
                    )
                    out.spans.append(checked(span))
                except (InvalidSpan, RecursionError) as e:
                    out.rejected += 1
                    out.errors.append(f"span {sp.span_id.hex() or '?'}: {e}")
    return out


def decode_protobuf(body: bytes) -> Decoded:
    """Raises ``ValueError`` when the body is not an OTLP trace request at all."""
    return decode_request(parse_request(body))


def parse_request(body: bytes) -> ExportTraceServiceRequest:
    """The request a protobuf body holds; ``ValueError`` when it is not an OTLP trace request."""
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError or RecursionError-like errors
        raise ValueError(f"not an OTLP protobuf trace request: {e}") from None
    return req


# ---- JSON -------------------------------------------------------------------------------------
_json = msgspec.json.Decoder()


def _json_id(value: Any, size: int) -> str:
    if not value:
        return ""
    if not isinstance(value, str):
        raise InvalidSpan("ids must be strings")
    if len(value) == size * 2:
        return value
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSpan(f"id {value[:40]!r} is neither hex nor base64") from None
    if len(raw) != size:
        raise InvalidSpan("id has the wrong length")
    return raw.hex()


def _json_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise InvalidSpan(f"{what} must be an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if value is None:
        return 0
    raise InvalidSpan(f"{what} must be an integer")


def _json_any(v: Any, depth: int = 0) -> Any:
    if not isinstance(v, dict) or not v:
        return None
    if depth >= MAX_DEPTH:
        raise InvalidSpan("attribute value nested too deeply")
    if "stringValue" in v:
        return str(v["stringValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return _json_int(v["intValue"], "intValue")
    if "doubleValue" in v:
        d = v["doubleValue"]
        return float(d) if isinstance(d, (int, float, str)) else None
    if "bytesValue" in v:
        return str(v["bytesValue"])
    if "arrayValue" in v:
        return [_json_any(x, depth + 1) for x in (v["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in v:
        return _json_attrs((v["kvlistValue"] or {}).get("values") or (), depth + 1)
    return None


def _json_attrs(kvs: Any, depth: int = 0) -> dict[str, Any]:
    if not isinstance(kvs, list):
        raise InvalidSpan("attributes must be a list")
    out: dict[str, Any] = {}
    for kv in kvs:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str) and kv["key"]:
            out[kv["key"]] = _json_any(kv.get("value"), depth)
    return out


def _json_links(value: Any) -> list[SpanLink]:
    out = []
    for lk in value or ():
        if isinstance(lk, dict):
            try:
                out.append(
                    SpanLink(
                        _json_id(lk.get("traceId"), 16),
                        _json_id(lk.get("spanId"), 8),
                        _json_attrs(lk.get("attributes") or []),
                    )
                )
            except InvalidSpan:
                continue
    return [lk for lk in out if lk.trace_id and lk.span_id]


def decode_json(body: bytes | str) -> Decoded:
    """An OTLP/JSON request, or several (JSON lines, as the Collector's file exporter writes).
    Raises ``ValueError`` when the body is not JSON of that shape."""
    text = body if isinstance(body, str) else body.decode("utf-8", errors="strict")
    out = Decoded([])
    try:
        objs = [_json.decode(text)]
    except (msgspec.DecodeError, RecursionError) as first:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise ValueError(f"not OTLP/JSON: {first}") from None
        try:
            objs = [_json.decode(line) for line in lines]
        except (msgspec.DecodeError, RecursionError) as e:
            raise ValueError(f"not OTLP/JSON (nor JSON lines): {e}") from None
    for obj in objs:
        if not isinstance(obj, dict) or not isinstance(obj.get("resourceSpans", []), list):
            raise ValueError("not OTLP/JSON: expected an object with resourceSpans")
        _decode_json_request(obj, out)
    return out


def _decode_json_request(obj: dict[str, Any], out: Decoded) -> None:
    for rs in obj.get("resourceSpans") or ():
        if not isinstance(rs, dict):
            out.rejected += 1
            out.errors.append("resourceSpans entry is not an object")
            continue
        try:
            resource = _json_attrs(((rs.get("resource") or {}).get("attributes")) or [])
        except InvalidSpan:
            resource = {}
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
            if not isinstance(ss, dict):
                continue
            scope = (ss.get("scope") or {}).get("name") if isinstance(ss.get("scope"), dict) else None
            for sp in ss.get("spans") or ():
                try:
                    if not isinstance(sp, dict):
                        raise InvalidSpan("span is not an object")
                    status = sp.get("status") or {}
                    code = status.get("code", 0) if isinstance(status, dict) else 0
                    if isinstance(code, str):
                        code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
                    events = []
                    for ev in sp.get("events") or ():
                        if isinstance(ev, dict):
                            events.append(
                                SpanEvent(
                                    str(ev.get("name", "")),
                                    _json_int(ev.get("timeUnixNano"), "event time"),
                                    _json_attrs(ev.get("attributes") or []),
                                )
                            )
                    kind = sp.get("kind", 1)
                    span = SpanData(
                        trace_id=_json_id(sp.get("traceId"), 16),
                        span_id=_json_id(sp.get("spanId"), 8),
                        parent_id=_json_id(sp.get("parentSpanId"), 8) or None,
                        name=str(sp.get("name", "")),
                        start_ns=_json_int(sp.get("startTimeUnixNano"), "startTimeUnixNano"),
                        end_ns=_json_int(sp.get("endTimeUnixNano"), "endTimeUnixNano"),
                        attributes=_json_attrs(sp.get("attributes") or []),
                        status=_STATUS.get(code if isinstance(code, int) else 0, "unset"),
                        error=(status.get("message") or None) if isinstance(status, dict) else None,
                        kind=kind if isinstance(kind, int) else 1,
                        events=events,
                        resource=resource,
                        scope=scope if isinstance(scope, str) else None,
                        links=_json_links(sp.get("links")),
                    )
                    out.spans.append(checked(span))
                except (InvalidSpan, RecursionError) as e:
                    out.rejected += 1
                    sid = sp.get("spanId", "?") if isinstance(sp, dict) else "?"
                    out.errors.append(f"span {str(sid)[:32]}: {e}")


# ---- encoding ---------------------------------------------------------------------------------
def _to_any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_to_any(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _to_any(v)} for k, v in value.items()]}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def _kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _to_any(v)} for k, v in attrs.items()]


def _groups(spans: Iterable[SpanData], service: str) -> list[tuple[dict[str, Any], dict[str, list[SpanData]]]]:
    """Spans grouped by resource (one per service and process), then by scope, in order of
    first appearance; spans that name no service get ``service.name = service``."""
    groups: dict[bytes, tuple[dict[str, Any], dict[str, list[SpanData]]]] = {}
    for sp in spans:
        resource = sp.resource_or(service)
        key = msgspec.json.encode(resource, order="sorted")
        entry = groups.get(key)
        if entry is None:
            entry = groups[key] = (resource, {})
        entry[1].setdefault(sp.scope or "callctx", []).append(sp)
    return list(groups.values())


def encode_json(spans: Iterable[SpanData], service: str = "callctx") -> dict[str, Any]:
    """One OTLP/JSON trace request holding ``spans``: one resource per service (process)."""
    out = []
    for resource, scopes in _groups(spans, service):
        scope_spans = []
        for scope, group in scopes.items():
            bodies = []
            for sp in group:
                body: dict[str, Any] = {
                    "traceId": sp.trace_id,
                    "spanId": sp.span_id,
                    "name": sp.name,
                    "kind": sp.kind,
                    "startTimeUnixNano": str(sp.start_ns),
                    "endTimeUnixNano": str(sp.end_ns),
                    "attributes": _kv(sp.attributes),
                    "status": {"code": _STATUS_CODE.get(sp.status, 0), **({"message": sp.error} if sp.error else {})},
                }
                if sp.parent_id:
                    body["parentSpanId"] = sp.parent_id
                if sp.events:
                    body["events"] = [
                        {"name": e.name, "timeUnixNano": str(e.time_ns), "attributes": _kv(e.attributes)}
                        for e in sp.events
                    ]
                if sp.links:
                    body["links"] = [
                        {"traceId": lk.trace_id, "spanId": lk.span_id, "attributes": _kv(lk.attributes)}
                        for lk in sp.links
                    ]
                bodies.append(body)
            scope_spans.append({"scope": {"name": scope}, "spans": bodies})
        out.append({"resource": {"attributes": _kv(resource)}, "scopeSpans": scope_spans})
    return {"resourceSpans": out}


def _pb_any(value: Any, out: AnyValue) -> None:
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, (list, tuple)):
        for v in value:
            _pb_any(v, out.array_value.values.add())
    elif isinstance(value, dict):
        for k, v in value.items():
            kv = out.kvlist_value.values.add()
            kv.key = str(k)
            _pb_any(v, kv.value)
    elif value is not None:
        out.string_value = str(value)


def encode_protobuf(spans: Iterable[SpanData], service: str = "callctx") -> ExportTraceServiceRequest:
    """One OTLP trace request holding ``spans``: one resource per service (process)."""
    req = ExportTraceServiceRequest()
    for resource, scopes in _groups(spans, service):
        rs: ResourceSpans = req.resource_spans.add()
        _pb_attrs(rs.resource.attributes, resource)
        for scope, group in scopes.items():
            ss: ScopeSpans = rs.scope_spans.add()
            ss.scope.name = scope
            for sp in group:
                p: Span = ss.spans.add()
                p.trace_id = bytes.fromhex(sp.trace_id)
                p.span_id = bytes.fromhex(sp.span_id)
                if sp.parent_id:
                    p.parent_span_id = bytes.fromhex(sp.parent_id)
                p.name = sp.name
                p.kind = sp.kind  # type: ignore[assignment]
                p.start_time_unix_nano = sp.start_ns
                p.end_time_unix_nano = sp.end_ns
                _pb_attrs(p.attributes, sp.attributes)
                p.status.code = _STATUS_CODE.get(sp.status, 0)  # type: ignore[assignment]
                if sp.error:
                    p.status.message = sp.error
                for e in sp.events:
                    pe = p.events.add()
                    pe.name = e.name
                    pe.time_unix_nano = e.time_ns
                    _pb_attrs(pe.attributes, e.attributes)
                for lk in sp.links:
                    pl = p.links.add()
                    pl.trace_id = bytes.fromhex(lk.trace_id)
                    pl.span_id = bytes.fromhex(lk.span_id)
                    _pb_attrs(pl.attributes, lk.attributes)
    return req


def _pb_attrs(target: Any, attrs: dict[str, Any]) -> None:
    for k, v in attrs.items():
        a = target.add()
        a.key = k
        _pb_any(v, a.value)


__all__ = ["Decoded", "decode_json", "decode_protobuf", "decode_request", "encode_json", "encode_protobuf"]

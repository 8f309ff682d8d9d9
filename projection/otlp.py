"""OTLP traces: protobuf and OTLP/JSON requests decoded straight to records, and complete
spans encoded to both.

Decoding gives a :class:`~callctx.projection.batch.Batch` (per span kept, its records for the
log and the fold), never a :class:`SpanData` first: :func:`decode_protobuf` (a body) and
:func:`decode_request` (a request gRPC has parsed) for protobuf, :func:`decode_json` for
OTLP/JSON. Both encodings follow one rule, so the same request gives the same batch record for
record, the same spans kept and the same rejected for the same reasons (in the order: trace
id, span id, times, attributes, events, links; the checks of :mod:`.batch`). Attribute values
nested more than ``MAX_DEPTH`` arrays or maps deep reject their span, or empty a resource;
empty attribute keys are skipped, the last of a repeated key wins; bytes values read as
base64 text; an unspecified or unknown span kind reads as internal, an unknown status code as
unset. A link whose ids fail the id check is dropped, its span kept.

OTLP/JSON follows the spec (hex ids, integer enums, 64-bit integers as strings or numbers) and
also reads what protobuf's own JSON mapping writes (base64 ids, enum names), and JSON lines
(one request per line, as the Collector's file exporter writes).

:func:`encode_json` and :func:`encode_protobuf` write complete spans (:class:`SpanData`, as
:func:`~callctx.projection.spans.from_log` reads them) as one request, one resource per
service.

Pure functions of their input, no shared state: any thread may call them. Errors: a body that
is not a trace request at all (not protobuf of that message; not JSON, not valid UTF-8, not
of that shape above the spans) raises :class:`~callctx.projection.errors.BadInput` (a
``ValueError``); a span that cannot be folded is rejected and counted, never raised.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

import msgspec
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from .batch import (
    MAX_TIME,
    Batch,
    InvalidSpan,
    Received,
    hex_bytes,
    link_ids,
    received,
    span_ids,
    span_label,
    time_ns,
)
from .errors import BadInput
from .events import DEFAULT_KIND, KINDS, SpanEvent, SpanKind, SpanLink, SpanStatus
from .spans import SpanData

MAX_DEPTH = 16  # nested arrays / maps in attribute values
_STATUS: dict[int, SpanStatus] = {0: "unset", 1: "ok", 2: "error"}
_STATUS_CODE = {"unset": 0, "ok": 1, "error": 2}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_KIND_NAMES: dict[str, SpanKind] = {
    "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}  # fmt: skip
_I64 = 1 << 63


# ---- protobuf ---------------------------------------------------------------------------------
def decode_protobuf(body: bytes) -> Batch:
    """The spans of a protobuf ``ExportTraceServiceRequest`` body, as records."""
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError or RecursionError-like errors
        raise BadInput(f"not an OTLP protobuf trace request: {e}") from None
    return decode_request(req)


def decode_request(req: ExportTraceServiceRequest) -> Batch:
    """The spans of a parsed request, as records (the receiver's hot path: one pass, no
    intermediate span)."""
    out: list[Received] = []
    errors: list[str] = []
    append = out.append
    status_of, kind_of, ids_of, attrs_of = _STATUS.get, KINDS.get, span_ids, _attrs  # locals: read once
    for rs in req.resource_spans:
        try:
            resource = _attrs(rs.resource.attributes)
        except (InvalidSpan, RecursionError):
            resource = {}
        for ss in rs.scope_spans:
            scope = ss.scope.name or None
            for sp in ss.spans:
                try:
                    trace_id, span_id, parent_id = ids_of(sp.trace_id, sp.span_id, sp.parent_span_id)
                    start_ns, end_ns = sp.start_time_unix_nano, sp.end_time_unix_nano
                    if start_ns > MAX_TIME or end_ns > MAX_TIME:
                        time_ns(max(start_ns, end_ns), "start time" if start_ns > MAX_TIME else "end time")
                    kvs = sp.attributes
                    attributes = attrs_of(kvs) if kvs else {}
                    evs = sp.events
                    events = (
                        [SpanEvent(e.name, _event_time(e.time_unix_nano), attrs_of(e.attributes)) for e in evs]
                        if evs
                        else []
                    )
                    lks = sp.links
                    links = _links(lks) if lks else []
                except (InvalidSpan, RecursionError) as e:
                    errors.append(f"span {span_label(sp.span_id)}: {e}")
                    continue
                st = sp.status
                append(
                    received(
                        trace_id, span_id, parent_id, sp.name, start_ns,
                        end_ns, attributes, status_of(st.code, "unset"), st.message or None,
                        kind_of(sp.kind, DEFAULT_KIND), events, resource, scope, links,
                    )
                )  # fmt: skip
    return Batch(out, len(errors), errors)


def _event_time(ns: int) -> int:
    return ns if ns <= MAX_TIME else time_ns(ns, "event time")


def _attrs(kvs: Any, depth: int = 0) -> dict[str, Any]:
    """``{key: value}`` of OTLP ``KeyValue``s (empty keys skipped, the last of a key wins)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        key = kv.key
        if key:
            v = kv.value
            text = v.string_value
            out[key] = text if text else _any(v, depth)  # a non-empty string is the oneof's value
    return out


def _any(v: AnyValue, depth: int) -> Any:
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
    if which is None:
        return None
    if depth >= MAX_DEPTH:
        raise InvalidSpan("attribute value nested too deeply")
    if which == "array_value":
        return [_any(x, depth + 1) for x in v.array_value.values]
    return _attrs(v.kvlist_value.values, depth + 1)


def _links(lks: Any) -> list[SpanLink]:
    out = []
    for lk in lks:
        ids = link_ids(lk.trace_id, lk.span_id)
        if ids is not None:
            out.append(SpanLink(ids[0], ids[1], _attrs(lk.attributes)))
    return out


# ---- JSON -------------------------------------------------------------------------------------
_json = msgspec.json.Decoder()
_DIGITS = re.compile(r"[0-9]+")
_INTEGER = re.compile(r"-?[0-9]+")


def decode_json(body: bytes) -> Batch:
    """The spans of an OTLP/JSON request body, or of several (JSON lines), as records."""
    out: list[Received] = []
    errors: list[str] = []
    for obj in _json_documents(body):
        if not isinstance(obj, dict):
            raise BadInput("not OTLP/JSON: expected an object with resourceSpans")
        for rs in _list(obj.get("resourceSpans"), "resourceSpans", True):
            _json_resource_spans(rs, out, errors)
    return Batch(out, len(errors), errors)


def _json_documents(body: bytes) -> list[Any]:
    try:
        return [_json.decode(body)]
    except (msgspec.DecodeError, RecursionError) as first:
        lines = [line for line in body.splitlines() if line.strip()]
        if len(lines) < 2:
            raise BadInput(f"not OTLP/JSON: {first}") from None
        try:
            return [_json.decode(line) for line in lines]
        except (msgspec.DecodeError, RecursionError) as e:
            raise BadInput(f"not OTLP/JSON (nor JSON lines): {e}") from None


def _list(value: Any, what: str, above_spans: bool = False) -> list[Any]:
    """A JSON list, missing is empty. Anything else rejects the span (raises
    :class:`InvalidSpan`), or above the spans (resourceSpans, scopeSpans, spans) the body."""
    if value is None:
        return []
    if not isinstance(value, list):
        if above_spans:
            raise BadInput(f"not OTLP/JSON: {what} must be a list")
        raise InvalidSpan(f"{what} must be a list")
    return value


def _json_resource_spans(rs: Any, out: list[Received], errors: list[str]) -> None:
    if not isinstance(rs, dict):
        raise BadInput("not OTLP/JSON: a resourceSpans entry must be an object")
    res = rs.get("resource")
    try:
        resource = _json_attrs(res.get("attributes") if isinstance(res, dict) else None)
    except (InvalidSpan, RecursionError):
        resource = {}
    scopes = rs.get("scopeSpans")
    if scopes is None:
        scopes = rs.get("instrumentationLibrarySpans")  # what OTLP before 0.15 called them
    for ss in _list(scopes, "scopeSpans", True):
        if not isinstance(ss, dict):
            raise BadInput("not OTLP/JSON: a scopeSpans entry must be an object")
        sc = ss.get("scope")
        name = sc.get("name") if isinstance(sc, dict) else None
        scope = name if isinstance(name, str) and name else None
        for sp in _list(ss.get("spans"), "spans", True):
            try:
                out.append(_json_span(sp, resource, scope))
            except (InvalidSpan, RecursionError) as e:
                errors.append(f"span {_json_label(sp)}: {e}")


def _json_span(sp: Any, resource: dict[str, Any], scope: str | None) -> Received:
    if not isinstance(sp, dict):
        raise InvalidSpan("span is not an object")
    try:
        parent = _json_id(sp.get("parentSpanId"), "parent span")
    except InvalidSpan:
        parent = b""  # not hex nor base64: a broken parent link, the span kept as a root
    trace_id, span_id, parent_id = span_ids(_json_id(sp.get("traceId"), "trace"), _json_id(sp.get("spanId"), "span"),
                                            parent)  # fmt: skip
    start_ns = _json_time(sp.get("startTimeUnixNano"), "start time")
    end_ns = _json_time(sp.get("endTimeUnixNano"), "end time")
    attributes = _json_attrs(sp.get("attributes"))
    events = []
    for ev in _list(sp.get("events"), "events"):
        if not isinstance(ev, dict):
            raise InvalidSpan("an event is not an object")
        events.append(SpanEvent(_json_text(ev.get("name")), _json_time(ev.get("timeUnixNano"), "event time"),
                                _json_attrs(ev.get("attributes"))))  # fmt: skip
    links = []
    for lk in _list(sp.get("links"), "links"):
        ids = _json_link_ids(lk)
        if ids is not None:
            links.append(SpanLink(ids[0], ids[1], _json_attrs(lk.get("attributes"))))
    status, error = _json_status(sp.get("status"))
    kind = sp.get("kind")
    if type(kind) is int:
        kind = KINDS.get(kind, DEFAULT_KIND)
    else:
        kind = _KIND_NAMES.get(kind, DEFAULT_KIND) if isinstance(kind, str) else DEFAULT_KIND
    return received(trace_id, span_id, parent_id, _json_text(sp.get("name")), start_ns, end_ns, attributes, status,
                    error, kind, events, resource, scope, links)  # fmt: skip


def _json_id(value: Any, what: str) -> bytes:
    """The bytes of an id: hex (the spec's), else base64 (protobuf's JSON mapping); missing is
    empty (and fails :func:`~callctx.projection.batch.span_ids` as protobuf's empty id does)."""
    if value is None or value == "":
        return b""
    if not isinstance(value, str):
        raise InvalidSpan(f"{what} id must be a string")
    raw = hex_bytes(value)
    if raw is not None:
        return raw
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSpan(f"{what} id {value[:40]!r} is neither hex nor base64") from None


def _json_link_ids(lk: Any) -> tuple[str, str] | None:
    if not isinstance(lk, dict):
        return None
    try:
        return link_ids(_json_id(lk.get("traceId"), "trace"), _json_id(lk.get("spanId"), "span"))
    except InvalidSpan:
        return None


def _json_label(sp: Any) -> str:
    sid = sp.get("spanId") if isinstance(sp, dict) else None
    if not isinstance(sid, str):
        return "?"
    try:
        return span_label(_json_id(sid, "span"))
    except InvalidSpan:
        return sid[:32]


def _json_time(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    return time_ns(value, what)


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else str(value)


def _json_status(value: Any) -> tuple[SpanStatus, str | None]:
    if not isinstance(value, dict):
        return "unset", None
    code = value.get("code", 0)
    if isinstance(code, str):
        code = _STATUS_NAMES.get(code, 0)
    message = value.get("message")
    status = _STATUS.get(code, "unset") if type(code) is int else "unset"
    return status, message if isinstance(message, str) and message else None


def _json_attrs(kvs: Any, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in _list(kvs, "attributes"):
        if isinstance(kv, dict):
            key = kv.get("key")
            if key and isinstance(key, str):
                out[key] = _json_any(kv.get("value"), depth)
    return out


def _json_any(v: Any, depth: int) -> Any:
    if not isinstance(v, dict) or not v:
        return None
    if "stringValue" in v:
        return _json_text(v["stringValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return _json_int64(v["intValue"])
    if "doubleValue" in v:
        return _json_double(v["doubleValue"])
    if "bytesValue" in v:
        return _json_text(v["bytesValue"])
    array = "arrayValue" in v
    if not array and "kvlistValue" not in v:
        return None
    if depth >= MAX_DEPTH:
        raise InvalidSpan("attribute value nested too deeply")
    inner = v["arrayValue" if array else "kvlistValue"]
    values = inner.get("values") if isinstance(inner, dict) else None
    if array:
        return [_json_any(x, depth + 1) for x in _list(values, "values")]
    return _json_attrs(values, depth + 1)


def _json_int64(value: Any) -> int:
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        value = int(value)
    if type(value) is not int or not -_I64 <= value < _I64:
        raise InvalidSpan("intValue must be a 64-bit integer")
    return value


def _json_double(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)  # protobuf's JSON mapping writes "NaN", "Infinity", "-Infinity"
    except ValueError:
        raise InvalidSpan("doubleValue must be a number") from None


# ---- encoding ---------------------------------------------------------------------------------
def _to_any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
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


def encode_value(value: Any, out: AnyValue) -> None:
    """Set ``out`` to an attribute value (None leaves it unset; an empty list or map is still
    an array or a map, as in OTLP/JSON)."""
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, bytes):
        out.bytes_value = value
    elif isinstance(value, (list, tuple)):
        out.array_value.SetInParent()
        for v in value:
            encode_value(v, out.array_value.values.add())
    elif isinstance(value, dict):
        out.kvlist_value.SetInParent()
        for k, v in value.items():
            kv = out.kvlist_value.values.add()
            kv.key = str(k)
            encode_value(v, kv.value)
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
        encode_value(v, a.value)


__all__ = ["MAX_DEPTH", "decode_json", "decode_protobuf", "decode_request", "encode_json", "encode_protobuf",
           "encode_value"]  # fmt: skip

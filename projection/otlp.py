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
from typing import Any, NamedTuple

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
from .events import DEFAULT_KIND, KINDS, Dropped, Origin, SpanEvent, SpanKind, SpanLink, SpanStatus
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
            sc = ss.scope
            scope = sc.name or None
            try:
                base = _origin(rs.schema_url, rs.resource.dropped_attributes_count, sc.version,
                               _attrs(sc.attributes) if sc.attributes else {}, ss.schema_url)  # fmt: skip
            except (InvalidSpan, RecursionError):
                base = None
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
                        [SpanEvent(e.name, _event_time(e.time_unix_nano), attrs_of(e.attributes),
                                   e.dropped_attributes_count) for e in evs]
                        if evs
                        else []
                    )  # fmt: skip
                    lks = sp.links
                    links = _links(lks) if lks else []
                except (InvalidSpan, RecursionError) as e:
                    errors.append(f"span {span_label(sp.span_id)}: {e}")
                    continue
                st = sp.status
                state, flags = sp.trace_state, sp.flags
                origin = base if not (state or flags) else _with_context(base, state, flags)
                counts = (sp.dropped_attributes_count, sp.dropped_events_count, sp.dropped_links_count)
                append(
                    received(
                        trace_id, span_id, parent_id, sp.name, start_ns,
                        end_ns, attributes, status_of(st.code, "unset"), st.message or None,
                        kind_of(sp.kind, DEFAULT_KIND), events, resource, scope, links,
                        origin, Dropped(*counts) if any(counts) else None,
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
            out.append(SpanLink(ids[0], ids[1], _attrs(lk.attributes), lk.trace_state, lk.flags,
                                lk.dropped_attributes_count))  # fmt: skip
    return out


def _origin(
    resource_schema: str, resource_dropped: int, version: str, attributes: dict[str, Any], scope_schema: str
) -> Origin | None:
    """What a scope's spans share of their :class:`Origin` (None: nothing beyond the defaults)."""
    if not (resource_schema or resource_dropped or version or attributes or scope_schema):
        return None
    return Origin(scope_version=version, scope_attributes=attributes, scope_schema_url=scope_schema,
                  resource_schema_url=resource_schema, resource_dropped_attributes=resource_dropped)  # fmt: skip


def _with_context(base: Origin | None, trace_state: str, flags: int) -> Origin:
    if base is None:
        return Origin(trace_state=trace_state, flags=flags)
    return msgspec.structs.replace(base, trace_state=trace_state, flags=flags)


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
        sc = sc if isinstance(sc, dict) else {}
        try:
            base = _origin(_json_str(rs.get("schemaUrl")),
                           _json_count(res.get("droppedAttributesCount") if isinstance(res, dict) else None),
                           _json_str(sc.get("version")), _json_attrs(sc.get("attributes")),
                           _json_str(ss.get("schemaUrl")))  # fmt: skip
        except (InvalidSpan, RecursionError):
            base = None
        for sp in _list(ss.get("spans"), "spans", True):
            try:
                out.append(_json_span(sp, resource, scope, base))
            except (InvalidSpan, RecursionError) as e:
                errors.append(f"span {_json_label(sp)}: {e}")


def _json_span(sp: Any, resource: dict[str, Any], scope: str | None, base: Origin | None = None) -> Received:
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
                                _json_attrs(ev.get("attributes")),
                                _json_count(ev.get("droppedAttributesCount"))))  # fmt: skip
    links = []
    for lk in _list(sp.get("links"), "links"):
        ids = _json_link_ids(lk)
        if ids is not None:
            links.append(SpanLink(
                ids[0], ids[1], _json_attrs(lk.get("attributes")), _json_str(lk.get("traceState")),
                _json_count(lk.get("flags")), _json_count(lk.get("droppedAttributesCount")),
            ))  # fmt: skip
    status, error = _json_status(sp.get("status"))
    kind = sp.get("kind")
    if type(kind) is int:
        kind = KINDS.get(kind, DEFAULT_KIND)
    else:
        kind = _KIND_NAMES.get(kind, DEFAULT_KIND) if isinstance(kind, str) else DEFAULT_KIND
    state, flags = _json_str(sp.get("traceState")), _json_count(sp.get("flags"))
    origin = base if not (state or flags) else _with_context(base, state, flags)
    counts = (_json_count(sp.get("droppedAttributesCount")), _json_count(sp.get("droppedEventsCount")),
              _json_count(sp.get("droppedLinksCount")))  # fmt: skip
    return received(trace_id, span_id, parent_id, _json_text(sp.get("name")), start_ns, end_ns, attributes, status,
                    error, kind, events, resource, scope, links, origin,
                    Dropped(*counts) if any(counts) else None)  # fmt: skip


def _json_str(value: Any) -> str:
    """A text field (trace state, version, schema URL); anything else reads as empty."""
    return value if isinstance(value, str) else ""


def _json_count(value: Any) -> int:
    """A count or flags field (uint32: a number, or its decimal text); anything else is 0."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        value = int(value)
    return value if type(value) is int and 0 <= value < 1 << 32 else 0


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


_NO_ORIGIN = Origin()


class _Scope(NamedTuple):
    name: str
    version: str
    attributes: dict[str, Any]
    schema_url: str


class _Group(NamedTuple):
    resource: dict[str, Any]
    schema_url: str
    dropped: int
    scopes: dict[bytes, tuple[_Scope, list[SpanData]]]


def _groups(spans: Iterable[SpanData], service: str) -> list[_Group]:
    """Spans grouped by resource (one per service and process, with its schema URL), then by
    scope (name, version, attributes, schema URL), in order of first appearance; spans that
    name no service get ``service.name = service``."""
    groups: dict[bytes, _Group] = {}
    for sp in spans:
        resource = sp.resource_or(service)
        o = sp.origin or _NO_ORIGIN
        key = msgspec.json.encode((resource, o.resource_schema_url, o.resource_dropped_attributes), order="sorted")
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(resource, o.resource_schema_url, o.resource_dropped_attributes, {})
        scope = _Scope(sp.scope or "callctx", o.scope_version, o.scope_attributes, o.scope_schema_url)
        skey = msgspec.json.encode(tuple(scope), order="sorted")
        group.scopes.setdefault(skey, (scope, []))[1].append(sp)
    return list(groups.values())


def _counted(body: dict[str, Any], name: str, count: int) -> None:
    if count:
        body[name] = count


def encode_json(spans: Iterable[SpanData], service: str = "callctx") -> dict[str, Any]:
    """One OTLP/JSON trace request holding ``spans``: one resource per service (process)."""
    out = []
    for group in _groups(spans, service):
        scope_spans = []
        for scope, members in group.scopes.values():
            bodies = []
            for sp in members:
                o = sp.origin or _NO_ORIGIN
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
                if o.trace_state:
                    body["traceState"] = o.trace_state
                _counted(body, "flags", o.flags)
                if sp.parent_id:
                    body["parentSpanId"] = sp.parent_id
                if sp.dropped is not None:
                    _counted(body, "droppedAttributesCount", sp.dropped.attributes)
                    _counted(body, "droppedEventsCount", sp.dropped.events)
                    _counted(body, "droppedLinksCount", sp.dropped.links)
                if sp.events:
                    body["events"] = [_json_event(e) for e in sp.events]
                if sp.links:
                    body["links"] = [_json_link(lk) for lk in sp.links]
                bodies.append(body)
            entry: dict[str, Any] = {"scope": _json_scope(scope), "spans": bodies}
            if scope.schema_url:
                entry["schemaUrl"] = scope.schema_url
            scope_spans.append(entry)
        resource: dict[str, Any] = {"attributes": _kv(group.resource)}
        _counted(resource, "droppedAttributesCount", group.dropped)
        rs: dict[str, Any] = {"resource": resource, "scopeSpans": scope_spans}
        if group.schema_url:
            rs["schemaUrl"] = group.schema_url
        out.append(rs)
    return {"resourceSpans": out}


def _json_scope(scope: _Scope) -> dict[str, Any]:
    out: dict[str, Any] = {"name": scope.name}
    if scope.version:
        out["version"] = scope.version
    if scope.attributes:
        out["attributes"] = _kv(scope.attributes)
    return out


def _json_event(e: SpanEvent) -> dict[str, Any]:
    out = {"name": e.name, "timeUnixNano": str(e.time_ns), "attributes": _kv(e.attributes)}
    _counted(out, "droppedAttributesCount", e.dropped_attributes)
    return out


def _json_link(lk: SpanLink) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": lk.trace_id, "spanId": lk.span_id, "attributes": _kv(lk.attributes)}
    if lk.trace_state:
        out["traceState"] = lk.trace_state
    _counted(out, "flags", lk.flags)
    _counted(out, "droppedAttributesCount", lk.dropped_attributes)
    return out


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
    for group in _groups(spans, service):
        rs: ResourceSpans = req.resource_spans.add()
        _pb_attrs(rs.resource.attributes, group.resource)
        rs.resource.dropped_attributes_count = group.dropped
        rs.schema_url = group.schema_url
        for scope, members in group.scopes.values():
            ss: ScopeSpans = rs.scope_spans.add()
            ss.scope.name = scope.name
            ss.scope.version = scope.version
            _pb_attrs(ss.scope.attributes, scope.attributes)
            ss.schema_url = scope.schema_url
            for sp in members:
                o = sp.origin or _NO_ORIGIN
                p: Span = ss.spans.add()
                p.trace_id = bytes.fromhex(sp.trace_id)
                p.span_id = bytes.fromhex(sp.span_id)
                p.trace_state = o.trace_state
                p.flags = o.flags
                if sp.dropped is not None:
                    p.dropped_attributes_count = sp.dropped.attributes
                    p.dropped_events_count = sp.dropped.events
                    p.dropped_links_count = sp.dropped.links
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
                    pe.dropped_attributes_count = e.dropped_attributes
                for lk in sp.links:
                    pl = p.links.add()
                    pl.trace_id = bytes.fromhex(lk.trace_id)
                    pl.span_id = bytes.fromhex(lk.span_id)
                    _pb_attrs(pl.attributes, lk.attributes)
                    pl.trace_state = lk.trace_state
                    pl.flags = lk.flags
                    pl.dropped_attributes_count = lk.dropped_attributes
    return req


def _pb_attrs(target: Any, attrs: dict[str, Any]) -> None:
    for k, v in attrs.items():
        a = target.add()
        a.key = k
        encode_value(v, a.value)


__all__ = ["MAX_DEPTH", "decode_json", "decode_protobuf", "decode_request", "encode_json", "encode_protobuf",
           "encode_value"]  # fmt: skip

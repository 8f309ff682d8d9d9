"""The rows of the OpenTelemetry Collector's ``clickhouse`` exporter (its traces table,
``otel_traces`` by default): spans encoded to rows the way the exporter writes them, and rows
decoded to records (a :class:`~callctx.projection.batch.Batch`).

The mapping follows the exporter's own code (opentelemetry-collector-contrib,
``exporter/clickhouseexporter/exporter_traces.go``, ``internal/util.go``, and
``internal/coreinternal/traceutil``), column by column:

* ``Timestamp``: the span's start (``span.StartTimestamp().AsTime()``); ``Duration``: end
  minus start, in ns.
* ``TraceId``, ``SpanId``, ``ParentSpanId``: lowercase hex, ``''`` for none
  (``TraceIDToHexOrEmptyString``); ``TraceState``: the W3C string, ``''`` for none.
* ``SpanKind``: ``span.Kind().String()`` (``Internal``, ``Server``...); ``StatusCode``:
  ``Status().Code().String()`` (``Unset``, ``Ok``, ``Error``). Older exporters wrote
  ``SPAN_KIND_SERVER`` and ``STATUS_CODE_ERROR``: the decoder reads both.
* ``ServiceName``: the resource's ``service.name`` (``GetServiceName``: ``AsString()``).
* ``ResourceAttributes``, ``SpanAttributes``, each event's and link's ``Attributes``: a map of
  key to ``pcommon.Value.AsString()`` (``AttributesToMap``), see :func:`as_string`: every value
  becomes a string, maps and lists as JSON.
* ``ScopeName``, ``ScopeVersion``: the instrumentation scope's. (The table has no column for
  schema URLs, scope attributes, flags or dropped counts: what the exporter drops is dropped.)
  Exporters before those columns wrote the scope to ``SpanAttributes`` as ``otel.scope.name``
  and ``otel.scope.version``: the decoder reads the name from there when the column is empty.
* ``Events`` and ``Links``: ``Nested`` columns, parallel arrays. The texts callctx's model calls
  recorded travel as ``callctx.blob`` events, as over OTLP.

Decoding applies the checks of :mod:`.batch` (the same rules as every other decoder), and
gives back the types the exporter's strings lost where callctx's own schema says them
(``callctx.interrupted`` and ``callctx.turn`` booleans, ``callctx.render_range`` an integer);
every other value stays the string the table holds (token counts are read from strings by
:mod:`.llm`). A span that never ended where it was recorded is exported with its
``callctx.interrupted`` attribute, and decodes as interrupted again.

Pure functions, no shared state: any thread may call them. Errors: a row that cannot be read
as a span is rejected and counted, with its reason, never raised.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

import msgspec

from . import schema as s
from .batch import Batch, InvalidSpan, Received, link_ids, received, span_ids, span_label, text_bytes, time_ns
from .events import DEFAULT_KIND, Origin, SpanEvent, SpanKind, SpanLink, SpanStatus

TABLE: Final = "otel_traces"  # the exporter's default table name

# pdata's ptrace.SpanKind.String() and StatusCode.String(), and the older traceutil names
_KIND_NAMES: Final[dict[SpanKind, str]] = {
    0: "Unspecified", 1: "Internal", 2: "Server", 3: "Client", 4: "Producer", 5: "Consumer",
}  # fmt: skip
_KINDS: Final[dict[str, SpanKind]] = {
    **{v: k for k, v in _KIND_NAMES.items()},
    **{f"SPAN_KIND_{v.upper()}": k for k, v in _KIND_NAMES.items()},
}
_STATUS_NAMES: Final[dict[SpanStatus, str]] = {"unset": "Unset", "ok": "Ok", "error": "Error"}
_STATUSES: Final[dict[str, SpanStatus]] = {
    **{v: k for k, v in _STATUS_NAMES.items()},
    **{f"STATUS_CODE_{v.upper()}": k for k, v in _STATUS_NAMES.items()},
}
_BOOLEANS: Final = (s.INTERRUPTED, s.TURN)
_INTEGERS: Final = (s.RENDER_RANGE,)
_OLD_SCOPE_NAME: Final = "otel.scope.name"


class EventRow(msgspec.Struct, frozen=True, array_like=True):
    """One element of the ``Events`` nested column."""

    time_ns: int
    name: str
    attributes: dict[str, Any]


class LinkRow(msgspec.Struct, frozen=True, array_like=True):
    """One element of the ``Links`` nested column."""

    trace_id: str
    span_id: str
    trace_state: str
    attributes: dict[str, Any]


class TraceRow(msgspec.Struct, kw_only=True):
    """One row of the traces table, its columns in the exporter's order (times as ns since
    the epoch; the store turns them into ``DateTime64(9)``)."""

    start_ns: int  # Timestamp
    trace_id: str  # TraceId
    span_id: str  # SpanId
    parent_span_id: str  # ParentSpanId
    trace_state: str  # TraceState
    span_name: str  # SpanName
    span_kind: str  # SpanKind
    service_name: str  # ServiceName
    resource_attributes: dict[str, Any]  # ResourceAttributes (strings; typed in the JSON variant)
    scope_name: str  # ScopeName
    scope_version: str  # ScopeVersion
    span_attributes: dict[str, Any]  # SpanAttributes (strings; typed in the JSON variant)
    duration: int  # Duration
    status_code: str  # StatusCode
    status_message: str  # StatusMessage
    events: list[EventRow]  # Events
    links: list[LinkRow]  # Links


# ---- pcommon.Value.AsString() ----------------------------------------------------------------
def as_string(value: Any) -> str:
    """A value as the exporter stores it (pdata's ``Value.AsString()``): strings as they are,
    booleans ``true`` / ``false``, integers in decimal, doubles as ECMAScript prints them
    (``9e-9``, ``NaN``, ``Infinity``), maps and lists as compact JSON with sorted keys and no
    HTML escaping, no value as ``''``. Bytes reach callctx as base64 text already."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    try:
        return _json(value)
    except ValueError:  # NaN or an infinity inside: Go's encoder fails and AsString gives ''
        return ""


def _float(f: float) -> str:
    """pdata's ``float64AsString``: ES6 number to string."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    shortest = repr(f)
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        mantissa, _, exponent = shortest.partition("e")  # repr uses an exponent in these ranges
        return f"{mantissa}e{exponent[0]}{exponent[1:].lstrip('0') or '0'}"
    text = format(Decimal(shortest), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _json(value: Any) -> str:
    """Go's ``encoding/json`` of ``AsRaw()``, as ``marshalJSONNoHTMLEscape`` writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("unsupported value")
        return _float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if isinstance(value, Mapping):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ",".join(f"{_json(k)}:{_json(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return _json(str(value))


# ---- encode ---------------------------------------------------------------------------------
def row_of(span: Received, *, value: Callable[[Any], Any] = as_string) -> TraceRow:
    """A received span as the exporter's row (the span's texts as ``callctx.blob`` events
    first, then its own events). ``value`` maps each attribute's value: the Map variant's
    ``AsString`` (the default), or the JSON variant's typed values."""

    start, end = span.started, span.ended
    attributes: dict[str, Any] = start.attributes
    events: list[EventRow] = (
        [EventRow(span.start_ns, s.BLOB_EVENT, {"hash": b.hash, "text": b.text}) for b in span.blobs]
        if span.blobs
        else []
    )
    if span.parts:  # parts of longer texts, as they came (their attributes as the Map variant's strings)
        events.extend(
            EventRow(span.start_ns, s.BLOB_EVENT, {"hash": p.hash, "text": p.text, "part": str(p.part),
                                                   "parts": str(p.parts)})
            for p in span.parts
        )  # fmt: skip
    links: list[LinkRow] = []
    if end is not None:
        if end.attributes:
            attributes = {**attributes, **end.attributes}
        if end.events:
            events.extend(EventRow(e.time_ns, e.name, _mapped(e.attributes, value)) for e in end.events)
        if end.links:
            links = [
                LinkRow(lk.trace_id, lk.span_id, lk.trace_state, _mapped(lk.attributes, value)) for lk in end.links
            ]
    resource = start.resource
    origin = start.origin
    return TraceRow(
        start_ns=span.start_ns,
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=start.parent_id or "",
        trace_state=origin.trace_state if origin is not None else "",
        span_name=start.name,
        span_kind=_KIND_NAMES.get(start.kind, "Internal"),
        service_name=as_string(resource["service.name"]) if "service.name" in resource else "",
        resource_attributes=_mapped(resource, value),
        scope_name=start.scope or "",
        scope_version=origin.scope_version if origin is not None else "",
        span_attributes=_mapped(attributes, value),
        duration=max(span.end_ns - span.start_ns, 0),
        status_code=_STATUS_NAMES[span.status],
        status_message=span.error or "",
        events=events,
        links=links,
    )


def _mapped(attrs: Mapping[str, Any], value: Callable[[Any], Any]) -> dict[str, Any]:
    """``attrs`` with each value mapped; a dict of strings only is returned as it is (shared,
    never changed)."""
    if value is as_string and type(attrs) is dict and all(type(v) is str for v in attrs.values()):
        return attrs
    return {k: value(v) for k, v in attrs.items()}


# ---- decode ---------------------------------------------------------------------------------
def decode_rows(rows: Iterable[TraceRow]) -> Batch:
    """Rows of the traces table as records; a row that is not a span is rejected, counted."""
    out: list[Received] = []
    errors: list[str] = []
    for row in rows:
        try:
            out.append(_span(row))
        except InvalidSpan as e:
            errors.append(f"span {span_label(row.span_id.encode())}: {e}")
    return Batch(out, len(errors), errors)


def _typed(attrs: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = dict(attrs)
    for key in _BOOLEANS:
        value = out.get(key)
        if value in ("true", "false"):
            out[key] = value == "true"
    for key in _INTEGERS:
        value = out.get(key)
        if isinstance(value, str) and value.isdigit():
            out[key] = int(value)
    return out


def _span(row: TraceRow) -> Received:
    parent = text_bytes(row.parent_span_id, "parent") if row.parent_span_id else b""
    trace_id, span_id, parent_id = span_ids(text_bytes(row.trace_id, "trace"), text_bytes(row.span_id, "span"), parent)
    start_ns = time_ns(row.start_ns, "start time")
    end_ns = time_ns(start_ns + row.duration, "end time")
    attributes = _typed(row.span_attributes)
    scope = row.scope_name or None
    if scope is None and _OLD_SCOPE_NAME in attributes:
        scope = str(attributes.pop(_OLD_SCOPE_NAME))
        attributes.pop("otel.scope.version", None)
    events = [SpanEvent(e.name, time_ns(e.time_ns, "event time"), dict(e.attributes)) for e in row.events]
    links: list[SpanLink] = []
    for lk in row.links:
        ids = (
            link_ids(text_bytes(lk.trace_id, "link trace"), text_bytes(lk.span_id, "link span"))
            if lk.trace_id and lk.span_id
            else None
        )
        if ids is not None:
            links.append(SpanLink(ids[0], ids[1], dict(lk.attributes), lk.trace_state))
    resource: dict[str, Any] = dict(row.resource_attributes)
    if row.service_name and "service.name" not in resource:
        resource["service.name"] = row.service_name
    return received(
        trace_id, span_id, parent_id, row.span_name, start_ns, end_ns, attributes,
        _STATUSES.get(row.status_code, "unset"), row.status_message or None,
        _KINDS.get(row.span_kind) or DEFAULT_KIND, events, resource, scope, links,
        Origin(trace_state=row.trace_state, scope_version=row.scope_version)
        if row.trace_state or row.scope_version
        else None,
    )  # fmt: skip


__all__ = ["TABLE", "EventRow", "LinkRow", "TraceRow", "as_string", "decode_rows", "row_of"]

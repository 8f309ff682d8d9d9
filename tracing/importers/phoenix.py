"""Spans pulled from a running Arize Phoenix, through its REST API (``/v1/projects/{project}/spans``),
back in OTLP terms, as records (a :class:`~callctx.projection.batch.Batch`), with the checks of
:mod:`callctx.projection.batch`."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any

from callctx.projection.batch import Batch, InvalidSpan, Received, hex_bytes, received, span_ids, text_bytes, time_ns
from callctx.projection.events import DEFAULT_KIND, SpanEvent, SpanStatus

from .query import PAGE, Query, StoreError, fetch

_STATUS: dict[str, SpanStatus] = {"OK": "ok", "ERROR": "error"}


def _ns(stamp: Any, what: str) -> int:
    if not isinstance(stamp, str):
        raise InvalidSpan(f"{what} is missing")
    dt = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return time_ns(int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000, what)


def phoenix_span(js: dict[str, Any]) -> Received:
    """A span as Phoenix's REST API returns it, back in OTLP terms (Phoenix moves the
    OpenInference kind out of the attributes and names times in ISO 8601); raises
    :class:`InvalidSpan` (or ``ValueError``, ``TypeError``) for a span that cannot be read."""
    ctx = js.get("context") or {}
    parent = js.get("parent_id")
    trace_id, span_id, parent_id = span_ids(
        text_bytes(ctx.get("trace_id"), "trace"),
        text_bytes(ctx.get("span_id"), "span"),
        (hex_bytes(parent) or b"") if isinstance(parent, str) else b"",
    )
    start_ns = _ns(js.get("start_time"), "start time")
    end_ns = _ns(js.get("end_time") or js.get("start_time"), "end time")
    attrs = dict(js.get("attributes") or {})
    if js.get("span_kind") and js["span_kind"] != "UNKNOWN":
        attrs["openinference.span.kind"] = js["span_kind"]
    events = [
        SpanEvent(str(e.get("name", "")), _ns(e.get("timestamp"), "event time"), dict(e.get("attributes") or {}))
        for e in js.get("events") or ()
        if isinstance(e, dict) and e.get("timestamp")
    ]
    return received(
        trace_id, span_id, parent_id, str(js.get("name", "")), start_ns, end_ns, attrs,
        _STATUS.get(str(js.get("status_code")), "unset"), js.get("status_message") or None, DEFAULT_KIND, events, {},
        None, [],
    )  # fmt: skip


def phoenix(
    base_url: str, query: Query, *, project: str = "default", token: str | None = None, timeout: float = 30.0
) -> Batch:
    """The spans of ``project`` that ``query`` asks for, page by page."""
    params: dict[str, Any] = {"limit": PAGE}
    if query.trace_id:
        params["trace_id"] = query.trace_id
    if query.start:
        params["start_time"] = query.start.isoformat()
    if query.end:
        params["end_time"] = query.end.isoformat()
    spans: list[Received] = []
    errors: list[str] = []
    base = f"{base_url.rstrip('/')}/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
    cursor = None
    for _ in range(100_000):  # pages; a store that keeps answering the same cursor stops here
        url = f"{base}?{urllib.parse.urlencode({**params, **({'cursor': cursor} if cursor else {})})}"
        raw = fetch(url, token, timeout)
        if not raw:
            raise StoreError(f"{base_url}: no Phoenix project {project!r}")
        try:
            doc = json.loads(raw)
            rows = doc["data"]
        except (ValueError, KeyError, TypeError):
            raise StoreError(f"{url}: not a Phoenix spans answer") from None
        for js in rows:
            try:
                span = phoenix_span(js)
            except (InvalidSpan, ValueError, TypeError, AttributeError) as e:
                errors.append(f"span {_label(js)}: {e}")
                continue
            spans.append(span)
        cursor = doc.get("next_cursor")
        if not cursor:
            break
    return query.select(Batch(spans, len(errors), errors))


def _label(js: Any) -> str:
    ctx = js.get("context") if isinstance(js, dict) else None
    return str(ctx.get("span_id", "?"))[:32] if isinstance(ctx, dict) else "?"

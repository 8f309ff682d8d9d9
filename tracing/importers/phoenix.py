"""Spans pulled from a running Arize Phoenix, through its REST API (``/v1/projects/{project}/spans``),
back in OTLP terms."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any

from callctx.projection.events import SpanEvent
from callctx.projection.otlp import Decoded
from callctx.projection.spans import InvalidSpan, SpanData, checked

from .query import PAGE, Query, StoreError, fetch


def _ns(stamp: Any) -> int:
    if not isinstance(stamp, str):
        raise InvalidSpan("a time is missing")
    dt = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def phoenix_span(js: dict[str, Any]) -> SpanData:
    """A span as Phoenix's REST API returns it, back in OTLP terms (Phoenix moves the
    OpenInference kind out of the attributes and names times in ISO 8601)."""
    attrs = dict(js.get("attributes") or {})
    if js.get("span_kind") and js["span_kind"] != "UNKNOWN":
        attrs["openinference.span.kind"] = js["span_kind"]
    status = {"OK": "ok", "ERROR": "error"}.get(js.get("status_code"), "unset")
    ctx = js.get("context") or {}
    events = [
        SpanEvent(str(e.get("name", "")), _ns(e.get("timestamp")), dict(e.get("attributes") or {}))
        for e in js.get("events") or ()
        if isinstance(e, dict) and e.get("timestamp")
    ]
    return checked(
        SpanData(
            trace_id=str(ctx.get("trace_id", "")),
            span_id=str(ctx.get("span_id", "")),
            parent_id=js.get("parent_id"),
            name=str(js.get("name", "")),
            start_ns=_ns(js.get("start_time")),
            end_ns=_ns(js.get("end_time") or js.get("start_time")),
            attributes=attrs,
            status=status,
            error=js.get("status_message") or None,
            events=events,
        )
    )


def phoenix(
    base_url: str, query: Query, *, project: str = "default", token: str | None = None, timeout: float = 30.0
) -> Decoded:
    """The spans of ``project`` that ``query`` asks for, page by page."""
    params: dict[str, Any] = {"limit": PAGE}
    if query.trace_id:
        params["trace_id"] = query.trace_id
    if query.start:
        params["start_time"] = query.start.isoformat()
    if query.end:
        params["end_time"] = query.end.isoformat()
    out = Decoded([])
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
                out.rejected += 1
                out.errors.append(f"span {js.get('context', {}).get('span_id', '?')}: {e}")
                continue
            out.spans.append(span)
        cursor = doc.get("next_cursor")
        if not cursor:
            break
    return query.select(out)

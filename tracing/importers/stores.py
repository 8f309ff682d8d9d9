"""Trace stores as the event log at scale: spans pulled from a running Arize Phoenix (its REST
API) or Jaeger v2 (``api/v3``, OTLP/JSON), so a team whose traces already live there rebuilds
trees and contexts without running ``callctx serve``.

What to pull: one trace, one session (``session.id`` / ``gen_ai.conversation.id``), or a
time range (Jaeger also needs a service then). Errors: :class:`StoreError` for an
unreachable store or an answer that is not what its API documents; spans that cannot be
read are counted as rejected, the rest kept. Nothing here runs in an agent's process.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import msgspec

from callctx.projection.dialects import conversation
from callctx.projection.events import SpanEvent
from callctx.projection.otlp import Decoded, decode_json
from callctx.projection.spans import InvalidSpan, SpanData, checked

PAGE = 1000


class StoreError(RuntimeError):
    """The trace store could not be reached, or answered in a shape its API does not document."""


class Query(msgspec.Struct, frozen=True):
    """Which spans to pull: a trace, a session, or those that started within a time range."""

    trace_id: str | None = None
    session_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    service: str | None = None  # Jaeger searches by service

    def select(self, decoded: Decoded) -> Decoded:
        """The spans asked for: those of the trace, or of every trace in which a span names the
        session (spans under a session's calls, model calls say, often do not name it)."""
        spans = decoded.spans
        if self.trace_id is not None:
            spans = [sp for sp in spans if sp.trace_id == self.trace_id.lower()]
        if self.session_id is not None:
            traces = {sp.trace_id for sp in spans if conversation(sp.attributes) == self.session_id}
            spans = [sp for sp in spans if sp.trace_id in traces]
        return Decoded(spans, decoded.rejected, decoded.errors)


def _get(url: str, token: str | None, timeout: float) -> bytes:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return b""
        raise StoreError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise StoreError(f"cannot reach {url}: {getattr(e, 'reason', e)}") from None


# ---- Phoenix -------------------------------------------------------------------------------------
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
        raw = _get(url, token, timeout)
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


# ---- Jaeger v2 (api/v3) ----------------------------------------------------------------------------
def _results(raw: bytes) -> Iterator[dict[str, Any]]:
    """The ``{"result": TracesData}`` objects of an api/v3 answer (one, or several as a stream)."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        return
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        obj, i = decoder.raw_decode(text, i)
        while i < len(text) and text[i].isspace():
            i += 1
        if not isinstance(obj, dict):
            raise ValueError("not an api/v3 answer")
        if "error" in obj and "result" not in obj:
            err = obj["error"]
            raise ValueError(str(err.get("message", err)) if isinstance(err, dict) else str(err))
        result = obj.get("result", obj)
        if isinstance(result, dict):
            yield result


def jaeger(base_url: str, query: Query, *, token: str | None = None, timeout: float = 30.0) -> Decoded:
    """The spans ``query`` asks for: ``GET /api/v3/traces/{id}`` for a trace, else
    ``GET /api/v3/traces`` searching ``query.service`` within the time range."""
    base = base_url.rstrip("/")
    if query.trace_id:
        url = f"{base}/api/v3/traces/{query.trace_id.lower()}"
    else:
        if not (query.service and query.start and query.end):
            raise StoreError("Jaeger searches a service within a time range: give --service, --since and --until")
        params = {
            "query.service_name": query.service,
            "query.start_time_min": query.start.isoformat(),
            "query.start_time_max": query.end.isoformat(),
            "query.search_depth": PAGE,
        }
        url = f"{base}/api/v3/traces?{urllib.parse.urlencode(params)}"
    raw = _get(url, token, timeout)
    out = Decoded([])
    try:
        for result in _results(raw):
            part = decode_json(json.dumps(result))
            out.spans.extend(part.spans)
            out.rejected += part.rejected
            out.errors.extend(part.errors)
    except ValueError as e:
        raise StoreError(f"{url}: not an api/v3 traces answer: {e}") from None
    return query.select(out)

"""Spans pulled from Jaeger v2 through its ``api/v3`` (OTLP/JSON ``{"result": ...}`` answers, one
or a stream of them), decoded by the OTLP/JSON decoder into one :class:`~callctx.projection.batch.Batch`."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import msgspec

from callctx.projection.batch import Batch
from callctx.projection.otlp import decode_json

from .query import PAGE, Query, StoreError, fetch


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


def jaeger(base_url: str, query: Query, *, token: str | None = None, timeout: float = 30.0) -> Batch:
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
    raw = fetch(url, token, timeout)
    out = Batch([])
    try:
        for result in _results(raw):
            part = decode_json(msgspec.json.encode(result))
            out.spans.extend(part.spans)
            out.rejected += part.rejected
            out.errors.extend(part.errors)
    except ValueError as e:
        raise StoreError(f"{url}: not an api/v3 traces answer: {e}") from None
    return query.select(out)

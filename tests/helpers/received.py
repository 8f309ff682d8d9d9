"""Spans as a receiver gets them: encoded to an OTLP request (protobuf or OTLP/JSON) and
decoded again, so attribute and event values arrive as the decoder gives them (an array or a
kvlist as lists and dicts)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from callctx.projection.events import SpanEvent
from callctx.projection.otlp import decode_json, decode_protobuf, encode_json, encode_protobuf
from callctx.projection.spans import SpanData

FORMATS = ("protobuf", "json")
T = "5a" * 16


def span(i: int, name: str, attrs: dict[str, Any], events: Iterable[SpanEvent] = (), parent: int | None = None):
    return SpanData(T, format(i, "016x"), format(parent, "016x") if parent else None, name, 1_000 * i,
                    1_000 * i + 500, attrs, "ok", events=list(events))  # fmt: skip


def received(sp: SpanData, fmt: str) -> tuple[dict[str, Any], list[SpanEvent]]:
    """(attributes, events) of ``sp`` after a trip through OTLP in ``fmt``."""
    if fmt == "protobuf":
        batch = decode_protobuf(encode_protobuf([sp]).SerializeToString())
    else:
        batch = decode_json(json.dumps(encode_json([sp])).encode())
    (r,) = batch.spans
    assert r.ended is not None
    return {**r.started.attributes, **r.ended.attributes}, list(r.ended.events)

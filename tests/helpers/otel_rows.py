"""Spans through the Collector's ClickHouse traces table: written as its exporter writes them
(:func:`callctx.projection.otel_traces.row_of`), read back a trace at a time."""

from __future__ import annotations

import os

from callctx.projection.batch import Batch
from callctx.projection.otel_traces import row_of
from callctx.projection.otlp import decode_request, encode_protobuf
from callctx.projection.spans import from_log
from callctx.store.otel_table import OtelTable


def exported(log: str | os.PathLike[str]) -> Batch:
    """A log's spans as a receiver decodes them from the OTLP exporter's request."""
    return decode_request(encode_protobuf(list(from_log(log)), service="agent"))


def through_table(table: OtelTable, batch: Batch) -> Batch:
    """The spans of ``batch`` written to ``table`` as the exporter writes them, read back a
    trace at a time (asserting none was rejected on the way back)."""
    assert table.insert(row_of(r) for r in batch.spans) == len(batch.spans)
    out = []
    for trace_id in dict.fromkeys(r.trace_id for r in batch.spans):
        back = table.trace(trace_id)
        assert back.rejected == 0, back.errors
        out.extend(back.spans)
    return Batch(out, 0, [])

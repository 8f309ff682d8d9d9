"""What the trace stores give is one shape, a Batch of records: Phoenix rows are read with the
checks every decoder applies, ``Query.select`` filters a Batch, and ``callctx import`` writes
its records."""

from __future__ import annotations

import json

import pytest
from helpers.serving import FakeStore

from callctx.cli.main import main
from callctx.importers import Query, phoenix, phoenix_span
from callctx.projection import otlp, read_log
from callctx.projection.batch import Batch, InvalidSpan, records
from callctx.projection.events import KIND_INTERNAL, LogHeader
from callctx.projection.spans import SpanData

A, B = "aa" * 16, "bb" * 16


def row(span_id: str, trace_id: str = A, parent: str | None = None, **extra) -> dict:
    """A span as Phoenix's REST API lists it."""
    return {"name": f"span {span_id[:2]}", "context": {"trace_id": trace_id, "span_id": span_id},
            "parent_id": parent, "span_kind": "AGENT", "start_time": "2025-01-02T03:04:05.000006+00:00",
            "end_time": "2025-01-02T03:04:06Z", "status_code": "OK", "attributes": {"input.value": "x"},
            **extra}  # fmt: skip


def test_a_phoenix_row_is_a_span_s_records():
    failed = {"name": "exception", "timestamp": "2025-01-02T03:04:05.5Z", "attributes": {}}
    r = phoenix_span(row("01" * 8, A.upper(), "02" * 8, status_code="ERROR", status_message="bad", events=[failed]))
    assert (r.trace_id, r.span_id, r.started.parent_id) == (A, "01" * 8, "02" * 8)
    assert r.started.kind == KIND_INTERNAL and r.started.attributes["openinference.span.kind"] == "AGENT"
    assert r.start_ns == 1735787045_000_006_000 and r.end_ns == 1735787046_000_000_000
    assert (r.status, r.ended.status, r.ended.error) == ("error", "error", "bad")
    assert [e.name for e in r.ended.events] == ["exception"]
    assert phoenix_span(row("01" * 8, parent="no parent")).started.parent_id is None  # broken: a root
    for bad, reason in (
        (row("aabb ccdd eeff0011"), "is not hex"),
        (row("00" * 8), "span id is all zeros"),
        (row("01" * 8, "ab" * 15), "trace id must be 32 hex characters"),
        (row("01" * 8, start_time="1969-12-31T23:59:59Z"), "start time must be a whole number of ns"),
        (row("01" * 8, start_time=None), "start time is missing"),
    ):
        with pytest.raises(InvalidSpan, match=reason):
            phoenix_span(bad)


def test_select_filters_a_batch_and_keeps_the_rejected():
    spans = [
        SpanData(A, "01" * 8, None, "invoke_agent a", 1, 9, {"gen_ai.conversation.id": "s1"}),
        SpanData(A, "02" * 8, "01" * 8, "chat m", 2, 3),  # under the session's call, not naming it
        SpanData(B, "03" * 8, None, "invoke_agent b", 4, 5),
    ]
    batch = otlp.decode_json(json.dumps(otlp.encode_json(spans)).encode())
    batch = Batch(batch.spans, 1, ["span ?: trace id must be 32 hex characters"])
    by_trace = Query(trace_id=B.upper()).select(batch)
    assert [r.span_id for r in by_trace.spans] == ["03" * 8] and by_trace.rejected == 1
    assert by_trace.errors == batch.errors
    assert [r.span_id for r in Query(session_id="s1").select(batch).spans] == ["01" * 8, "02" * 8]
    assert Query(session_id="s2").select(batch).spans == []
    assert Query().select(batch) == batch


def fake_phoenix(rows: list[dict]) -> FakeStore:
    """Answers ``GET /v1/projects/{project}/spans`` with its rows, in two pages."""
    pages = [rows[: len(rows) // 2], rows[len(rows) // 2 :]]

    def answer(path: str) -> tuple[int, bytes]:
        page = 1 if "cursor=" in path else 0
        return 200, json.dumps({"data": pages[page], "next_cursor": None if page else "next"}).encode()

    return FakeStore(answer)


def test_import_from_phoenix_writes_the_records_of_the_batch(tmp_path, capsys):
    rows = [row("01" * 8, attributes={"gen_ai.conversation.id": "s1"}), row("02" * 8, parent="01" * 8),
            row("aabb ccdd eeff0011"), row("03" * 8, B)]  # fmt: skip
    store = fake_phoenix(rows)
    try:
        batch = phoenix(store.url, Query(session_id="s1"))
        assert [r.span_id for r in batch.spans] == ["01" * 8, "02" * 8] and batch.rejected == 1
        assert batch.errors == ["span aabb ccdd eeff0011: span id 'aabb ccdd eeff0011' is not hex"]
        out = tmp_path / "pulled.jsonl"
        assert main(["import", "--from", "phoenix", store.url, "--session", "s1", "-o", str(out)]) == 0
    finally:
        store.close()
    assert "2 spans imported (1 rejected)" in capsys.readouterr().out
    want = records(Batch(sorted(batch.spans, key=lambda r: (r.start_ns, r.span_id))))
    assert [r for r in read_log(out) if type(r) is not LogHeader] == want

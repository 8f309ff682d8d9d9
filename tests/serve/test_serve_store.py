"""``callctx serve --store``: the official OTLP exporters into a receiver that writes the
Collector's ClickHouse traces table (chDB), its read API answering from the table as the
log-backed receiver answers from its log, and a table that refuses writes answered with 503
and nothing acknowledged lost."""

from __future__ import annotations

import http.client
import itertools
import json

import pytest
from helpers import foreign_chat
from helpers.cli import cli
from helpers.otel_rows import exported
from helpers.stores import all_calls, log_of, served_views
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from callctx.cli.research_agent import run
from callctx.projection.batch import Batch, records
from callctx.projection.otlp import encode_protobuf
from callctx.projection.spans import from_log
from callctx.serve import TableReceiver, serve_grpc, serve_http
from callctx.serve.spool import Segment as spool_segment
from callctx.serve.spool import SpoolBusy, leftover
from callctx.serve.spool import line as spool_line
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.contexts import rebuild
from callctx.store.local import LocalStore
from callctx.store.model import Filter
from callctx.store.otel_table import OtelTable

_names = itertools.count()


def receiver(conn, tmp_path, **kw) -> TableReceiver:
    store = ClickHouseStore(conn, table=f"served_{next(_names)}", create=True)
    kw.setdefault("spool", tmp_path / "spool")
    return TableReceiver(store, follow_every=None, **kw)


def request(port, method, path, body=b"", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    resp = c.getresponse()
    data = resp.read()
    c.close()
    return resp.status, data


@pytest.mark.parametrize(("protocol", "ack"), [("http", "spool"), ("grpc", "table")])
def test_the_official_exporters_into_the_table_read_back_as_the_agents_log(runtime, conn, tmp_path, protocol, ack):
    rx = receiver(conn, tmp_path, ack=ack)
    http_server = serve_http(rx, "127.0.0.1", 0)
    grpc_server = serve_grpc(rx, "127.0.0.1", 0)
    try:
        exporter = (
            HttpExporter(endpoint=f"http://127.0.0.1:{http_server.server_port}/v1/traces")
            if protocol == "http"
            else GrpcExporter(endpoint=f"127.0.0.1:{grpc_server.port}", insecure=True)
        )
        runtime.provider.add_span_processor(SimpleSpanProcessor(exporter))  # each export answered once in the table
        run(runtime)
        runtime.close()
        if ack == "spool":  # answered from the spool: the rows follow
            rx.flush()
        store = rx.store
        with LocalStore(runtime.log_path, finished=True) as local:
            assert [(c.function, c.path, c.usage) for c in all_calls(store)] == [
                (c.function, c.path, c.usage) for c in all_calls(local)
            ]
            ids = [c.span_id for c in all_calls(local)]
            assert served_views(store, ids) == served_views(local, ids)
        status, body = request(http_server.server_port, "GET", "/api/calls?limit=3")
        listed = json.loads(body)
        assert status == 200 and listed["total"] == store.state().calls and len(listed["calls"]) == 3
        status, body = request(http_server.server_port, "GET", "/api/calls/999999")
        assert status == 404
        health = json.loads(request(http_server.server_port, "GET", "/health")[1])
        assert health["written"] == health["spans"] > 0 and health["waiting"] == 0
    finally:
        http_server.shutdown()
        grpc_server.stop(0)
        rx.close()


def test_our_agents_texts_sent_with_its_spans_rebuild_every_call_from_the_table(conn, tmp_path):
    """``setup(endpoint=..., send_texts=True)``: callctx's own exporter sends each model call's
    texts with its span; from the table every call's request is rebuilt and verified."""
    from callctx import setup

    rx = receiver(conn, tmp_path)
    srv = serve_http(rx, "127.0.0.1", 0)
    try:
        rt = setup(tmp_path / "events.jsonl", endpoint=f"http://127.0.0.1:{srv.server_port}", send_texts=True)
        run(rt)
        rt.close()  # flushes the batch exporter: every export answered once its spans are in the spool
        rx.flush()  # and the writer has put them in the table
        ours = all_calls(rx.store, Filter(ours=True))
        assert len(ours) >= 5 and all(rebuild(rx.store.recorded(c)).verified for c in ours)
    finally:
        srv.shutdown()
        rx.close()


def test_a_second_instance_over_the_same_table_answers_for_every_trace(runtime, conn, tmp_path):
    rx = receiver(conn, tmp_path, ack="table")
    srv = serve_http(rx, "127.0.0.1", 0)
    try:
        runtime.provider.add_span_processor(
            SimpleSpanProcessor(HttpExporter(endpoint=f"http://127.0.0.1:{srv.server_port}/v1/traces"))
        )
        run(runtime)
        runtime.close()
        with ClickHouseStore(conn, table=rx.table.table) as other:  # holds nothing of its own
            assert all_calls(other) == all_calls(rx.store)
            assert other.trees().items == rx.store.trees().items
    finally:
        srv.shutdown()
        rx.close()


def test_a_table_that_refuses_writes_is_a_503_and_what_was_acknowledged_is_kept(conn, runtime, tmp_path):
    """``ack="table"``: a refused insert is a 503 (the sender sends again), nothing kept here.
    ``ack="spool"``: acknowledged, kept in the spool (0600) while the table refuses, and
    written by the next receiver started with that spool."""
    run(runtime)
    runtime.close()
    sent = list(from_log(runtime.log_path))
    body = encode_protobuf(sent, service="agent").SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    for ack in ("table", "spool"):
        spool = tmp_path / f"spool-{ack}"
        rx = receiver(conn, tmp_path, ack=ack, spool=spool)
        srv = serve_http(rx, "127.0.0.1", 0)
        try:
            assert request(srv.server_port, "POST", "/v1/traces", body, headers)[0] == 200
            rx.flush()
            assert rx.written == len(sent)
            conn.command(f"DROP TABLE {rx.table.name}")  # the table is gone: every insert now fails
            status, said = request(srv.server_port, "POST", "/v1/traces", body, headers)
            if ack == "table":
                assert status == 503 and b"cannot keep the spans" in said
            else:
                assert status == 200  # acknowledged: the writer keeps the spans and tries again
                rx.flush()
                assert rx.failures >= 1 and "cannot write" in (rx.last_error or "")
        finally:
            srv.shutdown()
            rx.close()
        if ack == "table":
            assert not spool.exists()  # the sender was told to send again: nothing kept here
            continue
        (segment,) = leftover(spool)
        assert segment.stat().st_mode & 0o777 == 0o600
        again = TableReceiver(ClickHouseStore(conn, table=rx.table.table, create=True), follow_every=None, spool=spool)
        try:  # the table made anew: the spool's spans are written before the receiver serves
            assert again.replayed == len(sent) and leftover(spool) == []
            assert {c.span_id for c in all_calls(again.store)} == {r.span_id for r in sent if r.name.startswith("chat")}
        finally:
            again.close()


def test_a_restart_after_a_crash_writes_what_the_spool_holds_and_nothing_twice(conn, tmp_path):
    """What a receiver killed after acknowledging leaves: a segment whose first spans reached
    the table before the kill (the insert done, the segment not yet removed), the rest not, and
    a last line the kill tore (a request never answered). The next receiver writes the rest,
    once, and removes the segment."""
    batch = exported(log_of(foreign_chat.session(), tmp_path))
    half = len(batch.spans) // 2
    spool = tmp_path / "spool"
    rx = receiver(conn, tmp_path, spool=spool)
    rx.ingest(Batch(batch.spans[:half]))
    rx.flush()  # the first half is in the table; its segment was removed
    table = rx.table.table
    rx.close()
    assert leftover(spool) == [] and OtelTable(conn, table=table).count() == half
    segment = spool_segment(spool, 7)
    segment.append(spool_line(batch.spans[:half]))
    segment.append(spool_line(batch.spans[half:]))
    segment.append(b'[{"start_ns":')
    segment.close()
    again = TableReceiver(ClickHouseStore(conn, table=table), follow_every=None, spool=spool)
    try:
        assert again.replayed == len(batch.spans) - half
        assert again.table.count() == len(batch.spans)  # nothing twice
        assert leftover(spool) == []
        with LocalStore(log_of(records(batch), tmp_path / "all"), finished=True) as local:
            assert all_calls(again.store) == all_calls(local)
    finally:
        again.close()


def test_a_spool_serves_one_receiver_at_a_time(conn, chdb_folder, tmp_path):
    """A second receiver given a spool in use is refused (it would write the first one's live
    segments again), on the command line in one line; once the first stops, it may start."""
    spool = tmp_path / "spool"
    first = receiver(conn, tmp_path, spool=spool)
    try:
        with pytest.raises(SpoolBusy, match="in use by another"):
            receiver(conn, tmp_path, spool=spool)
        code, _, err = cli("serve", "--store", f"chdb:{chdb_folder}?table=busy", "--spool", spool, "--port", "0",
                           "--grpc-port", "-1")  # fmt: skip
        assert code == 2 and "in use by another" in err and len(err.strip().splitlines()) == 1
    finally:
        first.close()
    receiver(conn, tmp_path, spool=spool).close()

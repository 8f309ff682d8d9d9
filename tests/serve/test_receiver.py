"""callctx serve: the official OTLP exporters (HTTP and gRPC) into our receiver, byte-identical
trees, limits, tokens, partial success, the read API."""

from __future__ import annotations

import gzip
import http.client
import json
import time

import pytest
from helpers.stores import served_views
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from callctx.cli.research_agent import run
from callctx.projection import Projection, read_log
from callctx.projection.asof import tree_as_seen_by
from callctx.projection.otlp import encode_json, encode_protobuf
from callctx.projection.spans import SpanData
from callctx.serve import Receiver, serve_grpc, serve_http


@pytest.fixture
def server(tmp_path):
    rx = Receiver(tmp_path / "received.jsonl", max_body=1 << 20)
    http_server = serve_http(rx, "127.0.0.1", 0)
    grpc_server = serve_grpc(rx, "127.0.0.1", 0)
    yield rx, http_server.server_port, grpc_server.port
    http_server.shutdown()
    grpc_server.stop(0)
    rx.close()


def request(port, method, path, body=b"", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def all_views(p: Projection) -> dict[str, str]:
    views = {f"session:{k}": p.session_tree(k) for k in p.sessions()}
    views.update({sid: p.view(sid).text for sid, n in p.nodes.items() if n.holds})
    return views


def wait_for(rx: Receiver, spans: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while rx.stats.spans < spans and time.monotonic() < end:
        time.sleep(0.02)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_official_exporter_to_serve_gives_byte_identical_trees(runtime, server, protocol):
    rx, http_port, grpc_port = server
    if protocol == "http":
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces")
    else:
        exporter = GrpcExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True)
    runtime.provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime.send_texts = True
    calls = run(runtime)
    runtime.close()
    wait_for(rx, len(runtime.projection.nodes))
    live = runtime.projection
    served = Projection.from_log(rx.log.path)
    assert all_views(served) == all_views(live)
    holders = [sid for sid, n in live.nodes.items() if n.holds]
    assert served_views(rx.store, holders) == {k: v for k, v in all_views(live).items()}
    # a model call's context, rebuilt from what crossed the wire
    status, body = request(http_port, "GET", "/api/calls/2/context")
    assert status == 200, body
    ctx = json.loads(body)
    assert ctx["verified"] and ctx["request"] == calls[1].body


def test_read_api(runtime, server):
    rx, port, _ = server
    runtime.provider.add_span_processor(
        SimpleSpanProcessor(HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"))
    )
    calls = run(runtime)
    runtime.close()
    wait_for(rx, len(runtime.projection.nodes))
    status, body = request(port, "GET", "/health")
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, body = request(port, "GET", "/api/traces")
    (trace,) = json.loads(body)["traces"]
    status, body = request(port, "GET", f"/api/traces/{trace['id']}/tree")
    assert status == 200 and body.decode() == runtime.projection.session_tree(trace["id"])
    span_id = calls[1].span_id
    status, body = request(port, "GET", f"/api/spans/{span_id}/tree")  # as the call saw it when it started
    assert body.decode() == tree_as_seen_by(read_log(runtime.log_path), span_id)
    assert body.decode().strip() == calls[1].tree.strip()  # what its model call was sent
    status, body = request(port, "GET", f"/api/spans/{span_id}/tree?final=1")  # as the trace ends
    assert body.decode() == runtime.projection.view(span_id).text
    status, body = request(port, "GET", "/api/calls")
    listing = json.loads(body)
    assert [c["function"] for c in listing["calls"]][:2] == ["_pick_stage", "_lit_decide"]
    assert listing["total"] == len(calls) and not listing["calls"][0]["reconstructed"]
    page = json.loads(request(port, "GET", "/api/calls?function=check_novelty&limit=1")[1])
    assert page["total"] == 2 and len(page["calls"]) == 1 and page["next_offset"] == 1
    assert page["calls"][0]["index"] == next(c.index for c in calls if c.function == "check_novelty")
    assert json.loads(request(port, "GET", "/api/calls?status=error")[1])["total"] == 0
    assert request(port, "GET", "/api/calls?status=maybe")[0] == 400
    status, body = request(port, "GET", "/api/calls/2/context")
    assert status == 404 and b"cannot rebuild" in body  # the texts did not travel (send_texts off)
    assert request(port, "GET", "/api/spans/ffffffffffffffff/tree")[0] == 404
    assert request(port, "GET", "/api/nope")[0] == 404


def _spans(n=3, big=""):
    out = []
    for i in range(n):
        out.append(SpanData("ab" * 16, format(i + 1, "016x"), format(i, "016x") if i else None, f"invoke_agent f{i}",
                            1000 + i, 2000 + i, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"f{i}",
                                                 "input.value": big}))  # fmt: skip
    return out


def test_json_gzip_and_content_types(server):
    rx, port, _ = server
    body = json.dumps(encode_json(_spans())).encode()
    status, data = request(port, "POST", "/v1/traces", gzip.compress(body),
                           {"Content-Type": "application/json", "Content-Encoding": "gzip"})  # fmt: skip
    assert status == 200 and json.loads(data) == {}
    pb = encode_protobuf(_spans()).SerializeToString()
    status, data = request(port, "POST", "/v1/traces", pb, {"Content-Type": "application/x-protobuf"})
    assert status == 200 and ExportTraceServiceResponse.FromString(data) == ExportTraceServiceResponse()
    status, data = request(port, "POST", "/v1/traces", b"hello", {"Content-Type": "text/plain"})
    assert status == 415
    assert rx.stats.spans == 6  # the same spans twice: folded idempotently
    p = Projection.from_log(rx.log.path)
    assert p.session_tree(p.sessions()[0]).count("function: f1") == 1


def test_limits_tokens_and_partial_success(tmp_path):
    rx = Receiver(tmp_path / "r.jsonl", max_body=64 * 1024, token="s3cret")
    srv = serve_http(rx, "127.0.0.1", 0)
    port = srv.server_port
    try:
        ok = {"Content-Type": "application/json", "Authorization": "Bearer s3cret"}
        body = json.dumps(encode_json(_spans())).encode()
        assert request(port, "POST", "/v1/traces", body, {"Content-Type": "application/json"})[0] == 401
        assert request(port, "POST", "/v1/traces", body, {**ok, "Authorization": "Bearer nope"})[0] == 401
        assert request(port, "GET", "/api/traces")[0] == 401
        assert request(port, "POST", "/v1/traces", body, ok)[0] == 200
        huge = json.dumps(encode_json(_spans(1, "x" * 100_000))).encode()
        status, data = request(port, "POST", "/v1/traces", huge, ok)
        assert status == 413 and b"limit" in data
        bomb = gzip.compress(b"{" + b" " * 10_000_000 + b"}")
        assert request(port, "POST", "/v1/traces", bomb, {**ok, "Content-Encoding": "gzip"})[0] == 413
        status, data = request(port, "POST", "/v1/traces", b'{"resourceSpans": [', ok)
        assert status == 400 and b"not OTLP/JSON" in data
        doc = encode_json(_spans())
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "zz"
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["traceId"] = "00" * 16
        status, data = request(port, "POST", "/v1/traces", json.dumps(doc).encode(), ok)
        partial = json.loads(data)["partialSuccess"]
        assert status == 200 and partial["rejectedSpans"] == "2" and "all zeros" in partial["errorMessage"]
        assert request(port, "GET", "/health")[0] == 200  # still serving
    finally:
        srv.shutdown()
        rx.close()

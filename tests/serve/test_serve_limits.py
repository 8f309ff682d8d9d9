"""callctx serve under load and abuse: read timeouts, the connection cap, bounded threads,
multi-member gzip, what /health tells whom, and bounded memory (trees folded on read, within
the bound, equal what replaying the log renders)."""

from __future__ import annotations

import gzip
import http.client
import json
import selectors
import socket
import threading
import time

import pytest

from callctx.cli.main import build_parser
from callctx.projection import Projection
from callctx.projection.otlp import encode_protobuf
from callctx.projection.spans import SpanData
from callctx.serve import Receiver, serve_grpc, serve_http
from callctx.serve.body import MAX_MEMBERS

PB = {"Content-Type": "application/x-protobuf"}
DEADLINE = 10.0  # generous: what "closed" and "answered" must happen within


@pytest.fixture
def serve(tmp_path):
    """Start a receiver and its HTTP server with the given limits; everything stops after."""
    started = []

    def start(**limits):
        http_limits = {k: limits.pop(k) for k in ("read_timeout", "max_connections") if k in limits}
        rx = Receiver(tmp_path / f"received{len(started)}.jsonl", **limits)
        srv = serve_http(rx, "127.0.0.1", 0, **http_limits)
        started.append((rx, srv))
        return rx, srv, srv.server_port

    yield start
    for rx, srv in started:
        srv.shutdown()
        rx.close()


def request(port, method, path, body=b"", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data, resp


def closed_by_server(sock: socket.socket, deadline: float = DEADLINE) -> bool:
    """Read until the server closes the connection (True) or the deadline passes (False)."""
    end = time.monotonic() + deadline
    while (left := end - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(4096):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
    return False


def wait_until(condition, deadline: float = DEADLINE) -> bool:
    """Poll a condition of the server's state (not a sleep standing in for one)."""
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)


def trace(t: int, n: int = 4, conv: str | None = None, running: bool = False) -> list[SpanData]:
    """A finished agent trace: nested agentic calls and a model call (``running``: its root never ended)."""
    tid = format(0xABC00000 + t, "032x")
    spans = []
    for i in range(n):
        if i == 2:
            attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "input.value": f"q{t}"}
        else:
            attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"t{t}f{i}",
                     "input.value": f"in {t}.{i}", "output.value": f"out {t}.{i}"}  # fmt: skip
        if i == 0 and conv:
            attrs["gen_ai.conversation.id"] = conv
        if i == 0 and running:
            attrs["callctx.interrupted"] = True
        sid, parent = format(t * 1000 + i + 1, "016x"), format(t * 1000 + i, "016x") if i else None
        spans.append(SpanData(tid, sid, parent, f"op{i}", 10_000 * t + i, 10_000 * t + 100 - i, attrs))
    return spans


def send(port, spans, headers=PB):
    status, data, _ = request(port, "POST", "/v1/traces", encode_protobuf(spans).SerializeToString(), headers)
    assert status == 200, data
    return data


# ---- time limits -------------------------------------------------------------------------------
def test_idle_and_trickling_connections_are_closed_after_the_read_timeout(serve):
    _, _, port = serve(read_timeout=0.5)
    idle = connect(port)
    assert closed_by_server(idle)
    idle.close()

    # a keep-alive connection that served a request, then went quiet
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    conn.request("GET", "/health")
    assert conn.getresponse().read()
    assert closed_by_server(conn.sock)
    conn.close()

    # a client that trickles its headers, one byte at a time, never finishing within the limit
    slow = connect(port)
    slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
    end = time.monotonic() + DEADLINE
    closed = False
    while time.monotonic() < end and not closed:
        try:
            slow.sendall(b"X")  # pacing of the client under test, not synchronisation
        except OSError:
            closed = True
            break
        sel = selectors.DefaultSelector()
        sel.register(slow, selectors.EVENT_READ)
        if sel.select(0.1):
            closed = closed_by_server(slow, 1.0)
        sel.close()
    assert closed, "a trickling client kept its connection past the read timeout"
    slow.close()


def test_a_slow_body_is_cut_off_too(serve):
    rx, _, port = serve(read_timeout=0.5)
    sock = connect(port)
    sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                 b"Content-Length: 1000\r\n\r\n" + b"\x0a" * 10)  # fmt: skip
    assert closed_by_server(sock)
    sock.close()
    assert rx.stats.spans == 0
    assert request(port, "GET", "/health")[0] == 200  # and still serving


# ---- connection cap and threads ------------------------------------------------------------------
def test_over_the_connection_cap_a_client_gets_503_at_once(serve):
    _, srv, port = serve(read_timeout=30, max_connections=4)
    held = [connect(port) for _ in range(4)]
    assert wait_until(lambda: srv.open_connections == 4)
    status, data, resp = request(port, "GET", "/health")
    assert status == 503 and resp.getheader("Retry-After") and b"too many connections" in data
    status, _, _ = request(port, "POST", "/v1/traces", encode_protobuf(trace(1)).SerializeToString(), PB)
    assert status == 503
    held.pop().close()
    assert wait_until(lambda: srv.open_connections == 3)
    assert request(port, "GET", "/health")[0] == 200
    for sock in held:
        sock.close()


def test_threads_stay_bounded_while_50_slow_clients_connect(serve):
    _, srv, port = serve(read_timeout=30, max_connections=8)
    before = threading.active_count()
    others = {t.ident for t in threading.enumerate()}  # earlier servers' workers may still be leaving
    clients = []
    for _ in range(50):
        sock = connect(port)
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")  # and nothing more
        clients.append(sock)
    assert wait_until(lambda: srv.open_connections == 8)
    # the 42 turned away get their 503 and a closed connection; the 8 held get nothing yet
    sel = selectors.DefaultSelector()
    for sock in clients:
        sel.register(sock, selectors.EVENT_READ)
    answered: dict[socket.socket, bytes] = {}
    end = time.monotonic() + DEADLINE
    while len(answered) < 42 and time.monotonic() < end:
        for key, _ in sel.select(end - time.monotonic()):
            sock = key.fileobj
            data = b""
            sock.settimeout(DEADLINE)
            while chunk := sock.recv(4096):
                data += chunk
            answered[sock] = data
            sel.unregister(sock)
    sel.close()
    assert len(answered) == 42
    assert all(a.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: " in a for a in answered.values())
    assert srv.worker_threads <= 8
    assert threading.active_count() <= before + 8 + 2  # the workers, the helper that closes the turned away
    assert sum(t.name == "callctx-http" and t.ident not in others for t in threading.enumerate()) <= 8
    for sock in clients:
        sock.close()
    assert wait_until(lambda: srv.open_connections == 0)


def test_grpc_with_bounded_streams_still_serves(tmp_path):
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    rx = Receiver(tmp_path / "g.jsonl")
    server = serve_grpc(rx, "127.0.0.1", 0, max_concurrent_rpcs=2, max_concurrent_streams=1)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            stub.Export(encode_protobuf(trace(1)), timeout=DEADLINE)
        assert rx.stats.spans == 4
    finally:
        server.stop(0)
        rx.close()


# ---- bodies ------------------------------------------------------------------------------------
def test_a_multi_member_gzip_body_folds_every_member(serve):
    rx, _, port = serve()
    first, second = trace(1), trace(2)
    body = gzip.compress(encode_protobuf(first).SerializeToString()) + gzip.compress(
        encode_protobuf(second).SerializeToString()
    )
    status, data, _ = request(port, "POST", "/v1/traces", body, {**PB, "Content-Encoding": "gzip"})
    assert status == 200, data
    assert rx.stats.spans == 8
    assert {t.key for t in rx.store.trees().items} == {first[0].trace_id, second[0].trace_id}
    # a member cut short, or bytes after the last member, are refused, never dropped
    for bad in (body[:-4], body + b"garbage"):
        assert request(port, "POST", "/v1/traces", bad, {**PB, "Content-Encoding": "gzip"})[0] == 400
    empty = gzip.compress(b"")
    assert request(port, "POST", "/v1/traces", empty * (MAX_MEMBERS + 1), {**PB, "Content-Encoding": "gzip"})[0] == 400
    assert rx.stats.spans == 8


def test_gzip_bombs_are_413_across_members_too(serve):
    _, _, port = serve(max_body=1 << 20)
    enc = {**PB, "Content-Encoding": "gzip"}
    assert request(port, "POST", "/v1/traces", gzip.compress(b"\0" * 10_000_000), enc)[0] == 413
    half = gzip.compress(b"\0" * 600_000)  # each member under the limit, the two together over it
    assert request(port, "POST", "/v1/traces", half + half, enc)[0] == 413


# ---- /health -----------------------------------------------------------------------------------
def test_health_shows_counters_only_to_who_may_read_the_api(serve):
    _, _, port = serve(token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    send(port, trace(1), {**PB, **auth})
    status, data, _ = request(port, "GET", "/health")
    assert status == 200 and json.loads(data) == {"status": "ok"}
    status, data, _ = request(port, "GET", "/health", headers={"Authorization": "Bearer nope"})
    assert status == 200 and json.loads(data) == {"status": "ok"}
    status, data, _ = request(port, "GET", "/health", headers=auth)
    health = json.loads(data)
    assert health["status"] == "ok" and health["spans"] == 4 and health["traces"] == 1 and health["calls"] == 1
    for counter in ("requests", "rejected", "malformed", "open_connections", "indexed_spans", "unindexed_records"):
        assert counter in health
    _, _, open_port = serve()  # no token configured: the counters for everyone
    assert "spans" in json.loads(request(open_port, "GET", "/health")[1])


# ---- bounded memory ----------------------------------------------------------------------------
def test_trees_fold_on_read_within_the_bound_and_read_the_same(serve):
    rx, _, port = serve(max_trees=5)
    seen_tree, seen_span = {}, {}
    for t in range(20):
        spans = trace(t)
        send(port, spans)
        key, sid = spans[0].trace_id, spans[1].span_id
        status, data, _ = request(port, "GET", f"/api/traces/{key}/tree")
        assert status == 200, data
        seen_tree[key] = data
        seen_span[sid] = request(port, "GET", f"/api/spans/{sid}/tree")[1]
        assert len(rx.store._folded) <= 5  # the folded trees kept for reads stay within the bound
    from_log = Projection.from_log(rx.log.path, recover=False)
    assert set(from_log.sessions()) == set(seen_tree)  # the log has them all
    for key, before in seen_tree.items():  # folded again from the log: the same bytes
        status, data, _ = request(port, "GET", f"/api/traces/{key}/tree")
        assert status == 200 and data == before, key
        assert data.decode() == from_log.session_tree(key)
    for sid, before in seen_span.items():
        status, data, _ = request(port, "GET", f"/api/spans/{sid}/tree")
        assert status == 200 and data == before, sid
    listed = json.loads(request(port, "GET", "/api/traces")[1])["traces"]
    assert [t["id"] for t in listed] == from_log.sessions()
    assert all(t["functions"] == [f"t{i}f0"] for i, t in enumerate(listed))
    health = json.loads(request(port, "GET", "/health")[1])
    assert health["traces"] == 20 and health["calls"] == 20
    assert request(port, "GET", "/api/traces/ffffffffffffffffffffffffffffffff/tree")[0] == 404
    assert request(port, "GET", "/api/spans/ffffffffffffffff/tree")[0] == 404


def test_late_spans_and_sessions_fold_into_the_trees_read_before(serve):
    rx, _, port = serve(max_trees=3)
    for t in range(12):
        send(port, trace(t, conv="chat-1" if t in (0, 5) else None))  # a session of two traces
    session_before = request(port, "GET", "/api/traces/chat-1/tree")[1]
    assert session_before.count(b"function: t0f0") == 1 and session_before.count(b"function: t5f0") == 1
    old = trace(1)
    assert b"function: late" not in request(port, "GET", f"/api/traces/{old[0].trace_id}/tree")[1]  # kept folded
    # a span late for a tree read before, and a new trace in the session read before
    late = SpanData(old[0].trace_id, format(0xFFF1, "016x"), old[1].span_id, "late", 10_011, 10_012,
                    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "late"})  # fmt: skip
    send(port, [late])
    send(port, trace(40, conv="chat-1"))
    from_log = Projection.from_log(rx.log.path, recover=False)
    for key in from_log.sessions():
        assert request(port, "GET", f"/api/traces/{key}/tree")[1].decode() == from_log.session_tree(key), key
    for sid in from_log.nodes:
        assert request(port, "GET", f"/api/spans/{sid}/tree?final=1")[1].decode() == from_log.view(sid).text, sid
    assert b"function: late" in request(port, "GET", f"/api/traces/{old[0].trace_id}/tree")[1]
    assert b"function: t40f0" in request(port, "GET", "/api/traces/chat-1/tree")[1]
    assert len(json.loads(request(port, "GET", "/api/traces")[1])["traces"]) == len(from_log.sessions())
    health = json.loads(request(port, "GET", "/health")[1])
    assert health["traces"] == len(from_log.sessions())  # nothing listed twice


def test_trees_with_spans_that_never_ended_read_as_the_log_folds_them(serve):
    rx, _, port = serve(max_trees=2)
    for t in range(12):
        send(port, trace(t, running=True))
    from_log = Projection.from_log(rx.log.path, recover=False)
    for key in from_log.sessions():
        assert request(port, "GET", f"/api/traces/{key}/tree")[1].decode() == from_log.session_tree(key), key
    running = json.loads(request(port, "GET", "/api/traces?status=running")[1])
    assert running["total"] == 12


def test_serve_options_and_defaults():
    args = build_parser().parse_args(["serve"])
    assert (args.read_timeout, args.max_connections, args.max_traces) == (10.0, 256, 1000)
    args = build_parser().parse_args(["serve", "--read-timeout", "2.5", "--max-connections", "8", "--max-traces", "50"])
    assert (args.read_timeout, args.max_connections, args.max_traces) == (2.5, 8, 50)

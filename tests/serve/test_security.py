"""``callctx serve`` and ``callctx ui`` against an attacker, through the real servers on loopback:
the ``Host`` check (DNS rebinding), hostile numbers and times, spans that poison nothing, links
that are not followed, files only their owner reads, parameters out of range, odd tokens, the
security headers on every answer, paths that need escaping."""

from __future__ import annotations

import http.client
import json
import os
import stat
from pathlib import Path

import pytest
from helpers.cli import cli
from helpers.otlp_requests import build, span
from helpers.stores import all_calls

from callctx.cli.research_agent import run
from callctx.projection import Projection
from callctx.serve import Receiver, serve_http
from callctx.serve.http_server import SECURITY_HEADERS, Access
from callctx.serve.ingest import index_path
from callctx.store.local import LocalStore
from callctx.ui.server import serve_page
from callctx.ui.views import Views

TRACE = bytes.fromhex("ab" * 16)
PB = {"Content-Type": "application/x-protobuf"}
CHAT = [("gen_ai.operation.name", "chat"), ("gen_ai.request.model", "m")]


def request(port: int, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data, resp


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(**options):
        allow = options.pop("allow_hosts", ())
        rx = Receiver(tmp_path / f"received{len(started)}.jsonl", allow_hosts=allow, **options)
        srv = serve_http(rx, "127.0.0.1", 0)
        started.append((rx, srv))
        return rx, srv.server_port

    yield start
    for rx, srv in started:
        srv.shutdown()
        rx.close()


def agent_trace(trace: bytes = TRACE, base: int = 1, session: str | None = None, usage: int = 12) -> bytes:
    root_attrs = [("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "root")]
    if session:
        root_attrs.append(("gen_ai.conversation.id", session))
    return build([([("service.name", "s")], [("x", [
        span(trace, base, None, "invoke_agent root", 10, 100, root_attrs),
        span(trace, base + 1, base, "chat m", 20, 30, [*CHAT, ("gen_ai.usage.input_tokens", usage)]),
    ])])]).SerializeToString()  # fmt: skip


# ---- DNS rebinding: the Host check -----------------------------------------------------------------
def test_a_foreign_host_reaches_nothing_ingest_included(serve):
    rx, port = serve()
    assert request(port, "POST", "/v1/traces", agent_trace(), PB)[0] == 200
    for path in ("/ui/api/calls/1", "/api/calls", "/api/traces", "/ui/", "/health"):
        status, data, resp = request(port, "GET", path, headers={"Host": "evil.example"})
        assert status == 403 and b"--allow-host evil.example" in data, path
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    status, _, _ = request(port, "POST", "/v1/traces", agent_trace(bytes.fromhex("cd" * 16)),
                           {**PB, "Host": f"evil.example:{port}"})  # fmt: skip
    assert status == 403 and rx.stats.spans == 2  # posted spans from another origin are not taken
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost", "10.1.2.3"):
        assert request(port, "GET", "/api/calls", headers={"Host": host})[0] == 200, host
    _, allowed = serve(allow_hosts=["callctx.internal"])
    assert request(allowed, "GET", "/api/traces", headers={"Host": "callctx.internal:4318"})[0] == 200
    assert request(allowed, "GET", "/api/traces", headers={"Host": "evil.example"})[0] == 403


def test_the_page_server_checks_the_host_and_takes_a_token(tmp_path):
    log = tmp_path / "events.jsonl"
    rt = __import__("callctx").setup(log)
    run(rt)
    rt.close()
    store = LocalStore(log)
    server = serve_page(Views(store), "127.0.0.1", 0, access=Access.of("None", served="127.0.0.1"))
    port = server.server_port
    try:
        assert request(port, "GET", "/ui/api/state", headers={"Host": "evil.example"})[0] == 403
        for headers in ({}, {"Cookie": "callctx_token="}, {"Authorization": "Bearer"}, {"Cookie": "x=1"},
                        {"Authorization": "Bearer none"}):  # fmt: skip
            status, _, resp = request(port, "GET", "/ui/api/state", headers=headers)
            assert status == 401, headers  # a token of "None" opens nothing without it
            assert resp.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]
        status, _, resp = request(port, "GET", "/ui/?token=None")
        assert status == 303 and resp.headers["X-Frame-Options"] == "DENY"
        cookie = resp.headers["Set-Cookie"].split(";")[0]
        status, data, resp = request(port, "GET", "/ui/api/state", headers={"Cookie": cookie})
        assert status == 200 and json.loads(data)["calls"] == 11
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        status, _, resp = request(port, "GET", "/ui/api/nope", headers={"Cookie": cookie})
        assert status == 404 and resp.headers["Cache-Control"] == "no-store"
    finally:
        server.shutdown()
        store.close()


# ---- numbers and times past what anything holds ------------------------------------------------------
def test_huge_usage_is_listed_summed_and_restarts(serve, tmp_path):
    rx, port = serve()
    big = (1 << 63) - 1
    assert request(port, "POST", "/v1/traces", agent_trace(usage=big), PB)[0] == 200
    assert request(port, "POST", "/v1/traces", agent_trace(base=5, usage=big), PB)[0] == 200
    calls = json.loads(request(port, "GET", "/api/calls")[1])
    traces = json.loads(request(port, "GET", "/api/traces")[1])
    assert calls["total"] == 2 and traces["traces"][0]["usage"]["input"] >= 1 << 48
    log = rx.log.path
    for suffix in ("", "-wal", "-shm"):  # an unclean stop with no index left: made again from the log
        Path(f"{index_path(log)}{suffix}").unlink(missing_ok=True)
    again = LocalStore(log, index=index_path(log))
    assert len(all_calls(again)) == 2 and again.trees().items[0].usage.input
    again.close()


@pytest.mark.parametrize("start", [(1 << 64) - 1, 1 << 63, 10**23])
def test_spans_past_the_time_window_are_rejected_and_the_rest_kept(serve, start):
    rx, port = serve()
    good = span(TRACE, 1, None, "invoke_agent a", 10, 20, [("gen_ai.operation.name", "invoke_agent")])
    if start < 1 << 64:
        bad = span(TRACE, 2, 1, "chat late", start, start, CHAT)
        status, data, _ = request(port, "POST", "/v1/traces", build([([], [("x", [good, bad])])]).SerializeToString(),
                                  PB)  # fmt: skip
        assert status == 200
    else:  # JSON has no bound
        doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "a", "startTimeUnixNano": "10", "endTimeUnixNano": "20"},
            {"traceId": "ab" * 16, "spanId": "02" * 8, "name": "late", "startTimeUnixNano": str(start),
             "endTimeUnixNano": str(start)},
        ]}]}]}  # fmt: skip
        status, data, _ = request(port, "POST", "/v1/traces", json.dumps(doc).encode(),
                                  {"Content-Type": "application/json"})  # fmt: skip
        assert status == 200 and "1970 to 2262" in json.loads(data)["partialSuccess"]["errorMessage"]
    assert rx.stats.rejected == 1 and rx.stats.spans == 1
    assert request(port, "POST", "/v1/traces", agent_trace(bytes.fromhex("cd" * 16), base=7), PB)[0] == 200
    assert json.loads(request(port, "GET", "/api/traces")[1])["total"] == 2


def test_spaced_hex_ids_are_rejected_and_the_request_kept(serve):
    rx, port = serve()
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "ab" * 16, "spanId": "aabb ccdd eeff00", "name": "spaced"},
        {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "fine"},
    ]}]}]}  # fmt: skip
    body = json.dumps(doc).encode()
    status, data, _ = request(port, "POST", "/v1/traces", body, {"Content-Type": "application/json"})
    assert status == 200 and json.loads(data)["partialSuccess"]["rejectedSpans"] == "1"
    assert rx.stats.spans == 1 and request(port, "GET", "/health")[0] == 200


# ---- a call that cannot be rebuilt hides no other -----------------------------------------------------
def test_a_bogus_or_redacted_call_hides_no_other(tmp_path, serve):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from callctx import setup
    from callctx.export.shaping import ShapingExporter

    _, port = serve()
    bogus = build([([], [("x", [span(bytes.fromhex("ee" * 16), 9, None, "chat m", 1, 2,
                                     [*CHAT, ("callctx.context", '{"wire":"anthropic"}')])])])])  # fmt: skip
    assert request(port, "POST", "/v1/traces", bogus.SerializeToString(), PB)[0] == 200
    rt = setup(tmp_path / "agent.jsonl", session_id="s1")
    rt.provider.add_span_processor(
        SimpleSpanProcessor(ShapingExporter(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
    )
    rt.send_texts = True
    run(rt)
    rt.close()
    calls = json.loads(request(port, "GET", "/api/calls?limit=100")[1])["calls"]
    assert calls[0]["span_id"] == "09" * 8 and len(calls) == 12  # the bogus one starts first
    first = json.loads(request(port, "GET", "/ui/api/calls/1")[1])
    assert first["rebuilt"] is False and "cannot rebuild call 1" in first["reason"]
    for c in calls[1:]:
        status, data, _ = request(port, "GET", f"/ui/api/calls/{c['index']}")
        assert status == 200, data
        assert json.loads(data)["rebuilt"] is True
    chart = json.loads(request(port, "GET", "/ui/api/trees/s1/chart")[1])
    assert len(chart["calls"]) == 11


# ---- files: never through a link, only their owner reads them ------------------------------------------
def test_a_link_planted_at_the_log_or_the_index_is_refused(tmp_path):
    target = tmp_path / "bashrc"
    target.write_text("# the user's file\n")
    link = tmp_path / "received.jsonl"
    link.symlink_to(target)
    code, _, err = cli("serve", "--log", link, "--port", "0", "--grpc-port", "-1")
    assert code == 2 and "symbolic link" in err and len(err.splitlines()) == 1
    assert target.read_text() == "# the user's file\n"
    link.unlink()
    Path(index_path(link)).symlink_to(target)  # the index beside it
    code, _, err = cli("serve", "--log", link, "--port", "0", "--grpc-port", "-1")
    assert code == 2 and "symbolic link" in err
    assert target.read_text() == "# the user's file\n"


@pytest.mark.parametrize("command", ["export", "import"])
def test_an_output_that_is_a_link_is_refused_unless_forced(tmp_path, command):
    log = tmp_path / "events.jsonl"
    rt = __import__("callctx").setup(log)
    run(rt)
    rt.close()
    trace_file = tmp_path / "trace.json"
    assert cli("export", log, "-o", trace_file)[0] == 0
    target = tmp_path / "profile"
    target.write_text("keep me\n")
    out = tmp_path / "out"
    out.symlink_to(target)
    source = log if command == "export" else trace_file
    code, _, err = cli(command, source, "-o", out)
    assert code == 2 and "symbolic link" in err and target.read_text() == "keep me\n"
    code, _, err = cli(command, source, "-o", out, "--force")
    assert code == 0, err
    assert target.read_text() == "keep me\n" and not out.is_symlink() and out.stat().st_size
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_every_file_serve_keeps_is_private(serve):
    rx, port = serve()
    assert request(port, "POST", "/v1/traces", agent_trace(), PB)[0] == 200
    rx.store.refresh()
    log = rx.log.path
    for path in (log, Path(index_path(log)), Path(f"{index_path(log)}-wal"), Path(f"{index_path(log)}-shm")):
        assert path.exists(), path
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_log_shared_with_wider_permissions_is_made_private(tmp_path):
    log = tmp_path / "received.jsonl"
    log.write_text("")
    os.chmod(log, 0o644)
    rx = Receiver(log, index_every=None)
    rx.close()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


# ---- read parameters ----------------------------------------------------------------------------------
def test_out_of_range_parameters_are_400_with_the_reason(serve):
    _, port = serve()
    assert request(port, "POST", "/v1/traces", agent_trace(), PB)[0] == 200
    for path in ("/api/calls?offset=99999999999999999999", "/api/traces?since=9999-12-31T00:00:00",
                 "/api/traces?since=yesterday", "/api/calls/99999999999999999999999/context", "/api/calls?limit=-1",
                 "/api/calls/0/context", "/api/calls?status=maybe", "/api/traces/x/tree?render_range=abc",
                 "/ui/api/calls?offset=1e9", "/ui/api/calls/99999999999999999999"):  # fmt: skip
        status, data, _ = request(port, "GET", path)
        assert status == 400 and json.loads(data)["error"], path
    assert request(port, "GET", "/api/calls?offset=9223372036854775807")[0] == 200  # the largest: an empty page


def test_paths_that_need_escaping_open(serve):
    _, port = serve()
    assert request(port, "POST", "/v1/traces", agent_trace(session="user 42: chat/1"), PB)[0] == 200
    trees = json.loads(request(port, "GET", "/api/traces")[1])["traces"]
    assert [t["id"] for t in trees] == ["user 42: chat/1"]
    status, data, _ = request(port, "GET", "/api/traces/user%2042%3A%20chat%2F1/tree")
    assert status == 200 and b"function: root" in data
    status, data, _ = request(port, "GET", "/ui/api/trees/user%2042%3A%20chat%2F1/nodes")
    assert status == 200 and json.loads(data)["total"] == 1


def test_head_and_other_methods_get_an_answer_with_the_headers(serve):
    _, port = serve()
    status, _, resp = request(port, "DELETE", "/api/calls")
    assert status == 501 and resp.headers["X-Content-Type-Options"] == "nosniff"


def test_the_receiver_replays_what_it_took(serve):
    rx, port = serve()
    for i in range(1, 4):
        assert request(port, "POST", "/v1/traces", agent_trace(bytes([i]) * 16, base=10 * i), PB)[0] == 200
    replayed = Projection.from_log(rx.log.path, recover=False)
    assert len(replayed.sessions()) == 3

"""setup(): joining providers, the OTLP exporter from the standard variables, a bounded exit,
and programs run under opentelemetry-instrument."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.trees import parse
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider

from callctx import agentic, setup
from callctx import environ as settings
from callctx.export import otel
from callctx.projection import Projection
from callctx.projection import schema as s

ROOT = Path(__file__).resolve().parents[2]


class Sink(BaseHTTPRequestHandler):
    """A bare OTLP/HTTP endpoint: records request bodies (or hangs, when told to)."""

    bodies: list[bytes]
    hang: threading.Event | None = None

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.hang is not None:
            self.hang.wait(30)
        self.bodies.append(body)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()
        except OSError:  # the exporter gave up waiting
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def sink():
    handler = type("H", (Sink,), {"bodies": [], "hang": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, handler
    if handler.hang is not None:
        handler.hang.set()
    server.shutdown()


def test_exporter_from_the_standard_variables(monkeypatch):
    for k in list(os.environ):
        if k.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(k)
    assert otel.exporter_from_settings(settings.read()) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    http = otel.exporter_from_settings(settings.read())
    assert type(http).__module__.endswith("proto.http.trace_exporter")
    assert http._endpoint == "http://127.0.0.1:9/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    grpc = otel.exporter_from_settings(settings.read())
    assert type(grpc).__module__.endswith("proto.grpc.trace_exporter")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL")
    assert (
        otel.exporter_from_settings(settings.read(), "http://10.0.0.1:4318")._endpoint
        == "http://10.0.0.1:4318/v1/traces"
    )


def test_spans_reach_an_otlp_endpoint(sink, tmp_path):
    server, handler = sink
    rt = setup(tmp_path / "events.jsonl", endpoint=f"http://127.0.0.1:{server.server_port}")

    @agentic
    def hello(name: str) -> str:
        return f"hi {name}"

    hello("otlp")
    rt.close()
    names = []
    for body in handler.bodies:
        req = ExportTraceServiceRequest.FromString(body)
        names += [sp.name for rs in req.resource_spans for ss in rs.scope_spans for sp in ss.spans]
    assert names == ["invoke_agent hello"]


def test_joining_the_programs_own_provider(tmp_path):
    mine = TracerProvider()
    rt = setup(tmp_path / "events.jsonl", provider=mine)
    assert rt.provider is mine and not rt.owns_provider
    tracer = mine.get_tracer("someone-else")
    seen = {}

    @agentic
    def ours() -> str:
        seen["tree"] = rt.call_tree()
        return "ok"

    # another library's GenAI-convention spans, and a plain span in between
    planner = {s.OPERATION: "invoke_agent", s.AGENT_NAME: "planner"}
    with tracer.start_as_current_span("invoke_agent planner", attributes=planner), tracer.start_as_current_span("GET"):
        ours()
    rt.close()
    tree = parse(seen["tree"])
    assert tree[0]["function"] == "planner" and tree[0]["children"][0]["function"] == "ours"


SLOW_EXIT = textwrap.dedent(
    """
    import sys
    from callctx import agentic, setup
    rt = setup(sys.argv[1], exit_timeout=float(sys.argv[2]))

    @agentic
    def work(i):
        return i

    for i in range(2200):
        work(i)
    print("done", flush=True)
    """
)


@pytest.mark.parametrize("where", ["down", "hanging"])
def test_an_unreachable_endpoint_does_not_hold_the_exit(sink, tmp_path, where):
    """The exit waits for the exporter at most ``exit_timeout``, then says what it dropped;
    the local log is complete whatever the exporter does. (What the exporter costs each call
    is a figure of bench/exporter.py, not an assertion here.)"""
    server, handler = sink
    if where == "down":
        endpoint = "http://127.0.0.1:9"  # nothing listens
    else:
        handler.hang = threading.Event()  # accepts, never answers
        endpoint = f"http://127.0.0.1:{server.server_port}"
    script = tmp_path / "slow_exit.py"
    script.write_text(SLOW_EXIT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "60"  # the exporter alone would wait far longer than the bound
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "events.jsonl"), "0.5"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    assert "were dropped (the local log has them)" in proc.stderr  # the bound ended the wait, not the exporter
    p = Projection.from_log(tmp_path / "events.jsonl")
    assert p.events == 2 * 2200  # the local log is complete


INSTRUMENTED = textwrap.dedent(
    """
    from opentelemetry import trace

    tracer = trace.get_tracer("some.agent.framework")
    with tracer.start_as_current_span("invoke_agent writer", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer",
            "input.value": "draft the intro"}):
        with tracer.start_as_current_span("invoke_agent critic", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "critic"}) as span:
            span.set_attribute("output.value", "looks fine")
    """
)


def test_opentelemetry_instrument_gets_the_call_tree_without_code_changes(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(INSTRUMENTED)
    log = tmp_path / "events.jsonl"
    bindir = Path(sys.executable).parent
    env = {
        **os.environ,
        "CALLCTX_LOG": str(log),
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = subprocess.run(
        [str(bindir / "opentelemetry-instrument"), sys.executable, str(script)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    p = Projection.from_log(log)
    tree = parse(p.session_tree(p.sessions()[0]))
    assert tree[0]["function"] == "writer"
    assert tree[0]["children"] == [{"function": "critic", "status": "done"}]


def test_other_runtimes_processor_stops_recording_after_close(tmp_path):
    mine = TracerProvider()
    rt1 = setup(tmp_path / "a.jsonl", provider=mine)
    rt1.close()
    rt2 = setup(tmp_path / "b.jsonl", provider=mine)
    with mine.get_tracer("x").start_as_current_span("invoke_agent a", attributes={s.OPERATION: "invoke_agent"}):
        pass
    rt2.close()
    assert Projection.from_log(tmp_path / "a.jsonl").events == 0
    assert Projection.from_log(tmp_path / "b.jsonl").events == 2
    assert trace.get_tracer_provider() is not None

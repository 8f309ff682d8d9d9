"""``callctx serve`` started again on its log answers everything it answered before: after a clean
stop and after ``SIGKILL``, with or without the index beside the log. Our agent's spans (the
official OTLP exporter) and another instrumentation's, through the real command."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.otlp_requests import build, span
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from callctx import setup
from callctx.cli.research_agent import run
from callctx.projection.log_reader import read_log

FOREIGN = bytes.fromhex("cd" * 16)


class Serve:
    """``callctx serve`` in its own process, on a free port."""

    def __init__(self, log: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "callctx.cli", "serve", "--log", str(log), "--port", "0", "--grpc-port", "-1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert "read API on http://" in line, line + self.proc.stderr.read()  # type: ignore[union-attr]
        self.port = int(line.rsplit(":", 1)[1])

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        return resp.status, body

    def post(self, body: bytes) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
        status = conn.getresponse().status
        conn.close()
        return status

    def stop(self, sig: int) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def foreign_trace() -> bytes:
    """An agent another instrumentation traced: OpenInference kinds, messages in attributes."""
    msgs = [("llm.input_messages.0.message.role", "user"), ("llm.input_messages.0.message.content", "Plan a trip")]
    return build([([("service.name", "trip-agent")], [("openinference", [
        span(FOREIGN, 1, None, "Agent", 10, 100, [("openinference.span.kind", "AGENT"), ("agent.name", "planner"),
                                                  ("session.id", "trip-1")]),
        span(FOREIGN, 2, 1, "ChatOpenAI", 20, 40, [("openinference.span.kind", "LLM"), ("llm.model_name", "gpt-x"),
                                                   ("llm.token_count.prompt", 30), *msgs]),
        span(FOREIGN, 3, 1, "search", 50, 60, [("openinference.span.kind", "TOOL"), ("tool.name", "search")]),
    ])])]).SerializeToString()  # fmt: skip


def everything(serve: Serve, span_ids: list[str]) -> dict[str, object]:
    """Every answer of the read API that the log determines."""
    out: dict[str, object] = {}
    for path in ("/api/traces", "/api/calls", "/api/calls?service=trip-agent", "/ui/api/trees", "/ui/api/calls"):
        out[path] = serve.get(path)
    traces = json.loads(serve.get("/api/traces")[1])["traces"]
    calls = json.loads(serve.get("/api/calls")[1])["calls"]
    assert traces and calls
    for t in traces:
        out[t["id"]] = serve.get(f"/api/traces/{t['id']}/tree")
        out[f"nodes {t['id']}"] = serve.get(f"/ui/api/trees/{t['id']}/nodes")
    for c in calls:
        out[f"context {c['index']}"] = serve.get(f"/api/calls/{c['index']}/context")
        out[f"page {c['index']}"] = serve.get(f"/ui/api/calls/{c['index']}")
    for sid in span_ids:
        out[f"as seen {sid}"] = serve.get(f"/api/spans/{sid}/tree")
        out[f"final {sid}"] = serve.get(f"/api/spans/{sid}/tree?final=1")
    assert all(status == 200 for status, _ in out.values()), [k for k, (s, _) in out.items() if s != 200]
    return out


@pytest.fixture(scope="module")
def received(tmp_path_factory):
    """A serve's log, filled by our agent through the official exporter and by another
    instrumentation's spans, and everything the first serve answered for it."""
    folder = tmp_path_factory.mktemp("restart")
    log = folder / "received.jsonl"
    serve = Serve(log)
    rt = setup(folder / "agent.jsonl", session_id="demo")
    rt.provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{serve.port}/v1/traces"))
    )
    rt.send_texts = True
    run(rt)
    rt.close()
    assert serve.post(foreign_trace()) == 200
    span_ids = [r.span_id for r in read_log(log) if type(r).__name__ == "SpanStarted"]
    before = everything(serve, span_ids)
    serve.stop(signal.SIGTERM)
    return log, span_ids, before


@pytest.mark.parametrize("stop", ["clean", "kill"])
@pytest.mark.parametrize("index", ["kept", "deleted"])
def test_a_restarted_serve_answers_everything_it_answered(received, stop, index):
    log, span_ids, before = received
    first = Serve(log)
    assert everything(first, span_ids) == before  # started on the log the first serve left
    first.stop(signal.SIGTERM if stop == "clean" else signal.SIGKILL)
    if index == "deleted":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{log}.index.sqlite{suffix}").unlink(missing_ok=True)
    again = Serve(log)
    try:
        assert everything(again, span_ids) == before
    finally:
        again.stop(signal.SIGTERM)


def test_a_serve_killed_while_spans_arrive_answers_all_it_acknowledged(tmp_path):
    """Killed at once after a request was acknowledged, wherever its indexer was: every span
    acknowledged is in the trees and calls of the next serve."""
    log = tmp_path / "received.jsonl"
    serve = Serve(log)
    for i in range(1, 30):
        trace = bytes([i]) * 16
        body = build([([("service.name", "s")], [("x", [
            span(trace, 2 * i, None, "invoke_agent a", 10, 50, [("gen_ai.operation.name", "invoke_agent"),
                                                                ("gen_ai.agent.name", f"a{i}")]),
            span(trace, 2 * i + 1, 2 * i, "chat m", 20, 30, [("gen_ai.operation.name", "chat"),
                                                             ("gen_ai.request.model", "m")]),
        ])])]).SerializeToString()  # fmt: skip
        assert serve.post(body) == 200
    serve.stop(signal.SIGKILL)
    again = Serve(log)
    try:
        traces = json.loads(again.get("/api/traces?limit=1000")[1])
        calls = json.loads(again.get("/api/calls?limit=1000")[1])
        assert traces["total"] == 29 and calls["total"] == 29
        assert sorted(c["function"] for c in calls["calls"]) == sorted(f"a{i}" for i in range(1, 30))
    finally:
        again.stop(signal.SIGTERM)
    assert os.stat(log).st_mode & 0o777 == 0o600

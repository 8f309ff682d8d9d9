"""Spans per second that ``callctx serve`` ingests from the official OTLP exporters over
loopback, HTTP/protobuf (the main figure) and gRPC, each against a sink that only reads the
request body, measured in the same run; and where the receiver's own time goes.

An agent-shaped workload (nested agentic spans with model and tool spans) is exported in
batches with the official exporter, as a BatchSpanProcessor would. Per protocol, the same
batches go to the sink (an HTTP/1.1 keep-alive server that reads the body and answers; a gRPC
server that takes the request as raw bytes, not decoded) and to ``callctx serve`` (a fresh
receiver with its event log and index each round). Rounds alternate sink and serve; each side's
best round counts. The target is serve at 0.8x the sink's spans/s or better.

    python bench/ingest.py [--spans 20000] [--batch 512] [--rounds 3] [--no-framework]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import grpc
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callctx.projection import schema as s
from callctx.serve import Receiver, serve_grpc, serve_http


def make_framework_spans(n: int) -> list:
    """Finished SDK spans shaped like an auto-instrumented framework's trace (OpenInference):
    an agent, then model calls carrying their messages and usage, then tool calls."""
    sink = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sink))
    tracer = provider.get_tracer("bench-framework")
    made = 0
    turn = 0
    while made < n:
        with tracer.start_as_current_span("Weather agent", attributes={"openinference.span.kind": "AGENT",
                                                                       "agent.name": "Weather agent",
                                                                       "session.id": "bench"}):  # fmt: skip
            for _ in range(10):
                turn += 1
                llm = {
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-4o-mini",
                    "llm.system": "openai",
                    "llm.token_count.prompt": 900 + turn % 50,
                    "llm.token_count.completion": 40,
                    "llm.token_count.prompt_details.cache_read": 512,
                    "llm.input_messages.0.message.role": "system",
                    "llm.input_messages.0.message.content": "You answer questions about the weather. " * 8,
                    "llm.input_messages.1.message.role": "user",
                    "llm.input_messages.1.message.content": f"What is the weather in city {turn}?",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "It is sunny, 21 degrees.",
                }
                with tracer.start_as_current_span("response", attributes=llm):
                    pass
                tool = {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                        "input.value": f'{{"city": "city {turn}"}}', "output.value": "sunny, 21"}  # fmt: skip
                with tracer.start_as_current_span("get_weather", attributes=tool):
                    pass
                made += 2
        made += 1
    return list(sink.get_finished_spans())


def serve_subprocess(folder: Path) -> tuple[subprocess.Popen, int]:
    """``callctx serve`` as a user runs it (its own process, so its memory is its own)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "callctx.cli", "serve", "--port", str(port), "--grpc-port", "-1",
         "--log", str(folder / "served.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.readline()  # "callctx serve: OTLP/HTTP ... on http://..." once it listens
    return proc, port


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def served_spans(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as resp:
        return int(json.loads(resp.read()).get("spans", 0))


def make_spans(n: int) -> list:
    """Finished SDK spans shaped like an agent's trace."""
    sink = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sink))
    tracer = provider.get_tracer("bench")
    made = 0
    with tracer.start_as_current_span("invoke_agent session", attributes={s.OPERATION: s.OP_INVOKE_AGENT,
                                                                          s.AGENT_NAME: "session"}):  # fmt: skip
        while made < n:
            attrs = {s.OPERATION: s.OP_INVOKE_AGENT, s.AGENT_NAME: "step", s.INPUT_VALUE: '{"q": "some input"}',
                     s.INPUT_MIME: s.MIME_JSON}  # fmt: skip
            with tracer.start_as_current_span("invoke_agent step", attributes=attrs) as step:
                with tracer.start_as_current_span("chat m", attributes={s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: "m"}):
                    pass
                with tracer.start_as_current_span("execute_tool t", attributes={s.OPERATION: s.OP_EXECUTE_TOOL}):
                    pass
                step.set_attribute(s.OUTPUT_VALUE, "a result of a few words")
            made += 3
    return list(sink.get_finished_spans())


TARGET = 0.8  # serve's spans/s over the sink's, at least
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class Sink(BaseHTTPRequestHandler):
    """Reads the request body and answers 200 with an empty export response (keep-alive, no
    Nagle delay: the connection handling callctx serve's own handler has)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a) -> None:
        pass


def grpc_sink() -> tuple[grpc.Server, int]:
    """A gRPC trace service that takes each request as raw bytes and answers an empty response."""
    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(lambda body, context: b"")},  # bytes in, bytes out
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=4), options=[("grpc.max_receive_message_length", 16 << 20)])
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def push(exporter, spans: list, batch: int) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(spans), batch):
        result = exporter.export(spans[i : i + batch])
        assert result.name == "SUCCESS", result
    elapsed = time.perf_counter() - t0
    exporter.shutdown()
    return elapsed


def to_sink(protocol: str, spans: list, batch: int) -> float:
    if protocol == "http":
        sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
        threading.Thread(target=sink.serve_forever, daemon=True).start()
        try:
            return push(HttpExporter(endpoint=f"http://127.0.0.1:{sink.server_port}/v1/traces"), spans, batch)
        finally:
            sink.shutdown()
            sink.server_close()
    server, port = grpc_sink()
    try:
        return push(GrpcExporter(endpoint=f"127.0.0.1:{port}", insecure=True), spans, batch)
    finally:
        server.stop(0).wait()


def to_serve(protocol: str, spans: list, batch: int, folder: Path) -> tuple[float, Receiver]:
    rx = Receiver(Path(tempfile.mkdtemp(dir=folder)) / "received.jsonl")
    if protocol == "http":
        server = serve_http(rx, "127.0.0.1", 0)
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces")
    else:
        server = serve_grpc(rx, "127.0.0.1", 0)
        exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.port}", insecure=True)
    try:
        elapsed = push(exporter, spans, batch)
    finally:
        server.shutdown() if protocol == "http" else server.stop(0)
        rx.close()
    assert rx.stats.spans == len(spans) and not rx.stats.rejected, (rx.stats.spans, len(spans))
    return elapsed, rx


def shares(rx: Receiver, n: int) -> str:
    st = rx.stats
    total = st.seconds_total
    parts = {"decode": st.seconds_decode, "log": st.seconds_log}  # a request waits for no fold nor index
    other = max(total - sum(parts.values()), 0.0)
    listed = ", ".join(f"{k} {v / total:.0%}" for k, v in (*parts.items(), ("other", other)))
    return f"{total / n * 1e6:.1f} us per span ({listed})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-framework", action="store_true", help="skip the framework-shaped run in its own process")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="callctx-bench-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> None:
    spans = make_spans(args.spans)
    n = len(spans)

    best: dict[tuple[str, str], float] = {}
    receivers: dict[str, Receiver] = {}
    for _ in range(args.rounds):
        for protocol in ("http", "grpc"):
            elapsed = to_sink(protocol, spans, args.batch)
            best[protocol, "sink"] = min(best.get((protocol, "sink"), elapsed), elapsed)
            elapsed, rx = to_serve(protocol, spans, args.batch, tmp)
            if elapsed < best.get((protocol, "serve"), float("inf")):
                best[protocol, "serve"] = elapsed
                receivers[protocol] = rx

    print(f"ingest of {n:,} spans in batches of {args.batch}, official exporter over loopback, "
          f"best of {args.rounds} rounds (CPUs: {os.cpu_count()})")  # fmt: skip
    for protocol, label in (("http", "HTTP/protobuf (main figure)"), ("grpc", "gRPC")):
        serve, sink = n / best[protocol, "serve"], n / best[protocol, "sink"]
        ratio = serve / sink
        print(
            f"  {label:28s} callctx serve {serve:8,.0f} spans/s, sink {sink:8,.0f} spans/s: "
            f"{ratio:.2f}x the sink (target {TARGET}: {'met' if ratio >= TARGET else 'not met'})"
        )
    for protocol in ("http", "grpc"):
        print(f"  receiver's own time, {protocol} (best round): {shares(receivers[protocol], n)}")
    if args.no_framework:
        return

    framework = make_framework_spans(args.spans)
    proc, port = serve_subprocess(tmp)
    try:
        rss_before = rss_mib(proc.pid)
        f_elapsed = push(HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"), framework, args.batch)
        got = served_spans(port)
        rss_after = rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    print(
        f"  framework-shaped trace (agent -> LLM with messages and usage -> tool, OpenInference) into "
        f"`callctx serve` in its own process: {len(framework) / f_elapsed:,.0f} spans/s for {got:,} spans; "
        f"serve's RSS {rss_before:.0f} MiB before, {rss_after:.0f} MiB after the run"
    )


if __name__ == "__main__":
    main()

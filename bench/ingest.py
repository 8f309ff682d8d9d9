"""Spans per second that ``callctx serve`` ingests from the official OTLP exporters over
loopback, HTTP/protobuf (the main figure) and gRPC, each against a sink that only reads the
request body, measured in the same run; how soon after the last answer the index holds every
span; and where the receiver's own time goes, per span.

An agent-shaped workload (nested agentic spans with model and tool spans) is exported in
batches with the official exporter, as a BatchSpanProcessor would. Per protocol, the same
batches go to the sink (an HTTP/1.1 keep-alive server that reads the body and answers; a gRPC
server that takes the request as raw bytes, not decoded) and to ``callctx serve`` (a fresh
receiver with its event log and index each round). Both run the same way: in a process of
their own, as ``callctx serve`` runs, so neither shares the exporter's interpreter (in one
process, every bit of a server's work, the index it keeps in the background included, would
hold up the exporter too). Rounds alternate sink and serve; each side's best round counts. The
target is serve at 0.8x the sink's spans/s or better, with the index holding every span within
a second of the last answer.

    python bench/ingest.py [--spans 20000] [--batch 512] [--rounds 3] [--no-framework]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
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
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callctx.projection import schema as s
from callctx.serve import Receiver
from callctx.serve.ingest import collector_paused, index_path


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


def serve_subprocess(folder: Path, grpc_port: bool = False) -> tuple[subprocess.Popen, int, int]:
    """``callctx serve`` as a user runs it (its own process, so its memory is its own): the
    process, its HTTP port and its gRPC port (-1 without)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "callctx.cli", "serve", "--port", str(port), "--grpc-port", "0" if grpc_port else "-1",
         "--log", str(folder / "served.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    grpc_at = -1
    for line in proc.stdout:  # "callctx serve: OTLP/HTTP ...", "... OTLP/gRPC on HOST:PORT", then "event log: ..."
        if "OTLP/gRPC on" in line:
            grpc_at = int(line.rsplit(":", 1)[1])
        if line.startswith("event log:"):
            break
    else:
        raise RuntimeError("callctx serve did not start")
    return proc, port, grpc_at


def sink_subprocess(protocol: str) -> tuple[subprocess.Popen, int]:
    """The sink (:func:`sink_main`) in a process of its own, and its port."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--sink", protocol], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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
INDEX_WITHIN = 1.0  # seconds after the last answer by which the index holds every span
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


def sink_main(protocol: str) -> None:
    """The sink's process: prints its port, serves until its standard input closes."""
    if protocol == "http":
        server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(server.server_port, flush=True)
        sys.stdin.read()
        server.shutdown()
        server.server_close()
    else:
        gserver, port = grpc_sink()
        print(port, flush=True)
        sys.stdin.read()
        gserver.stop(0).wait()


def push(exporter, spans: list, batch: int) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(spans), batch):
        result = exporter.export(spans[i : i + batch])
        assert result.name == "SUCCESS", result
    elapsed = time.perf_counter() - t0
    exporter.shutdown()
    return elapsed


def exporter(protocol: str, port: int) -> HttpExporter | GrpcExporter:
    if protocol == "http":
        return HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    return GrpcExporter(endpoint=f"127.0.0.1:{port}", insecure=True)


def to_sink(protocol: str, spans: list, batch: int) -> float:
    proc, port = sink_subprocess(protocol)
    try:
        return push(exporter(protocol, port), spans, batch)
    finally:
        stop(proc)


def to_serve(protocol: str, spans: list, batch: int, folder: Path) -> tuple[float, float]:
    """(seconds to the last answer, seconds after it until the index held every span)."""
    where = Path(tempfile.mkdtemp(dir=folder))
    proc, port, grpc_port = serve_subprocess(where, grpc_port=protocol == "grpc")
    try:
        elapsed = push(exporter(protocol, port if protocol == "http" else grpc_port), spans, batch)
        answered = time.perf_counter()
        indexed = index_caught_up(where / "served.jsonl", answered)
        got = served_spans(port)
    finally:
        stop(proc)
    assert got == len(spans), (got, len(spans))
    return elapsed, indexed


def index_caught_up(log: Path, since: float, limit: float = 30.0) -> float:
    """Seconds from ``since`` until the receiver's index (read from its file, which asks the
    receiver for nothing) covers the whole log."""
    size = log.stat().st_size
    db = sqlite3.connect(index_path(log))
    try:
        while True:
            try:
                row = db.execute("SELECT value FROM meta WHERE key = 'offset'").fetchone()
            except sqlite3.OperationalError:  # not made yet
                row = None
            now = time.perf_counter()
            if (row is not None and int(row[0]) >= size) or now - since > limit:
                return now - since
            time.sleep(0.005)
    finally:
        db.close()


def per_span(spans: list, batch: int, folder: Path) -> dict[str, float]:
    """The receiver's own time per span, each stage alone on one thread (no network, nothing
    else running): decoding the protobuf bodies, encoding their records as log lines, the log's
    write, indexing them (what the background indexer does), and the cache ledger it keeps up."""
    bodies = [encode_spans(spans[i : i + batch]).SerializeToString() for i in range(0, len(spans), batch)]
    rx = Receiver(Path(tempfile.mkdtemp(dir=folder)) / "received.jsonl", index_every=None)
    try:
        t0 = time.perf_counter()
        for body in bodies:
            with collector_paused():  # as the transports handle a request
                rx.ingest(rx.decode(body, "application/x-protobuf"))
        t1 = time.perf_counter()
        rx.store.refresh()
        t2 = time.perf_counter()
        rx.store.ledger.update()
        t3 = time.perf_counter()
    finally:
        rx.close()
    st, n = rx.stats, len(spans)
    assert st.spans == n, (st.spans, n)
    return {
        "decode": st.seconds_decode / n, "encode": st.seconds_encode / n, "log": st.seconds_log / n,
        "request path": (t1 - t0) / n, "index": (t2 - t1) / n, "cache ledger": (t3 - t2) / n,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-framework", action="store_true", help="skip the framework-shaped run in its own process")
    ap.add_argument("--sink", choices=("http", "grpc"), help=argparse.SUPPRESS)  # the sink's own process
    args = ap.parse_args()
    if args.sink:
        sink_main(args.sink)
        return
    with tempfile.TemporaryDirectory(prefix="callctx-bench-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> None:
    spans = make_spans(args.spans)
    n = len(spans)

    best: dict[tuple[str, str], float] = {}
    lag: dict[str, float] = {}
    for _ in range(args.rounds):
        for protocol in ("http", "grpc"):
            elapsed = to_sink(protocol, spans, args.batch)
            best[protocol, "sink"] = min(best.get((protocol, "sink"), elapsed), elapsed)
            elapsed, indexed = to_serve(protocol, spans, args.batch, tmp)
            best[protocol, "serve"] = min(best.get((protocol, "serve"), elapsed), elapsed)
            lag[protocol] = max(lag.get(protocol, 0.0), indexed)
    costs = min((per_span(spans, args.batch, tmp) for _ in range(args.rounds)), key=lambda c: c["request path"])

    print(f"ingest of {n:,} spans in batches of {args.batch}, official exporter over loopback, sink and serve "
          f"each in a process of its own, best of {args.rounds} rounds (CPUs: {os.cpu_count()})")  # fmt: skip
    for protocol, label in (("http", "HTTP/protobuf (main figure)"), ("grpc", "gRPC")):
        serve, sink = n / best[protocol, "serve"], n / best[protocol, "sink"]
        ratio = serve / sink
        print(
            f"  {label:28s} callctx serve {serve:8,.0f} spans/s, sink {sink:8,.0f} spans/s: "
            f"{ratio:.2f}x the sink (target {TARGET}: {'met' if ratio >= TARGET else 'not met'})"
        )
    for protocol in ("http", "grpc"):
        within = lag[protocol] <= INDEX_WITHIN
        print(f"  index holds every span {lag[protocol] * 1000:,.0f} ms after the last answer, {protocol}, worst round "
              f"(target {INDEX_WITHIN:g} s: {'met' if within else 'not met'})")  # fmt: skip
    listed = ", ".join(f"{k} {v * 1e6:.2f}" for k, v in costs.items())
    print(f"  receiver's own time per span (us, one thread, best round): {listed}")
    if args.no_framework:
        return

    framework = make_framework_spans(args.spans)
    proc, port, _ = serve_subprocess(tmp)
    try:
        rss_before = rss_mib(proc.pid)
        f_elapsed = push(HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"), framework, args.batch)
        got = served_spans(port)
        rss_after = rss_mib(proc.pid)
    finally:
        stop(proc)
    print(
        f"  framework-shaped trace (agent -> LLM with messages and usage -> tool, OpenInference) into "
        f"`callctx serve` in its own process: {len(framework) / f_elapsed:,.0f} spans/s for {got:,} spans; "
        f"serve's RSS {rss_before:.0f} MiB before, {rss_after:.0f} MiB after the run"
    )


if __name__ == "__main__":
    main()

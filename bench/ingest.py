"""Spans per second that ``callctx serve`` ingests from the official OTLP exporters over
loopback (HTTP and gRPC), and the fold's share of the receiver's own time.

An agent-shaped workload (nested agentic spans with model and tool spans) is exported in
batches with the official exporter, as a BatchSpanProcessor would. The baseline, in the
same run, is the exporter sending the same batches to a sink that only reads the request.

    python bench/ingest.py [--spans 20000] [--batch 512]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callctx.projection import schema as s
from callctx.serve import Receiver, serve_grpc, serve_http


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


class Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a) -> None:
        pass


def push(exporter, spans: list, batch: int) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(spans), batch):
        exporter.export(spans[i : i + batch])
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    spans = make_spans(args.spans)
    n = len(spans)

    sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    base = push(HttpExporter(endpoint=f"http://127.0.0.1:{sink.server_port}/v1/traces"), spans, args.batch)
    sink.shutdown()

    results = {}
    for protocol in ("http", "grpc"):
        rx = Receiver(Path(tempfile.mkdtemp(prefix="callctx-bench-")) / "received.jsonl")
        if protocol == "http":
            server = serve_http(rx, "127.0.0.1", 0)
            exporter = HttpExporter(endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces")
        else:
            server = serve_grpc(rx, "127.0.0.1", 0)
            exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.port}", insecure=True)
        elapsed = push(exporter, spans, args.batch)
        assert rx.stats.spans == n, (rx.stats.spans, n)
        results[protocol] = (elapsed, rx.stats)
        server.shutdown() if protocol == "http" else server.stop(0)
        rx.close()

    print(f"ingest of {n:,} spans in batches of {args.batch}, official exporter over loopback")
    print(f"  HTTP to a sink that only reads (baseline) {n / base:10,.0f} spans/s")
    for protocol, (elapsed, st) in results.items():
        total = st.seconds_total
        shares = f"decode {st.seconds_decode / total:.0%}, log {st.seconds_log / total:.0%}"
        print(
            f"  {protocol:4s} into callctx serve               {n / elapsed:10,.0f} spans/s   "
            f"{elapsed / base:.2f}x the baseline's time; fold {st.seconds_fold / total:.0%} of the receiver's time "
            f"({shares})"
        )


if __name__ == "__main__":
    main()

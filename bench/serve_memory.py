"""Memory of ``callctx serve`` as spans keep arriving: resident set size of the server process
after 100k and after 1M spans (target: the second at most 1.25x the first), and the spans per
second it ingests.

The server (a :class:`Receiver` and ``serve_http`` on loopback, default limits) runs in a
subprocess, so its RSS (``VmRSS`` of ``/proc/<pid>/status``) is the server's alone. The client
sends OTLP/protobuf requests of ``--batch`` spans (traces of ``--trace-spans`` spans, shaped
like an agent: nested agentic calls with model and tool calls under them) over one keep-alive
connection. The request body is encoded once; every request then gets fresh trace and span
ids by replacing a marker inside the ids with the request's number (same length, so the
protobuf stays valid). Afterwards it waits for the index to catch up with the log, and reads
back the first trace and one of its spans through the API (folded from the log on read).

    python bench/serve_memory.py [--spans 1000000] [--batch 1000] [--trace-spans 10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from callctx.projection import schema as s
from callctx.projection.otlp import encode_protobuf
from callctx.projection.spans import SpanData

TRACE_MARK = bytes.fromhex("c0ffee15deadbeef")  # first 8 bytes of every trace id in the template
SPAN_MARK = bytes.fromhex("5ca1ab1e")  # first 4 bytes of every span id in the template
CHECKPOINT = 100_000


def serve(log_path: str, max_traces: int) -> None:
    """The server process: print the port, serve until stdin closes."""
    from callctx.serve import Receiver, serve_http
    from callctx.store.local import DEFAULT_MAX_TREES

    rx = Receiver(log_path, max_trees=max_traces or DEFAULT_MAX_TREES)
    server = serve_http(rx, "127.0.0.1", 0)
    print(server.server_port, flush=True)
    sys.stdin.read()
    server.shutdown()
    rx.close()


def template(batch: int, trace_spans: int) -> tuple[bytes, list[str], list[str]]:
    """One request body, and its trace ids and span ids (hex) before renumbering."""
    spans = []
    for t in range(batch // trace_spans):
        tid = (TRACE_MARK + struct.pack(">Q", t + 1)).hex()
        base = t * trace_spans
        t0 = 1_700_000_000_000_000_000 + t * 1_000_000

        def sid(i: int, base: int = base) -> str:
            return (SPAN_MARK + struct.pack(">I", base + i + 1)).hex()

        for i in range(trace_spans):
            if i == 0:
                parent, name = None, "invoke_agent session"
                attrs = {s.OPERATION: s.OP_INVOKE_AGENT, s.AGENT_NAME: "session", s.INPUT_VALUE: "a question"}
            elif i % 3 == 1:
                parent, name = sid(0), "invoke_agent step"
                attrs = {s.OPERATION: s.OP_INVOKE_AGENT, s.AGENT_NAME: f"step{i}", s.INPUT_VALUE: '{"q": "some input"}',
                         s.INPUT_MIME: s.MIME_JSON, s.OUTPUT_VALUE: "a result of a few words"}  # fmt: skip
            elif i % 3 == 2:
                parent, name = sid(i - 1), "chat m"
                attrs = {s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: "m"}
            else:
                parent, name = sid(i - 2), "execute_tool t"
                attrs = {s.OPERATION: s.OP_EXECUTE_TOOL}
            spans.append(SpanData(tid, sid(i), parent, name, t0 + i * 1000, t0 + 900_000 - i * 1000, attrs))
    body = encode_protobuf(spans).SerializeToString()
    assert body.count(TRACE_MARK) == len(spans), "the trace marker shows up outside the trace ids"
    assert body.count(SPAN_MARK) == 2 * len(spans) - len(spans) // trace_spans, "the span marker too"
    return body, sorted({sp.trace_id for sp in spans}), [sp.span_id for sp in spans]


def renumber(body: bytes, n: int) -> bytes:
    """The template with the ids of request ``n`` (n >= 1)."""
    return body.replace(TRACE_MARK, struct.pack(">Q", n)).replace(SPAN_MARK, struct.pack(">I", n))


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes, float]:
    t0 = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, data, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1000, help="spans per request")
    ap.add_argument("--trace-spans", type=int, default=10, help="spans per trace")
    ap.add_argument("--max-traces", type=int, default=0, help="the receiver's limit (default: its default)")
    ap.add_argument("--keep", action="store_true", help="keep the server's event log")
    ap.add_argument("--serve", metavar="LOG", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.max_traces)
        return
    if args.batch % args.trace_spans:
        ap.error("--batch must be a multiple of --trace-spans")

    folder = Path(tempfile.mkdtemp(prefix="callctx-serve-memory-"))
    cmd = [sys.executable, __file__, "--serve", str(folder / "received.jsonl"), "--max-traces", str(args.max_traces)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())  # type: ignore[union-attr]
        body, trace_ids, span_ids = template(args.batch, args.trace_spans)
        requests = -(-args.spans // args.batch)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Content-Type": "application/x-protobuf"}
        print(f"{requests * args.batch:,} spans in {requests:,} requests of {args.batch} "
              f"({args.trace_spans} spans a trace), OTLP/protobuf over loopback; body {len(body):,} bytes")  # fmt: skip
        print(f"server RSS at start: {rss_kb(proc.pid) / 1024:8.1f} MiB")
        marks: list[tuple[int, float, int]] = []  # (spans, seconds, rss kB)
        t0 = time.perf_counter()
        sent = 0
        for n in range(1, requests + 1):
            conn.request("POST", "/v1/traces", renumber(body, n), headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise SystemExit(f"request {n}: HTTP {resp.status}")
            sent += args.batch
            if sent % CHECKPOINT == 0 or n == requests:
                elapsed = time.perf_counter() - t0
                marks.append((sent, elapsed, rss_kb(proc.pid)))
                print(f"  {sent:>9,} spans  {elapsed:7.1f} s  {sent / elapsed:8,.0f} spans/s  "
                      f"RSS {marks[-1][2] / 1024:7.1f} MiB")  # fmt: skip
        total = time.perf_counter() - t0
        health = {}
        while time.perf_counter() - t0 < total + 600:  # the index catches up with the log
            health = json.loads(get(conn, "/health")[1])
            if health["indexed_spans"] >= sent:
                break
            time.sleep(0.2)
        caught_up = time.perf_counter() - t0
        first = next((m for m in marks if m[0] >= CHECKPOINT), marks[0])
        last = marks[-1]
        ratio = last[2] / first[2]
        if last[0] < CHECKPOINT:
            print(f"\n(fewer than {CHECKPOINT:,} spans: no {CHECKPOINT:,}-span figure to compare with)", end="")
        print(f"\nRSS after {first[0]:,} spans: {first[2] / 1024:.1f} MiB; "
              f"after {last[0]:,}: {last[2] / 1024:.1f} MiB; ratio {ratio:.3f} (target <= 1.25)")  # fmt: skip
        print(f"ingest: {sent / total:,.0f} spans/s overall ({sent:,} spans in {total:.1f} s)")
        log_size = os.path.getsize(folder / "received.jsonl")
        print(f"server: {health['traces']:,} trees, {health['indexed_spans']:,} spans indexed "
              f"({caught_up - total:.1f} s after the last request); event log {log_size:,} bytes, RSS "
              f"{rss_kb(proc.pid) / 1024:.1f} MiB")  # fmt: skip
        # read back the first request's first trace and one of its spans, folded from the log
        old_trace = (struct.pack(">Q", 1) + bytes.fromhex(trace_ids[0])[8:]).hex()
        old_span = (struct.pack(">I", 1) + bytes.fromhex(span_ids[2])[4:]).hex()
        status, data, spent = get(conn, f"/api/traces/{old_trace}/tree")
        print(f"first trace read back: HTTP {status}, {len(data):,} bytes in {spent * 1000:.1f} ms")
        status, data, spent = get(conn, f"/api/spans/{old_span}/tree")
        print(f"first span read back:  HTTP {status}, {len(data):,} bytes in {spent * 1000:.1f} ms")
        status, data, spent = get(conn, "/api/traces")
        listed = json.loads(data)["total"] if status == 200 else 0
        print(f"/api/traces: HTTP {status}, a page of {listed:,} trees in {spent * 1000:.0f} ms")
        conn.close()
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=60)
        if args.keep:
            print(f"event log kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

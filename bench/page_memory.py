"""Memory of ``callctx serve`` while its debugger page pages through every trace: the server's
resident set size before the page is first opened, and after the page has listed 10,000 traces
a page at a time and opened the top level of each (target: at most 1.25x).

The server (``callctx serve`` on loopback, its own process) starts on a log of ``--traces``
traces written beforehand (nested agentic calls with a model call each, ``--trace-spans`` spans
a trace), indexes it, and is then read through the page's API only: ``/ui/api/trees`` pages of
100, and ``/ui/api/trees/{id}/nodes`` for every tree listed. The page reads through the store,
so what it holds is one page at a time plus the store's bounded caches.

    python bench/page_memory.py [--traces 10000] [--trace-spans 6]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted, encode
from callctx.projection.log import EventLog

TARGET = 1.25


def write_log(path: Path, traces: int, trace_spans: int) -> int:
    """A receiver's log of ``traces`` finished traces; the number of spans."""
    n = 0
    with EventLog(path) as log:
        for t in range(traces):
            tid = format(0xC0FFEE00000000 + t, "032x")
            t0 = 1_700_000_000_000_000_000 + t * 10_000_000
            lines = []
            for i in range(trace_spans):
                sid = format((t + 1) * 1000 + i, "016x")
                parent = format((t + 1) * 1000 + (0 if i else -1), "016x") if i else None
                if i % 2 == 0:
                    attrs = {s.OPERATION: s.OP_INVOKE_AGENT, s.AGENT_NAME: f"step{i}", s.INPUT_VALUE: f"question {t}",
                             s.OUTPUT_VALUE: "an answer of a few words"}  # fmt: skip
                else:
                    attrs = {s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: "gpt-4.1", s.USAGE_INPUT: 900, s.USAGE_OUTPUT: 40,
                             s.PROVIDER: "openai"}  # fmt: skip
                start = t0 + i * 1000
                lines.append(encode(SpanStarted(tid, sid, parent, "op", start, attrs, 1, {"service.name": "bench"})))
                lines.append(encode(SpanEnded(tid, sid, start + 500_000, "ok")))
                n += 1
            log.write(b"".join(lines))
    return n


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def get(conn: http.client.HTTPConnection, path: str) -> dict:
    conn.request("GET", path)
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise SystemExit(f"GET {path}: HTTP {resp.status} {data[:200]!r}")
    return json.loads(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--trace-spans", type=int, default=6)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="callctx-page-memory-"))
    log = folder / "received.jsonl"
    spans = write_log(log, args.traces, args.trace_spans)
    cmd = [sys.executable, "-m", "callctx.cli", "serve", "--log", str(log), "--port", "0", "--grpc-port", "-1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        port = int(line.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        t0 = time.perf_counter()
        while get(conn, "/health")["indexed_spans"] < spans:  # the index catches up with the log
            time.sleep(0.2)
        indexed = time.perf_counter() - t0
        time.sleep(1.0)  # let the process settle before the baseline
        before = rss_kb(proc.pid)
        t0 = time.perf_counter()
        listed = opened = 0
        offset: int | None = 0
        while offset is not None and listed < args.traces:
            page = get(conn, f"/ui/api/trees?offset={offset}&limit=100")
            for tree in page["trees"]:
                get(conn, f"/ui/api/trees/{tree['id']}/nodes")
                opened += 1
            listed += len(page["trees"])
            offset = page["next_offset"]
        paged = time.perf_counter() - t0
        after = rss_kb(proc.pid)
        conn.close()
        ratio = after / before
        print(f"{args.traces:,} traces ({spans:,} spans) in the log; indexed in {indexed:.1f} s")
        print(f"page: {listed:,} trees listed, {opened:,} opened, in {paged:.1f} s "
              f"({paged / max(1, opened) * 1000:.1f} ms a tree)")  # fmt: skip
        print(f"serve RSS before the page: {before / 1024:.1f} MiB; after: {after / 1024:.1f} MiB; "
              f"ratio {ratio:.3f} (baseline: before the page; target <= {TARGET})")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

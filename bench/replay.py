"""Replay throughput: folding a generated 1M-event log, against decoding it alone.

The log holds a long session: a root call running stages, each stage a few calls, each call
with a plain span and a model-call span under it, like a real agent's trace. The baseline is
reading and decoding the same file without folding (same run, same page cache).
Target: >= 300k events/s.

    python bench/replay.py [--events 1000000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from callctx.projection import Projection, read_log
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted, encode

TARGET = 300_000


def generate(path: Path, n_events: int) -> int:
    """Write a log of about ``n_events`` events; returns the exact count."""
    trace = "5e" * 16
    clock = 1_700_000_000_000_000_000
    count = 0
    ids = iter(range(1, 1 << 62))
    lines: list[bytes] = []

    def sid() -> str:
        return format(next(ids), "016x")

    def agent(name: str, args: dict) -> dict:
        return {
            s.OPERATION: s.OP_INVOKE_AGENT,
            s.AGENT_NAME: name,
            s.SPAN_KIND: "AGENT",
            s.INPUT_VALUE: json.dumps(args),
            s.INPUT_MIME: s.MIME_JSON,
        }

    root = sid()
    lines.append(encode(SpanStarted(trace, root, None, "invoke_agent session", clock, agent("session", {"goal": "x"}))))
    count += 1
    stage_no = 0
    while count < n_events - 1:
        stage_no += 1
        stage = sid()
        clock += 1000
        lines.append(
            encode(SpanStarted(trace, stage, root, "invoke_agent stage", clock, agent("stage", {"n": stage_no})))
        )
        count += 1
        for k in range(4):
            call = sid()
            clock += 1000
            lines.append(
                encode(
                    SpanStarted(
                        trace, call, stage, "invoke_agent step", clock, agent("step", {"stage": stage_no, "k": k})
                    )
                )
            )
            plain = sid()
            lines.append(encode(SpanStarted(trace, plain, call, "GET /search", clock + 10, {"http.method": "GET"})))
            lines.append(encode(SpanEnded(trace, plain, clock + 20, "unset")))
            chat = sid()
            lines.append(
                encode(
                    SpanStarted(trace, chat, call, "chat m", clock + 30, {s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: "m"})
                )
            )
            lines.append(encode(SpanEnded(trace, chat, clock + 40, "unset", None, {s.USAGE_INPUT: 1200})))
            lines.append(
                encode(
                    SpanEnded(
                        trace,
                        call,
                        clock + 50,
                        "unset",
                        None,
                        {s.OUTPUT_VALUE: f"result {stage_no}.{k}", s.OUTPUT_MIME: s.MIME_TEXT},
                    )
                )
            )
            count += 6
        lines.append(encode(SpanEnded(trace, stage, clock + 60, "unset", None, {s.OUTPUT_VALUE: "ok"})))
        count += 1
        if len(lines) > 50_000:
            with open(path, "ab") as f:
                f.write(b"".join(lines))
            lines.clear()
    lines.append(encode(SpanEnded(trace, root, clock + 100, "unset")))
    count += 1
    with open(path, "ab") as f:
        f.write(b"".join(lines))
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    args = ap.parse_args()
    path = Path(tempfile.mkdtemp(prefix="callctx-bench-")) / "events.jsonl"
    n = generate(path, args.events)
    size = path.stat().st_size

    t0 = time.perf_counter()
    decoded = sum(1 for _ in read_log(path))
    t_decode = time.perf_counter() - t0

    t0 = time.perf_counter()
    p = Projection.from_log(path)
    t_fold = time.perf_counter() - t0
    assert p.events == n == decoded

    rate = n / t_fold
    print(f"replay of {n:,} events ({size / 2**20:.0f} MiB)")
    print(f"  decode only (baseline)  {t_decode:6.2f} s   {n / t_decode:12,.0f} events/s")
    print(f"  decode + fold           {t_fold:6.2f} s   {rate:12,.0f} events/s   {t_fold / t_decode:.2f}x baseline")
    print(f"replay throughput: {rate:,.0f} events/s (target >= {TARGET:,}) -> {'met' if rate >= TARGET else 'not met'}")
    path.unlink()


if __name__ == "__main__":
    main()

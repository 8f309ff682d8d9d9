"""Memory growth per finished call after io release, over 1M calls, and with the log on.

A session runs 10,000 stages of 100 calls each (1,010,001 calls); every call carries a
~200-byte input and a ~500-byte output. Growth is measured as resident memory (RSS) of the
projection, per call; the baseline, measured in the same run, is what keeping each call's
events would cost (their encoded size), i.e. what a fold without release would have to hold.
Then the same shape through real ``@agentic`` calls of a runtime writing its event log
(``--log-stages`` stages, fewer: each call is a real span): the whole process's growth per call.
Target: <= 300 bytes per finished call, both ways.

    python bench/memory.py [--stages 10000] [--calls 100] [--log-stages 1000]
"""

from __future__ import annotations

import argparse
import gc
import json

from callctx.projection import Projection
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted, encode

TARGET = 300
TRACE = "3c" * 16
PAGE = 4096


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--log-stages", type=int, default=1000)
    args = ap.parse_args()
    folded(args)
    with_log(args)


def with_log(args: argparse.Namespace) -> None:
    """Real @agentic calls through a runtime that writes its event log."""
    import tempfile
    from pathlib import Path

    from callctx import agentic, setup

    payload = "lorem ipsum " * 16
    result = "dolor sit amet " * 33
    rt = setup(Path(tempfile.mkdtemp(prefix="callctx-bench-")) / "events.jsonl")

    @agentic
    def step(i: int, text: str) -> str:
        return result

    @agentic
    def stage(n: int, plan: str) -> str:
        for i in range(args.calls):
            step(i, payload)
        return result

    @agentic
    def session(goal: str) -> None:
        stage(-1, payload)  # the first calls allocate what every later one reuses
        gc.collect()
        before = rss()
        for k in range(args.log_stages):
            stage(k, payload)
        gc.collect()
        grown = rss() - before
        calls = args.log_stages * (args.calls + 1)
        per_call = grown / calls
        print(f"{calls:,} finished @agentic calls with the event log on")
        print(f"  process growth            {grown / 2**20:8.1f} MiB   {per_call:7.1f} bytes/call")
        print(
            f"memory per finished call, log on: {per_call:.0f} bytes (target <= {TARGET}) -> "
            f"{'met' if per_call <= TARGET else 'not met'}"
        )

    session(payload)
    rt.close()


def folded(args: argparse.Namespace) -> None:
    """Events folded straight into a projection."""

    payload = "lorem ipsum " * 16
    result = "dolor sit amet " * 33
    ids = iter(range(1, 1 << 62))
    clock = 0
    raw_bytes = 0
    calls = 0

    def start(name: str, parent: str | None, **inputs) -> SpanStarted:
        nonlocal clock
        clock += 10
        attrs = {
            s.OPERATION: s.OP_INVOKE_AGENT,
            s.AGENT_NAME: name,
            s.SPAN_KIND: "AGENT",
            s.INPUT_VALUE: json.dumps(inputs),
            s.INPUT_MIME: s.MIME_JSON,
        }
        return SpanStarted(TRACE, format(next(ids), "016x"), parent, f"invoke_agent {name}", clock, attrs)

    def end(span_id: str, out: str) -> SpanEnded:
        nonlocal clock
        clock += 10
        return SpanEnded(TRACE, span_id, clock, "unset", None, {s.OUTPUT_VALUE: out, s.OUTPUT_MIME: s.MIME_TEXT})

    p = Projection()
    gc.collect()
    before = rss()
    root = start("session", None, goal=payload)
    p.apply(root)
    for k in range(args.stages):
        stage = start("stage", root.span_id, n=k, plan=payload)
        p.apply(stage)
        raw_bytes += len(encode(stage))
        for i in range(args.calls):
            call = start("step", stage.span_id, i=i, text=payload)
            done = end(call.span_id, result)
            p.apply(call)
            p.apply(done)
            raw_bytes += len(encode(call)) + len(encode(done))
        done = end(stage.span_id, result)
        p.apply(done)
        raw_bytes += len(encode(done))
        calls += args.calls + 1
    gc.collect()
    grown = rss() - before
    per_call = grown / calls
    per_raw = raw_bytes / calls
    print(f"{calls:,} finished calls (each ~{len(payload)} B input, {len(result)} B output)")
    print(f"  projection growth         {grown / 2**20:8.1f} MiB   {per_call:7.1f} bytes/call")
    print(
        f"  their events (baseline)   {raw_bytes / 2**20:8.1f} MiB   {per_raw:7.1f} bytes/call"
        f"   -> kept {per_call / per_raw:.1%} of it"
    )
    print(
        f"memory per finished call: {per_call:.0f} bytes (target <= {TARGET}) -> "
        f"{'met' if per_call <= TARGET else 'not met'}"
    )
    assert p.events == 2 * calls + 1


if __name__ == "__main__":
    main()

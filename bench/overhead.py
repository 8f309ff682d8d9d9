"""@agentic overhead against a bare OpenTelemetry SDK span, measured in the same run.

Each variant runs the same loop of nested calls (one parent, N children); rounds are
interleaved and the best round of each is kept, so background noise hits all variants alike.
Target: @agentic with log and fold <= 1.6x the bare span.

    python bench/overhead.py [--calls 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider

from callctx import active, agentic, setup
from callctx.projection import schema as s

TARGET = 1.6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n = args.calls

    bare_tracer = TracerProvider().get_tracer("bench")
    attrs = {
        s.OPERATION: s.OP_INVOKE_AGENT,
        s.AGENT_NAME: "child",
        s.SPAN_KIND: "AGENT",
        s.INPUT_VALUE: '{"i":1}',
        s.INPUT_MIME: s.MIME_JSON,
    }

    def bare(count: int) -> None:
        with bare_tracer.start_as_current_span("parent"):
            for _ in range(count):
                with bare_tracer.start_as_current_span("child"):
                    pass

    def bare_attrs(count: int) -> None:
        with bare_tracer.start_as_current_span("parent"):
            for i in range(count):
                span = bare_tracer.start_span("invoke_agent child", attributes=attrs)
                token = context.attach(trace.set_span_in_context(span))
                context.detach(token)
                span.set_attributes({s.OUTPUT_VALUE: str(i), s.OUTPUT_MIME: s.MIME_TEXT})
                span.end()

    @agentic
    def child(i: int) -> int:
        return i

    @agentic
    def parent(count: int) -> None:
        for i in range(count):
            child(i)

    tmp = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    runtimes = {
        "agentic, fold only": setup(),
        "agentic, fold + log": setup(tmp / "events.jsonl"),
    }

    def with_runtime(rt):
        def run(count: int) -> None:
            active.activate(rt)
            parent(count)

        return run

    variants = {
        "bare SDK span": bare,
        "SDK span, same attributes": bare_attrs,
        **{name: with_runtime(rt) for name, rt in runtimes.items()},
    }
    best = {name: float("inf") for name in variants}
    for _ in range(args.rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn(n)
            best[name] = min(best[name], (time.perf_counter() - t0) / n)

    base = best["bare SDK span"]
    print(f"@agentic overhead, {n} calls x {args.rounds} rounds (best round)")
    for name, t in best.items():
        print(f"  {name:28s} {t * 1e6:7.2f} us/call   {t / base:5.2f}x bare")
    ratio = best["agentic, fold + log"] / base
    print(
        f"ratio @agentic (span + io + fold + log) / bare span: {ratio:.2f} (target <= {TARGET}) -> "
        f"{'met' if ratio <= TARGET else 'not met'}"
    )
    for rt in runtimes.values():
        rt.close()


if __name__ == "__main__":
    main()

"""@agentic overhead against a bare OpenTelemetry SDK span, measured in the same run.

The shape: 7 nested decorated calls, each taking about 1 KB of input and returning about 1 KB
of output. Every variant runs the same nesting; rounds are interleaved and the best round of
each is kept, so background noise hits all variants alike. Figures are per call (per span).

* bare SDK span: the same nesting of plain SDK spans, no attributes (the baseline);
* hand-rolled decorator: an SDK span with the input and output as JSON attributes, the least
  a capturing decorator does (a reference point);
* @agentic, fold only / fold + log: callctx with its live tree, without and with the event log.

Target: @agentic with the log on and the live tree available <= 1.6x the bare span. Each timed
round of callctx ends with ``runtime.flush()`` and a read of the call tree, so what is deferred
is counted.

    python bench/overhead.py [--loops 3000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import time
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

from callctx import agentic, setup
from callctx.instrument import active

TARGET = 1.6
DEPTH = 7
PAYLOAD = "lorem ipsum dolor sit amet, " * 36  # ~1 KB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loops", type=int, default=3000, help="outer calls per round (each makes 7 nested calls)")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n = args.loops

    bare_tracer = TracerProvider().get_tracer("bench")

    def bare_level(depth: int, text: str) -> str:
        with bare_tracer.start_as_current_span(f"level{depth}"):
            return bare_level(depth + 1, text) if depth < DEPTH else text

    def hand_rolled(fn):
        name = fn.__name__

        @functools.wraps(fn)
        def call(*a):
            with bare_tracer.start_as_current_span(name, attributes={"input.value": json.dumps(a)}) as span:
                out = fn(*a)
                span.set_attribute("output.value", json.dumps(out))
                return out

        return call

    def nest(decorate):
        @decorate
        def level(depth: int, text: str) -> str:
            return level(depth + 1, text) if depth < DEPTH else text

        return level

    hand = nest(hand_rolled)
    ours = nest(agentic)

    tmp = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    runtimes = {"@agentic, fold only": setup(), "@agentic, fold + log": setup(tmp / "events.jsonl")}

    def with_runtime(rt):
        def run(count: int) -> None:
            active.activate(rt)
            for _ in range(count):
                ours(1, PAYLOAD)
            rt.flush()  # what the log deferred is written, inside the timed round
            rt.call_tree()  # the live tree is there to read

        return run

    def loop(fn):
        def run(count: int) -> None:
            for _ in range(count):
                fn(1, PAYLOAD)

        return run

    variants = {
        "bare SDK span": loop(bare_level),
        "hand-rolled JSON decorator": loop(hand),
        **{name: with_runtime(rt) for name, rt in runtimes.items()},
    }
    best = {name: float("inf") for name in variants}
    for _ in range(args.rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn(n)
            best[name] = min(best[name], (time.perf_counter() - t0) / (n * DEPTH))

    base = best["bare SDK span"]
    print(f"@agentic overhead: {DEPTH} nested calls, ~1 KB in and out each; {n} x {DEPTH} calls x {args.rounds} rounds")
    for name, t in best.items():
        print(f"  {name:28s} {t * 1e6:7.2f} us/call   {t / base:5.2f}x bare")
    ratio = best["@agentic, fold + log"] / base
    print(
        f"ratio @agentic (span + io + live tree + log) / bare span: {ratio:.2f} (target <= {TARGET}) -> "
        f"{'met' if ratio <= TARGET else 'not met'}"
    )
    for rt in runtimes.values():
        rt.close()


if __name__ == "__main__":
    main()

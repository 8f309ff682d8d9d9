"""Render cost follows what is rendered, not history: render_range at 100 vs 10,000 finished calls.

A running call has N finished siblings; the viewer declares ``render_range=20`` (it sees the
last 20). Each round one more sibling finishes and a new call starts and renders its tree,
as in a live agent. The baseline is the same loop at N=100, measured in the same run.
Target: time at 10,000 / time at 100 <= 1.5.

    python bench/render_range.py
"""

from __future__ import annotations

import json
import time

from callctx.projection import Projection
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted

TARGET = 1.5
TRACE = "7a" * 16


def agent(name: str, **args) -> dict:
    return {
        s.OPERATION: s.OP_INVOKE_AGENT,
        s.AGENT_NAME: name,
        s.INPUT_VALUE: json.dumps(args),
        s.INPUT_MIME: s.MIME_JSON,
        s.RENDER_RANGE: 20,
    }


class Session:
    def __init__(self) -> None:
        self.p = Projection()
        self.clock = 0
        self.next_id = 1
        self.root = self._start("session", None, goal="bench")

    def _id(self) -> str:
        self.next_id += 1
        return format(self.next_id, "016x")

    def _start(self, name: str, parent: str | None, **args) -> str:
        self.clock += 10
        sid = self._id()
        self.p.apply(SpanStarted(TRACE, sid, parent, f"invoke_agent {name}", self.clock, agent(name, **args)))
        return sid

    def _end(self, sid: str, output: str) -> None:
        self.clock += 10
        self.p.apply(
            SpanEnded(TRACE, sid, self.clock, "ok", None, {s.OUTPUT_VALUE: output, s.OUTPUT_MIME: s.MIME_TEXT})
        )

    def finished_call(self, i: int) -> None:
        call = self._start("step", self.root, i=i)
        inner = self._start("check", call, i=i)
        self._end(inner, f"checked {i}")
        self._end(call, f"result of step {i}\nsecond line")

    def render_next(self, i: int) -> str:
        """One more call starts, renders what it sees, and finishes."""
        call = self._start("step", self.root, i=i)
        text = self.p.view(call).text
        self._end(call, f"result {i}")
        return text


def per_render(history: int, renders: int = 2000) -> tuple[float, int]:
    sess = Session()
    for i in range(history):
        sess.finished_call(i)
    for i in range(50):  # warm the memos
        sess.render_next(history + i)
    t0 = time.perf_counter()
    for i in range(renders):
        text = sess.render_next(history + 50 + i)
    dt = (time.perf_counter() - t0) / renders
    return dt, len(text)


def main() -> None:
    best: dict[int, float] = {}
    size: dict[int, int] = {}
    for _ in range(3):
        for history in (100, 10_000):
            dt, n = per_render(history)
            best[history] = min(best.get(history, float("inf")), dt)
            size[history] = n
    ratio = best[10_000] / best[100]
    print("render with render_range=20 (one call starts, renders, finishes), best of 3")
    for h in (100, 10_000):
        print(f"  {h:6,d} finished calls   {best[h] * 1e6:8.1f} us/render   {size[h]:6d} bytes rendered")
    print(f"ratio 10,000 / 100: {ratio:.2f} (target <= {TARGET}) -> {'met' if ratio <= TARGET else 'not met'}")


if __name__ == "__main__":
    main()

"""Consecutive renders share their prefix; render_range keeps cost to what is rendered."""

from __future__ import annotations

import itertools
import random

from helpers.trees import parse

from callctx import agentic
from callctx.projection import Projection
from callctx.projection.log_reader import read_log


def _common_lines(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.splitlines(keepends=True), b.splitlines(keepends=True), strict=False):
        if x != y:
            break
        n += 1
    return n


def _long_run(runtime, stages=120, seed=7, render_range=None):
    rng = random.Random(seed)
    renders: list[tuple[str, str]] = []

    def look():
        renders.append((runtime.current_span_id(), runtime.call_tree()))

    @agentic(summarize=lambda r: f"checked {r}")
    def check(item: str) -> str:
        look()
        return item.upper()

    @agentic
    def work(stage: int, items: list[str]) -> str:
        look()
        return ",".join(check(i) for i in items)

    @agentic(summarize=lambda s: f"stage -> {s}")
    def pick(n: int) -> str:
        look()
        return rng.choice(["work", "work", "think"])

    @agentic(render_range=render_range)
    def main_loop(goal: str) -> int:
        for n in range(stages):
            if pick(n) == "work":
                work(n, [f"item-{n}-{k}" for k in range(rng.randint(0, 3))])
        return stages

    main_loop("a long session")
    return renders


def test_consecutive_renders_share_a_prefix_up_to_the_changed_tail(runtime):
    renders = _long_run(runtime)
    assert len(renders) > 300
    longest = max(len(t.splitlines()) for _, t in renders)
    assert longest > 500  # the history really grew
    worst_tail = 0
    for (_, before), (_, after) in itertools.pairwise(renders):
        lines = before.splitlines()
        common = _common_lines(before, after)
        tail = len(lines) - common
        worst_tail = max(worst_tail, tail)
        assert after.startswith("".join(before.splitlines(keepends=True)[:common]))
    # what changes between two calls is the last stage's subtree, never the history before it
    assert worst_tail <= 20, worst_tail


def test_live_renders_with_memos_equal_fresh_folds(runtime):
    renders = _long_run(runtime, stages=40)
    runtime.flush()  # the log batches its records: write what waits before reading it
    events = [e for e in read_log(runtime.log_path) if hasattr(e, "span_id")]
    # the final state from scratch, no memo: every call's view equals the live one
    fresh = Projection()
    fresh.apply_all(events)
    for span_id, n in runtime.projection.nodes.items():
        if n.holds:
            assert fresh.view(span_id).text == runtime.projection.view(span_id).text
    # and the renders taken during the run were consistent with a fresh fold at that moment
    p = Projection()
    starts = {e.span_id: i for i, e in enumerate(events) if type(e).__name__ == "SpanStarted"}
    for span_id, text in renders[::7]:
        p = Projection()
        p.apply_all(events[: starts[span_id] + 1])
        assert p.view(span_id).text == text


def test_render_range_keeps_the_last_finished_calls(runtime):
    renders = _long_run(runtime, stages=60, render_range=5)
    span_id, text = renders[-1]
    root = parse(text)[0]
    finished = [c for c in root["children"] if c.get("status") != "running"]
    assert len(finished) == 5
    assert "# earlier calls not shown" in text
    assert root["children"][-1]["status"] == "running"
    # a viewer without a range sees them all
    full = parse(runtime.projection.view(span_id, render_range=10**9).text)[0]
    assert len(full["children"]) > 60

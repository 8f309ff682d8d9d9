"""Assembly time with the default registry and a 1,000-node call tree, and the cost of token
counting when a call adds one new call to the previous one, against counting from scratch.

Each round: one more call finishes, a new call starts, and the context it sees is assembled
(workspace files, memory, tools, the call tree, the turn), as a live agent does. Timings are
p50 / p99 over the rounds. Counting is isolated by running the same assemblies with a counter
that counts nothing; the baseline counts every text from scratch (a fresh counter).

    python bench/assemble.py [--calls 1000] [--rounds 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from callctx.components import AgentInfo, Ctx, FileMemory, Skill, ToolSpec, assemble, default_registry
from callctx.components.tokens import TokenCounter
from callctx.components.turn import for_view
from callctx.projection import Projection
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted

TRACE = "9d" * 16


class NoCount(TokenCounter):
    def __init__(self) -> None:
        self.encoding_name = "o200k_base"

    def count(self, text: str) -> int:
        return 0


class Session:
    def __init__(self) -> None:
        self.p = Projection()
        self.clock = 0
        self.ids = iter(range(1, 1 << 60))
        self.root = self.start("research_agent", None, task="write the paper")

    def start(self, name, parent, **args) -> str:
        self.clock += 10
        sid = format(next(self.ids), "016x")
        attrs = {
            s.OPERATION: s.OP_INVOKE_AGENT,
            s.AGENT_NAME: name,
            s.INPUT_VALUE: json.dumps(args),
            s.INPUT_MIME: s.MIME_JSON,
            s.DOC: f"Do the {name} step. More detail.",
        }
        self.p.apply(SpanStarted(TRACE, sid, parent, f"invoke_agent {name}", self.clock, attrs))
        return sid

    def end(self, sid, out) -> None:
        self.clock += 10
        self.p.apply(SpanEnded(TRACE, sid, self.clock, "ok", None, {s.OUTPUT_VALUE: out, s.OUTPUT_MIME: s.MIME_TEXT}))

    def stage(self, i: int) -> None:
        """A finished stage: a call with two finished children (3 nodes)."""
        st = self.start("stage", self.root, n=i)
        for k in range(2):
            c = self.start("step", st, n=i, k=k)
            self.end(c, f"step {i}.{k} result with a few words of output")
        self.end(st, f"stage {i} summary")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    (tmp / "AGENTS.md").write_text("# Project\n" + "Rules of the project. " * 100)
    (tmp / "USER.md").write_text("The user studies agents.\n")
    mem = FileMemory(tmp / "memory")
    mem.workspace.mkdir()
    (mem.workspace / "core.md").write_text("- fact\n" * 50)
    registry = default_registry(plugins=False)
    base = Ctx(
        agent=AgentInfo("research-agent", description="An AI research assistant."),
        provider="openai",
        model="gpt-4o",
        workspace=tmp,
        memory=mem,
        tools=tuple(
            ToolSpec(f"tool_{i}", "A tool", {"type": "object", "properties": {"q": {"type": "string"}}})
            for i in range(10)
        ),
        skills=(Skill("arxiv"),),
        clock=lambda: datetime(2026, 6, 24, 12),
    )

    sess = Session()
    while len(sess.p.nodes) < args.calls:
        sess.stage(len(sess.p.nodes))

    warm = TokenCounter()
    times: dict[str, list[float]] = {"warm": [], "cold": [], "none": []}
    chars = {"warm": 0, "cold": 0}
    tree_nodes = first = len(sess.p.nodes)
    for i in range(args.rounds):
        viewer = sess.start("step", sess.root, n=i)
        view = sess.p.view(viewer)
        tree_nodes = len(sess.p.nodes)
        ctx = base.replace(call_tree=view, turn=for_view(view, user_input=f"round {i}"))
        for name in ("none", "cold", "warm"):
            counter = {"none": NoCount(), "cold": TokenCounter(), "warm": warm}[name]
            before = getattr(counter, "counted_chars", 0)
            t0 = time.perf_counter()
            assemble(ctx, registry, counter=counter)
            times[name].append(time.perf_counter() - t0)
            if name != "none":
                chars[name] += counter.counted_chars - before
        sess.end(viewer, "done")

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    warm_t = times["warm"]
    print(f"assembly, default registry, call tree of {first:,} to {tree_nodes:,} nodes, {args.rounds} rounds")
    p50, p99 = pct(warm_t, 0.5) * 1e3, pct(warm_t, 0.99) * 1e3
    print(f"  p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   (tokens counted incrementally)")
    count_inc = max(0.0, statistics.median(times["warm"]) - statistics.median(times["none"]))
    count_all = max(1e-12, statistics.median(times["cold"]) - statistics.median(times["none"]))
    print(f"  assembly without counting (baseline)  p50 {statistics.median(times['none']) * 1e3:7.2f} ms")
    print(
        f"token counting per assembly: one new call {count_inc * 1e3:.2f} ms vs from scratch {count_all * 1e3:.2f} ms"
        f" -> ratio {count_inc / count_all:.3f}"
    )
    print(
        f"characters encoded per assembly: {chars['warm'] / args.rounds:,.0f} vs {chars['cold'] / args.rounds:,.0f}"
        f" -> ratio {chars['warm'] / max(1, chars['cold']):.3f}"
    )


if __name__ == "__main__":
    main()

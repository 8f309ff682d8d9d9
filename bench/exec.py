"""The runtime's own cost per ``exec`` with the scripted model (everything but the model: the
tree view, the context assembly, the wire body, recording, the chat span, the log), as a
ratio to the assembly step alone, measured inside the same calls.

A session of stages, each a call with a few children that each ask the model once; the tree
keeps growing through the run (the default registry, workspace files and memory are on).

    python bench/exec.py [--stages 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from callctx import agentic, execute, setup
from callctx.components import FileMemory, Skill
from callctx.models import ScriptedModel


class Timed:
    """Wraps a callable and keeps the time of each call."""

    def __init__(self, fn):
        self.fn = fn
        self.times: list[float] = []

    def __call__(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return self.fn(*a, **k)
        finally:
            self.times.append(time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=60)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    (tmp / "AGENTS.md").write_text("# Project\n" + "Rules of the project. " * 60)
    mem = FileMemory(tmp / "memory")
    mem.workspace.mkdir()
    (mem.workspace / "core.md").write_text("- a fact\n" * 20)
    model = ScriptedModel({"*": "ok"})
    rt = setup(tmp / "events.jsonl", model=model, workspace=tmp, memory=mem, skills=(Skill("search"),))

    assemble = Timed(execute.assemble)
    execute.assemble = assemble
    complete = Timed(model.complete)
    model.complete = complete
    totals: list[float] = []

    def ask(prompt: str) -> str:
        t0 = time.perf_counter()
        out = rt.exec(prompt)
        totals.append(time.perf_counter() - t0)
        return out

    @agentic
    def step(stage: int, k: int) -> str:
        """Do one step of a stage."""
        return ask(f"stage {stage}, step {k}")

    @agentic(summarize=lambda out: f"stage done ({len(out)} steps)")
    def stage(n: int) -> list[str]:
        """Run one stage."""
        return [step(n, k) for k in range(4)]

    @agentic
    def session(goal: str) -> int:
        for n in range(args.stages):
            stage(n)
        return args.stages

    session("measure the runtime")
    rt.close()

    n = len(totals)
    own = [t - m for t, m in zip(totals, complete.times, strict=True)]
    asm = assemble.times
    print(f"exec with the scripted model, {n} calls (tree grows to {len(rt.projection.nodes):,} spans)")
    print(f"  exec, total          p50 {statistics.median(totals) * 1e3:6.3f} ms")
    print(f"  the model itself     p50 {statistics.median(complete.times) * 1e3:6.3f} ms")
    print(f"  runtime's own cost   p50 {statistics.median(own) * 1e3:6.3f} ms   (total minus model)")
    print(f"  assemble alone       p50 {statistics.median(asm) * 1e3:6.3f} ms   (baseline)")
    print(f"runtime overhead per exec / assemble: {statistics.median(own) / statistics.median(asm):.2f}x")


if __name__ == "__main__":
    main()

"""The runtime's own cost per ``exec`` with the scripted model (everything but the model: the
tree view, the context assembly, the wire body, recording, the chat span, the log), as a
ratio to the assembly step alone, measured inside the same calls (the baseline).

A session of stages, each a call with a few children that each ask the model once; the tree
keeps growing through the run (the default registry, workspace files and memory are on, and
the agent offers ``--tools`` standing tools, typed Python functions, on every call).
Medians of wall time, and of the thread's CPU time (wall time also counts the moments the OS
ran another process). The target: the runtime's own cost at most 1.5x the assembly's.
``--breakdown`` also times the main steps outside the assembly (the probes add a little to
the total).

    python bench/exec.py [--stages 60] [--tools 3] [--breakdown]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import tempfile
import time
from pathlib import Path

from callctx import agentic, setup
from callctx.components import FileMemory, Skill
from callctx.engine import execute
from callctx.models import ScriptedModel

TARGET = 1.5  # the runtime's own cost per exec, at most this many times the assembly's


def search_notes(query: str, limit: int = 5) -> list[str]:
    """Search the project's notes."""
    return [query] * limit


def read_file(path: str, start: int = 0, lines: int | None = None) -> str:
    """Read a file of the workspace."""
    return path


def write_note(title: str, body: str, tags: list[str] | None = None) -> str:
    """Write a note for later steps."""
    return title


TOOLS = (search_notes, read_file, write_note)


class Timed:
    """Wraps a callable and keeps the time (wall and thread CPU) of each call."""

    def __init__(self, fn):
        self.fn = fn
        self.times: list[float] = []
        self.cpu: list[float] = []

    def __call__(self, *a, **k):
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            return self.fn(*a, **k)
        finally:
            self.cpu.append(time.thread_time() - c0)
            self.times.append(time.perf_counter() - w0)


def probe(owner, name: str) -> Timed:
    """Time ``owner.name`` from now on (a function in its place, so a method still binds)."""
    timed = Timed(getattr(owner, name))

    def timed_call(*a, **k):
        return timed(*a, **k)

    setattr(owner, name, timed_call)
    return timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=60)
    ap.add_argument("--tools", type=int, default=3, help="standing tools the agent offers on every call")
    ap.add_argument("--breakdown", action="store_true", help="also time the steps outside the assembly")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    (tmp / "AGENTS.md").write_text("# Project\n" + "Rules of the project. " * 60)
    mem = FileMemory(tmp / "memory")
    mem.workspace.mkdir()
    (mem.workspace / "core.md").write_text("- a fact\n" * 20)
    model = ScriptedModel({"*": "ok"})
    rt = setup(tmp / "events.jsonl", model=model, workspace=tmp, memory=mem, skills=(Skill("search"),),
               tools=TOOLS[: args.tools])  # fmt: skip

    assemble = probe(execute, "assemble")
    complete = probe(model, "complete")
    steps: dict[str, Timed] = {}
    if args.breakdown:
        runtime = importlib.import_module("callctx.engine.runtime")
        steps = {
            "tree view": probe(runtime.Runtime, "view"),
            "wire body": probe(execute.wire, "build"),
            "record (manifest, request hash, blobs)": probe(execute.record, "record"),
            "blobs to the log": probe(runtime.Runtime, "store_blobs"),
            "memory recall": probe(execute, "prefetch"),
        }
    totals: list[float] = []
    totals_cpu: list[float] = []

    def ask(prompt: str) -> str:
        w0, c0 = time.perf_counter(), time.thread_time()
        out = rt.exec(prompt)
        totals_cpu.append(time.thread_time() - c0)
        totals.append(time.perf_counter() - w0)
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

    def p50(xs: list[float]) -> float:
        return statistics.median(xs) * 1e3

    n = len(totals)
    own = [t - m for t, m in zip(totals, complete.times, strict=True)]
    own_cpu = [t - m for t, m in zip(totals_cpu, complete.cpu, strict=True)]
    print(f"exec with the scripted model, {n} calls (tree grows to {len(rt.projection.nodes):,} spans)")
    print("                                  wall          CPU")
    print(f"  exec, total          p50  {p50(totals):7.3f} ms   {p50(totals_cpu):7.3f} ms")
    print(f"  the model itself     p50  {p50(complete.times):7.3f} ms   {p50(complete.cpu):7.3f} ms")
    print(f"  runtime's own cost   p50  {p50(own):7.3f} ms   {p50(own_cpu):7.3f} ms   (total minus model)")
    print(f"  assemble alone       p50  {p50(assemble.times):7.3f} ms   {p50(assemble.cpu):7.3f} ms   (baseline)")
    rest = [o - a for o, a in zip(own_cpu, assemble.cpu, strict=True)]
    print(f"  the rest of exec     p50  {'':7s}      {p50(rest):7.3f} ms   (own cost minus assembly)")
    for label, timed in steps.items():
        print(f"    {label:<40s} {p50(timed.cpu):7.3f} ms CPU")
    ratio = statistics.median(own) / statistics.median(assemble.times)
    ratio_cpu = statistics.median(own_cpu) / statistics.median(assemble.cpu)
    print(f"runtime overhead per exec / assemble: {ratio:.2f}x (CPU time: {ratio_cpu:.2f}x)")
    verdict = "met" if ratio <= TARGET else "not met"
    verdict_cpu = "met" if ratio_cpu <= TARGET else "not met"
    print(f"  target: <= {TARGET:.1f}x -> {verdict} ({ratio:.2f}x; CPU time: {verdict_cpu}, {ratio_cpu:.2f}x)")


if __name__ == "__main__":
    main()

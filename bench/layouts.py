"""Three context layouts built from the same components, through the cache simulator.

The workload is the demo's research agent scaled up (many literature / idea rounds, at
least 200 model calls), one call every 10 seconds. Each call's context is laid out three ways:

* ours: stable blocks first, the date at the tail of the project part, the call tree, then
  the turn (situation, input); the session runs across midnight, so the date changes once;
* unstable: the same, but the date in the first layer and the situation before the tree;
* full history: no call tree; every call re-sends all earlier model exchanges (prompt and
  reply), with a breakpoint after the last one, as chat-style agents do.

For each provider it prints the hit share, the share of the limit reached and the cost,
side by side. Targets: ours reaches >= 90% of the limit (Anthropic and OpenAI) and costs at
most half of full history.

    python bench/layouts.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from callctx import setup
from callctx.components.cache import Request, Simulator, Tokenizer, request_of
from callctx.components.context import Context, Segment
from callctx.demo import SCRIPT, SKILLS, demo_workspace, run
from callctx.execute import CallRecord
from callctx.models import ScriptedModel

TARGET_LIMIT = 0.90
STEP_S = 10.0


def scaled_script(rounds: int) -> dict[str, Any]:
    s = dict(SCRIPT)
    s["_pick_stage"] = ["literature", "idea"] * rounds + ["done"]
    s["_lit_decide"] = [{"action": "seed_surveys"}]
    s["generate_ideas"] = [["call-tree context", "cache-stable layouts", "ratcheted budgets"]]
    s["check_novelty"] = [{"novel": True, "reason": "nothing like it in the surveys"}]
    return s


def night_clock(start: datetime = datetime(2026, 6, 23, 23, 45)):
    """A clock that moves STEP_S per reading: the session runs across midnight."""
    ticks = iter(range(10**9))
    return lambda: start + timedelta(seconds=STEP_S * next(ticks))


def record_calls(rounds: int) -> list[CallRecord]:
    folder = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    workspace, memory = demo_workspace(folder)
    rt = setup(folder / "events.jsonl", workspace=workspace, memory=memory, skills=SKILLS, clock=night_clock())
    try:
        return run(rt, model=ScriptedModel(scaled_script(rounds), model="claude-sonnet-4-5"))
    finally:
        rt.close()


def _seg(component: str, section: str, text: str, tokens: int, breakpoint: bool, cacheable: bool = True) -> Segment:
    return Segment(component, "L1", section, text, tokens, cacheable, breakpoint)  # type: ignore[arg-type]


def unstable(ctx: Context) -> Context:
    """The date moved into the first layer, the situation moved in front of the call tree."""
    segs = [msgspec.structs.replace(s, breakpoint=False) for s in ctx.segments]
    date = next(s for s in segs if s.component == "current_date")
    situation = next((s for s in segs if s.component == "situation"), None)
    rest = [s for s in segs if s is not date and s is not situation]
    l0_end = max(i for i, s in enumerate(rest) if s.layer == "L0" and s.section == "system")
    rest.insert(l0_end + 1, msgspec.structs.replace(date, layer="L0"))
    if situation is not None:
        tree_at = next((i for i, s in enumerate(rest) if s.section == "tree"), None)
        rest.insert(tree_at if tree_at is not None else len(rest), situation)
    # breakpoints where ours puts them: tools, end of the first layer, end of the project part, the tree
    out = []
    for i, s in enumerate(rest):
        nxt = rest[i + 1] if i + 1 < len(rest) else None
        end_of_stretch = s.section in ("tools", "tree") or (
            s.section == "system" and (nxt is None or nxt.section != "system" or nxt.layer != s.layer)
        )
        out.append(msgspec.structs.replace(s, breakpoint=end_of_stretch and s.cacheable))
    return msgspec.structs.replace(ctx, segments=out)


def full_history(call: CallRecord, earlier: list[CallRecord], tok: Tokenizer) -> Request:
    """System part as ours, then every earlier exchange, then this turn."""
    ctx = call.context
    system = [s for s in ctx.segments if s.section in ("tools", "system")]
    history: list[Segment] = []
    for c in earlier:
        reply = c.reply.text if c.reply and c.reply.text else str(c.reply.tool_calls if c.reply else "")
        text = c.context.turn + reply + "\n\n"
        history.append(_seg("history", "tree", text, len(tok(text)), False))
    if history:
        history[-1] = msgspec.structs.replace(history[-1], breakpoint=True)
    turn = [s for s in ctx.segments if s.section == "turn"]
    return request_of(msgspec.structs.replace(ctx, segments=[*system, *history, *turn]), tokenize=tok)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=23)
    args = ap.parse_args()
    calls = record_calls(args.rounds)
    tok = Tokenizer()
    layouts: dict[str, list[Request]] = {"ours": [], "unstable": [], "full history": []}
    for i, call in enumerate(calls):
        t = i * STEP_S
        layouts["ours"].append(_timed(request_of(call.context, tokenize=tok), t))
        layouts["unstable"].append(_timed(request_of(unstable(call.context), tokenize=tok), t))
        layouts["full history"].append(_timed(full_history(call, calls[:i], tok), t))

    print(f"{len(calls)} model calls of the scaled research agent, one every {STEP_S:.0f} s")
    ok = True
    for provider, model in (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4.1"), ("gemini", "gemini-2.5-flash")):
        print(f"\n{provider} ({model})")
        print(f"  {'layout':14s} {'tokens sent':>12s} {'read':>10s} {'hit share':>9s} {'limit':>10s} "
              f"{'of limit':>8s} {'cost $':>9s} {'no cache $':>10s}")  # fmt: skip
        reports = {}
        for name, reqs in layouts.items():
            r = Simulator(provider, model).run(reqs)
            reports[name] = r
            print(f"  {name:14s} {r.total:12,d} {r.read:10,d} {r.hit_share:9.1%} {r.limit:10,d} "
                  f"{r.limit_share:8.1%} {r.cost:9.4f} {r.cost_uncached:10.4f}")  # fmt: skip
        ours, full = reports["ours"], reports["full history"]
        verdict_limit = ours.limit_share >= TARGET_LIMIT
        verdict_cost = ours.cost <= full.cost / 2
        print(f"  ours: {ours.limit_share:.1%} of the limit (target >= {TARGET_LIMIT:.0%}: "
              f"{'met' if verdict_limit else 'not met'}); cost {ours.cost / full.cost:.2f}x full history "
              f"(target <= 0.5: {'met' if verdict_cost else 'not met'})")  # fmt: skip
        if provider in ("anthropic", "openai"):
            ok = ok and verdict_limit and verdict_cost
    print(f"\nall targets {'met' if ok else 'NOT met'}")


def _timed(req: Request, t: float) -> Request:
    return Request(req.blocks, t, req.label)


if __name__ == "__main__":
    main()

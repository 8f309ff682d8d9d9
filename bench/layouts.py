"""Three context layouts built from the same components, through the cache simulator.

The workload is the demo's research agent scaled up (many literature / idea rounds, at
least 200 model calls), one call every 10 seconds. Each call's context is laid out three ways:

* ours: stable blocks first, the date at the tail of the project part, the call tree, then
  the turn (situation, input); the session runs across midnight, so the date changes once;
* unstable: the same, but the date in the first layer and the situation before the tree;
* full history: no call tree; every call re-sends all earlier model exchanges (prompt and
  reply), with a breakpoint after the last one, as chat-style agents do.

Each layout is marked the way the wire sends it to each provider (``request_of(...,
marking=sim.marking)``): Anthropic's marks, looked up 20 blocks back; OpenAI's for GPT-5.6 and
later, which also mark where the request before wrote an entry (OpenAI looks entries up only at
the marks a request carries); beside them "no markers", what an OpenAI request without
``prompt_cache_breakpoint`` gets on those models (OpenAI's implicit breakpoint alone). Models
before GPT-5.6 cache by prefix, routed by the first tokens and ``prompt_cache_key``: one session
routes the same with or without the key, so for them the bench also runs ten sessions of the
agent at once, with and without a key per session.

For each provider it prints the hit share, the share of the limit reached and the cost,
side by side. Targets: ours reaches >= 90% of the limit with Anthropic and >= 95% with OpenAI,
and costs at most half of full history.

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
from callctx.cli.research_agent import SKILLS, demo_workspace, run, scaled_script
from callctx.components.cache import Block, Request, Simulator, Tokenizer, request_of
from callctx.components.context import Context, Segment
from callctx.components.wire.blocks import Marking, system_blocks, tree_blocks
from callctx.engine.execute import CallRecord
from callctx.models import ScriptedModel, tool_call

TARGET_LIMIT = {"anthropic": 0.90, "openai": 0.95}
STEP_S = 10.0
MODELS = {"openai breakpoints": "gpt-5.6-sol", "openai prefix": "gpt-4.1"}  # GPT-5.6 and later; before
SESSIONS = 10  # sessions at once, for the routing figures


def night_clock(start: datetime = datetime(2026, 6, 23, 23, 45)):
    """A clock that moves STEP_S per reading: the session runs across midnight."""
    ticks = iter(range(10**9))
    return lambda: start + timedelta(seconds=STEP_S * next(ticks))


def _tool_rounds(rounds: int):
    """seed_surveys asks for the search tool ``rounds`` times before it answers."""

    def answer(request: Any) -> Any:
        asked = (len(request.body.get("messages", [])) - 1) // 2  # earlier (assistant, tool result) pairs
        if asked < rounds:
            return tool_call("arxiv_search", query=f"LLM agent frameworks survey, part {asked + 1}")
        return "surveys:\n  1. arXiv:2603.22386  From Static Templates to Dynamic Runtime\n"

    return [answer]


def record_calls(rounds: int, *, model: str = "claude-sonnet-4-5", big_system: bool = False, tools: int = 1):
    folder = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    workspace, memory = demo_workspace(folder, scale=2 if big_system else 1)
    rt = setup(folder / "events.jsonl", workspace=workspace, memory=memory, skills=SKILLS, clock=night_clock())
    script = scaled_script(rounds)
    if tools > 1:
        script["seed_surveys"] = _tool_rounds(tools)
    try:
        return run(rt, model=ScriptedModel(script, model=model))
    finally:
        rt.close()


def _seg(component: str, section: str, text: str, tokens: int, breakpoint: bool, cacheable: bool = True) -> Segment:
    return Segment(component, "L1", section, text, tokens, cacheable, breakpoint)  # type: ignore[arg-type]


def unstable(ctx: Context) -> Context:
    """The date moved into the first layer (the situation is moved by :func:`unstable_request`)."""
    segs = [msgspec.structs.replace(s, breakpoint=False) for s in ctx.segments]
    date = next(s for s in segs if s.component == "current_date")
    rest = [s for s in segs if s is not date]
    l0_end = max(i for i, s in enumerate(rest) if s.layer == "L0" and s.section == "system")
    rest.insert(l0_end + 1, msgspec.structs.replace(date, layer="L0"))
    # breakpoints where ours puts them: tools, end of the first layer, end of the project part, the tree
    out = []
    for i, s in enumerate(rest):
        nxt = rest[i + 1] if i + 1 < len(rest) else None
        end_of_stretch = s.section in ("tools", "tree") or (
            s.section == "system" and (nxt is None or nxt.section != "system" or nxt.layer != s.layer)
        )
        out.append(msgspec.structs.replace(s, breakpoint=end_of_stretch and s.cacheable))
    return msgspec.structs.replace(ctx, segments=out)


def unstable_request(call: CallRecord, tok: Tokenizer, marking: Marking) -> Request:
    """:func:`unstable`'s context with the situation moved in front of the call tree: the turn
    (never cached, not in the limit) starts there."""
    ctx = unstable(call.context)
    req = request_of(ctx, _exchanges(call), tokenize=tok, marking=marking)
    situation = ctx.segment("situation")
    if situation is None:
        return req
    pre = len(system_blocks(ctx)) + (1 if ctx.tools else 0)
    tree = len(tree_blocks(ctx))
    turn = "".join(s.text for s in ctx.segments if s.section == "turn" and s is not situation)
    moved = [
        *req.blocks[:pre],
        Block(tok(situation.text), turn=True),
        *(Block(b.tokens, b.breakpoint, True) for b in req.blocks[pre : pre + tree]),
        Block(tok(turn), turn=True, message_end=True),
        *req.blocks[pre + tree + 1 :],
    ]
    return Request(tuple(moved), req.time_s, req.label, req.route)


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
    req = request_of(msgspec.structs.replace(ctx, segments=[*system, *history, *turn]), tokenize=tok)
    # each earlier exchange is a message of its own (OpenAI looks entries up at message ends)
    first = len(req.blocks) - len(history) - (1 if turn else 0)
    blocks = [Block(b.tokens, b.breakpoint, b.turn, b.message_end or first <= i < first + len(history))
              for i, b in enumerate(req.blocks)]  # fmt: skip
    return Request(tuple(blocks), req.time_s, req.label, req.route)


def one_marker(ctx: Context) -> Context:
    """Ours without the second tree marker (the block where the current call's parent begins)."""
    return msgspec.structs.replace(ctx, segments=[msgspec.structs.replace(s, parent_block=None) for s in ctx.segments])


def no_markers(req: Request) -> Request:
    """The request with no breakpoint at all (OpenAI then places its implicit one)."""
    return Request(tuple(Block(b.tokens, False, b.turn, b.message_end) for b in req.blocks), req.time_s, req.label)


def sessions(reqs: list[Request], keyed: bool) -> list[Request]:
    """SESSIONS sessions of the agent at once, interleaved: the same calls, each session's text
    its own from the project part on (its session block differs), the tools and the first layer
    shared; routed by a key per session, or by no key."""
    out = []
    for r in reqs:
        first = next((k for k, b in enumerate(r.blocks) if b.breakpoint), 0)  # the end of the first layer
        for s in range(SESSIONS):
            blocks = list(r.blocks)
            if first + 1 < len(blocks):
                b = blocks[first + 1]
                blocks[first + 1] = Block((10**6 + s, *b.tokens), b.breakpoint, b.turn, b.message_end)
            route = f"{r.route}-{s}" if keyed else ""
            out.append(Request(tuple(blocks), r.time_s + s * STEP_S / SESSIONS, r.label, route))
    return out


SCENARIOS = {
    "system part under 1,024 tokens": {"big_system": False},
    "system part over 1,024 tokens": {"big_system": True},
    "Opus 4.6 (4,096-token minimum)": {"big_system": True, "model": "claude-opus-4-6"},
    "tool rounds (3 per search)": {"big_system": True, "tools": 3},
}


def lay_out(calls: list[CallRecord], tok: Tokenizer, marking: Marking) -> dict[str, list[Request]]:
    """Every layout's requests, marked as ``marking`` marks them."""
    layouts: dict[str, list[Request]] = {"ours": [], "one tree marker": [], "unstable": [], "full history": []}
    for i, call in enumerate(calls):
        t = i * STEP_S
        ex = _exchanges(call)
        layouts["ours"].append(_timed(request_of(call.context, ex, tokenize=tok, marking=marking), t))
        layouts["one tree marker"].append(
            _timed(request_of(one_marker(call.context), ex, tokenize=tok, marking=marking), t)
        )
        layouts["unstable"].append(_timed(unstable_request(call, tok, marking), t))
        layouts["full history"].append(_timed(full_history(call, calls[:i], tok), t))
    if marking == "openai":
        layouts["no markers"] = [no_markers(r) for r in layouts["ours"]]
    return layouts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=23)
    ap.add_argument("--only", help="run one scenario (a prefix of its name)")
    args = ap.parse_args()
    tok = Tokenizer()
    ok = True
    for scenario, options in SCENARIOS.items():
        if args.only and not scenario.startswith(args.only):
            continue
        anthropic_model = options.get("model", "claude-sonnet-4-5")
        calls = record_calls(args.rounds, **options)
        marked: dict[Marking, dict[str, list[Request]]] = {}
        system = max(sum(s.tokens for s in c.context.segments if s.section in ("tools", "system")) for c in calls)
        print(f"\n=== {scenario}: {len(calls)} model calls, one every {STEP_S:.0f} s; system part {system:,} tokens")
        for provider, model in (("anthropic", anthropic_model), *(("openai", m) for m in MODELS.values())):
            sim = Simulator(provider, model, key="block")
            layouts = marked.get(sim.marking) or marked.setdefault(sim.marking, lay_out(calls, tok, sim.marking))
            how = "breakpoints" if sim.mode == "breakpoints" else "prefix"
            print(f"\n{provider} ({model}, {how}, {sim.row} rules), entries keyed by block (text-keyed in brackets)")
            print(f"  {'layout':16s} {'tokens sent':>12s} {'read':>10s} {'of input':>9s} {'of limit':>17s} "
                  f"{'cost $':>9s} {'vs full':>8s}")  # fmt: skip
            reports = {}
            for name, reqs in layouts.items():
                r = Simulator(provider, model, key="block").run(reqs)
                t = Simulator(provider, model, key="text").run(reqs)
                reports[name] = r
                print(f"  {name:16s} {r.total:12,d} {r.read:10,d} {r.hit_share:9.1%} "
                      f"{r.limit_share:7.1%} ({t.limit_share:6.1%}) {r.cost:9.4f}")  # fmt: skip
            ours, full = reports["ours"], reports["full history"]
            for name, r in reports.items():
                if name != "full history":
                    print(f"    {name}: {r.cost / full.cost:.2f}x the cost of full history")
            target = TARGET_LIMIT[provider]
            verdict_limit = ours.limit_share >= target
            verdict_cost = ours.cost <= full.cost / 2
            reach = [c for c in ours.calls if c.limit >= sim.min_tokens]
            reachable = sum(min(c.read, c.limit) for c in reach) / max(1, sum(c.limit for c in reach))
            print(f"  ours, over the calls whose limit reaches the {sim.min_tokens:,}-token minimum "
                  f"({len(reach)} of {len(ours.calls)}): {reachable:.1%} of their limit")  # fmt: skip
            if sim.routing_tokens:
                keyed = Simulator(provider, model, key="text").run(sessions(layouts["ours"], True))
                bare = Simulator(provider, model, key="text").run(sessions(layouts["ours"], False))
                rate = SESSIONS * 60 / STEP_S
                print(f"  ours, {SESSIONS} sessions at once ({rate:.0f} requests a minute sharing their first "
                      f"{sim.routing_tokens} tokens): {keyed.hit_share:.1%} of input read with a "
                      f"prompt_cache_key per session, {bare.hit_share:.1%} without")  # fmt: skip
            print(f"  ours: {ours.limit_share:.1%} of the limit (target >= {target:.0%}: "
                  f"{'met' if verdict_limit else 'NOT met'}); {ours.hit_share:.1%} of all input read from cache; "
                  f"cost {ours.cost / full.cost:.2f}x full history (target <= 0.5: "
                  f"{'met' if verdict_cost else 'NOT met'})")  # fmt: skip
            ok = ok and verdict_limit and verdict_cost
    print(f"\nall targets {'met' if ok else 'NOT met'}")


def _exchanges(call: CallRecord) -> list[Any]:
    return list(call.exchanges)


def _timed(req: Request, t: float) -> Request:
    return Request(req.blocks, t, req.label, req.route)


if __name__ == "__main__":
    main()

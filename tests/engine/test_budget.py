"""The tree budget: over it, the oldest finished calls collapse into one summary line, ratcheted
and recorded, so every call's tree stays under budget and the prefix is stable again after."""

from __future__ import annotations

import itertools

from helpers.trees import parse

from callctx import agentic, setup
from callctx.components import tokens
from callctx.models import ScriptedModel
from callctx.projection import Projection, read_log
from callctx.projection.events import Collapsed

BUDGET = 400


def test_a_2000_call_session_stays_under_budget(tmp_path):
    rt = setup(tmp_path / "events.jsonl", model=ScriptedModel({"*": "ok"}), tree_budget=BUDGET)
    count = tokens.counter().count
    seen: list[tuple[str, str, int | None]] = []

    @agentic(summarize=lambda out: "checked")
    def check(i: int) -> str:
        return rt.exec(f"check {i}")

    @agentic(summarize=lambda out: f"step done: {out}")
    def step(i: int) -> str:
        view = rt.view(rt.current_span_id())
        seen.append((rt.current_span_id(), view.text, view.here))
        out = rt.exec(f"step {i}")
        if i % 10 == 0:
            check(i)
        return out

    @agentic
    def session(n: int) -> int:
        for i in range(n):
            step(i)
        return n

    try:
        assert session(2000) == 2000
    finally:
        rt.close()

    sizes = [count(text) for _, text, _ in seen]
    assert max(sizes) <= BUDGET, max(sizes)
    collapses = [r for r in read_log(rt.log_path) if isinstance(r, Collapsed)]
    assert len(collapses) >= 10  # it did collapse, many times
    keys = [(c.through_start_ns, c.through_span_id) for c in collapses]
    assert keys == sorted(keys)  # ratcheted: only ever forward
    summary = parse(seen[-1][1])[0]["children"][0]
    assert list(summary) == ["collapsed"] and summary["collapsed"].startswith(f"{collapses[-1].summary.split()[0]} ")

    # between collapses, each call's tree begins with everything the previous call saw before itself
    shared = 0

    def collapse_lines(text):
        return [line for line in text.splitlines() if "{collapsed:" in line]

    for (_, before, here), (_, after, _) in itertools.pairwise(seen):
        if collapse_lines(before) != collapse_lines(after):
            continue  # a collapse happened between the two calls
        assert here is not None and after.startswith(before[:here])
        shared += 1
    assert shared > 1500

    # replay reproduces the collapses: the last call's tree from the log equals the live one
    replayed = Projection.from_log(rt.log_path, recover=False)
    span_id = seen[-1][0]
    assert replayed.view(span_id).text == rt.projection.view(span_id).text
    assert sum(1 for n in replayed.nodes.values() if n.holds) == 2000 + 200 + 1


def test_collapse_records_fold_idempotently_and_in_any_order(runtime):
    from helpers.spans import Builder, leaf

    b = Builder(conversation="s")
    for i in range(6):
        b.span(f"call{i}", output=f"out {i}", children=[leaf("inner", output="x")])
    events = list(b.events)
    tops = [e for e in events if type(e).__name__ == "SpanStarted" and e.parent_id is None]
    c1 = Collapsed(
        tops[0].trace_id, "s", None, tops[1].start_ns, tops[1].span_id, "2 earlier calls: call0 ×1, call1 ×1"
    )
    c2 = Collapsed(tops[0].trace_id, "s", None, tops[3].start_ns, tops[3].span_id, "4 earlier calls: …")
    forward = Projection()
    forward.apply_all([*events, c1, c2])
    backward = Projection()
    backward.apply_all([c2, *reversed(events), c1, c1])  # c1 after c2 cannot undo it
    assert forward.session_tree("s") == backward.session_tree("s")
    tree = parse(forward.session_tree("s"))
    assert tree[0] == {"collapsed": "4 earlier calls: …"}
    assert [t["function"] for t in tree[1:]] == ["call4", "call5"]

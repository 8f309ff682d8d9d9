"""The fold: order tolerance, idempotence, dialects, transparency, sessions, interruption."""

from __future__ import annotations

import random

from helpers.spans import Builder, leaf, node
from helpers.trees import parse
from hypothesis import given, settings
from hypothesis import strategies as st

from callctx.projection import Projection
from callctx.projection import schema as s
from callctx.projection.dialects import classify
from callctx.projection.events import SpanEnded, SpanStarted


def fold(events):
    p = Projection()
    p.apply_all(events)
    return p


def all_views(p: Projection) -> dict[str, str]:
    """Every rendering the projection can produce: each session seen from outside and from each call."""
    views = {f"session:{k}": p.session_tree(k) for k in p.sessions()}
    for span_id, n in p.nodes.items():
        if n.holds:
            views[span_id] = p.view(span_id).text
    return views


def _program(b: Builder) -> None:
    b.span(
        "research_agent",
        children=[
            leaf("_pick_stage", output="literature"),
            node(
                "literature",
                leaf("_lit_decide", output="seed_surveys"),
                node(
                    "http",
                    node("seed_surveys", leaf("arxiv", kind="tool", output="hits"), output="surveys"),
                    kind="other",
                ),
                leaf("gpt-x", kind="llm", output="thinking"),
                leaf("extract_framework", output="fw", status="error", error="ValueError: bad"),
                output="framework",
            ),
            node("idea", node("generate_ideas", leaf("check_novelty", output="yes")), output="ideas"),
        ],
    )


def _without_root_end(events):
    root = events[0].span_id
    return [e for e in events if not (isinstance(e, SpanEnded) and e.span_id == root)]


def _events():
    b = Builder()
    _program(b)
    return b.events


# A tree shape drawn by hypothesis: (kind, children) pairs.
kinds = st.sampled_from(["agentic", "agentic", "agentic", "other", "llm", "tool"])
shapes = st.recursive(
    st.tuples(kinds, st.just(())),
    lambda inner: st.tuples(kinds, st.lists(inner, max_size=4).map(tuple)),
    max_leaves=25,
)


def _build(shape, conversation=None):
    b = Builder(conversation=conversation)

    def make(sh, i=[0]):  # noqa: B006 - a shared counter for names
        kind, children = sh
        i[0] += 1
        name = f"f{i[0]}"
        status = "error" if i[0] % 7 == 0 else "ok"
        expose = ("io", "llm", "full", "hidden", "io")[i[0] % 5]
        if i[0] % 11 == 0:
            unended.add(name)
        attrs = {s.CONVERSATION: f"conv-{i[0] % 3}"} if i[0] % 4 == 0 else None  # sessions set mid-tree
        return lambda bb, parent: bb.span(
            name,
            parent,
            kind=kind,
            output=f"out {name}",
            status=status,
            error="E: x" if status == "error" else None,
            expose=expose,
            attrs=attrs,
            children=[make(c) for c in children],
        )

    unended: set[str] = set()
    make(shape)(b, None)
    starts = {e.span_id: e.name for e in b.events if isinstance(e, SpanStarted)}
    return [e for e in b.events if not (isinstance(e, SpanEnded) and starts[e.span_id] in unended)]


@settings(max_examples=300, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), dup=st.floats(0, 1))
def test_any_permutation_or_duplication_folds_to_the_same_tree(shape, seed, dup):
    events = _build(shape)
    expected = all_views(fold(events))
    rng = random.Random(seed)
    shuffled = list(events) + [e for e in events if rng.random() < dup]
    rng.shuffle(shuffled)
    assert all_views(fold(shuffled)) == expected


def test_complete_spans_child_first_like_an_otlp_batch():
    events = _events()
    expected = all_views(fold(events))
    # exporters send spans as they end: children before parents, start+end together
    by_span = {}
    for e in events:
        by_span.setdefault(e.span_id, []).append(e)
    ends = [e for e in events if isinstance(e, SpanEnded)]
    batch = [ev for end in ends for ev in reversed(by_span[end.span_id])]  # end before start too
    assert all_views(fold(batch)) == expected


def test_plain_spans_are_transparent_and_tools_folded():
    p = fold(_events())
    tree = parse(p.session_tree(p.sessions()[0]))
    lit = tree[0]["children"][1]
    names = [c["function"] for c in lit["children"]]
    assert names == ["_lit_decide", "seed_surveys", "extract_framework"]  # http span and llm/tool gone
    assert lit["children"][2] == {"function": "extract_framework", "status": "error", "error": "ValueError: bad"}


def test_expose_llm_and_full_show_exchanges():
    b = Builder()
    b.span(
        "agent",
        children=[
            node(
                "planner",
                leaf("gpt-x", kind="llm", output="plan A"),
                leaf("search", kind="tool", output="hits"),
                expose="llm",
                output=None,
            ),
            node(
                "worker",
                leaf("gpt-y", kind="llm", output="done"),
                leaf("bash", kind="tool", output="ok"),
                expose="full",
            ),
        ],
    )
    p = fold(_without_root_end(b.events))  # the top still runs, so its children are not released
    tree = parse(p.session_tree(p.sessions()[0]))
    planner, worker = tree[0]["children"]
    assert planner["children"] == [{"model": "gpt-x", "input": "prompt", "output": "plan A"}]
    assert worker["children"] == [
        {"model": "gpt-y", "input": "prompt", "output": "done"},
        {"tool": "bash", "input": "{}", "output": "ok"},
    ]


def test_hidden_call_lifts_its_children():
    b = Builder()
    b.span("agent", children=[node("helper", leaf("inner", output="x"), expose="hidden")])
    p = fold(_without_root_end(b.events))
    tree = parse(p.session_tree(p.sessions()[0]))
    assert tree[0]["children"] == [{"function": "inner", "output": "x"}]


def test_sessions_group_root_calls():
    b1 = Builder(trace_id="01" * 16, conversation="conv-1")
    b1.span("turn", children=[leaf("step", output="a")], output="first")
    b2 = Builder(trace_id="02" * 16, conversation="conv-1")
    b2.clock = 5_000
    b2.span("turn", children=[leaf("step", output="b")], output="second")
    p = fold(b2.events + b1.events)
    assert p.sessions() == ["conv-1"]
    tree = parse(p.session_tree("conv-1"))
    assert [t["output"] for t in tree] == ["first", "second"]
    assert tree[0]["children"] == [{"function": "step", "status": "done"}]


def test_conversation_on_a_plain_root_span():
    b = Builder(trace_id="03" * 16)
    b.span("http", kind="other", attrs={s.CONVERSATION: "conv-9"}, children=[leaf("agent", output="x")])
    p = fold(b.events)
    assert p.sessions() == ["conv-9"]


def test_unended_spans_are_interrupted_after_recovery():
    b = Builder()
    b.span("agent", children=[leaf("done_step", output="ok")])
    events = [e for e in b.events if not (isinstance(e, SpanEnded) and e.span_id == b.events[0].span_id)]
    p = fold(events)
    viewer = events[0].span_id
    assert "status: running" in p.view(viewer).text
    p.mark_recovered()
    assert "status: interrupted" in p.view(viewer).text
    assert "status: interrupted" in p.session_tree(p.sessions()[0])


def test_end_without_start_is_kept_until_the_start():
    b = Builder()
    b.span("agent", output="x")
    start, end = b.events
    p = Projection()
    p.apply(end)
    assert p.sessions() == []
    p.apply(start)
    assert parse(p.session_tree(p.sessions()[0])) == [{"function": "agent", "output": "x"}]


def test_cycles_and_self_parents_do_not_hang():
    t = "cd" * 16
    events = [
        SpanStarted(t, "a" * 16, "b" * 16, "x", 1, {s.OPERATION: "invoke_agent", s.AGENT_NAME: "x"}),
        SpanStarted(t, "b" * 16, "a" * 16, "y", 2, {s.OPERATION: "invoke_agent", s.AGENT_NAME: "y"}),
        SpanStarted(t, "c" * 16, "c" * 16, "z", 3, {s.OPERATION: "invoke_agent", s.AGENT_NAME: "z"}),
    ]
    p = fold(events)
    tree = parse(p.session_tree(p.sessions()[0]))
    assert tree[0]["function"] == "y" and tree[0]["children"][0]["function"] == "x"
    assert tree[1]["function"] == "z"


def _agent(name: str, **more: str) -> dict[str, str]:
    return {s.OPERATION: "invoke_agent", s.AGENT_NAME: name, **more}


def test_a_parent_in_another_trace_counts_as_missing_whichever_arrives_first():
    t1, t2 = "a1" * 16, "a2" * 16
    parent = SpanStarted(t1, "1" * 16, None, "outer", 1, _agent("outer"))
    child = SpanStarted(t2, "2" * 16, "1" * 16, "inner", 2, _agent("inner"))
    under = SpanStarted(t1, "3" * 16, "1" * 16, "same", 3, _agent("same"))
    for events in ([parent, child, under], [child, parent, under], [child, under, parent]):
        p = fold(events)
        assert sorted(p.sessions()) == sorted([t1, t2])
        assert parse(p.session_tree(t1)) == [{"function": "outer", "status": "running",
                                              "children": [{"function": "same", "status": "running"}]}]  # fmt: skip
        assert parse(p.session_tree(t2)) == [{"function": "inner", "status": "running"}]
        assert p.nodes["2" * 16].parent is None and "1" * 16 not in p.orphans


def test_a_session_below_a_plain_root_and_a_lost_parent_make_their_own_trees():
    t = "a3" * 16
    events = [
        SpanStarted(t, "1" * 16, None, "GET /ask", 0, {s.CONVERSATION: "root-session"}),
        SpanStarted(t, "2" * 16, "1" * 16, "agent", 1, _agent("agent", **{s.CONVERSATION: "S"})),
        SpanStarted(t, "3" * 16, "1" * 16, "other", 2, _agent("other")),
        SpanStarted(t, "4" * 16, "9" * 16, "chat m", 3, {s.OPERATION: "chat", s.REQUEST_MODEL: "m"}),
    ]
    for order in (events, events[::-1]):
        p = fold(order)
        assert sorted(p.sessions()) == sorted(["S", "root-session", t])
        assert [n["function"] for n in parse(p.session_tree("S"))] == ["agent"]
        assert [n["function"] for n in parse(p.session_tree("root-session"))] == ["other"]
        assert [n["function"] for n in parse(p.session_tree(t))] == ["turn"]  # a model call at the top


def test_classification_by_dialect():
    assert classify("x", {s.OPERATION: "invoke_agent"}) == "agentic"
    assert classify("x", {s.OPERATION: "invoke_workflow"}) == "agentic"
    assert classify("x", {s.OPERATION: "chat"}) == "llm"
    assert classify("x", {s.OPERATION: "execute_tool"}) == "tool"
    assert classify("x", {s.SPAN_KIND: "CHAIN"}) == "agentic"
    assert classify("x", {s.SPAN_KIND: "AGENT"}) == "agentic"
    assert classify("x", {s.SPAN_KIND: "LLM"}) == "llm"
    assert classify("x", {s.SPAN_KIND: "TOOL"}) == "tool"
    assert classify("GET /", {"http.method": "GET"}) == "other"


def test_released_io_leaves_memory():
    p = fold(_events())
    root = next(n for n in p.nodes.values() if n.function == "research_agent")
    assert root.output is None and root.attrs is None  # a top call keeps no output of its own here
    for n in p.nodes.values():
        assert n.attrs is None  # every call ended: no start attributes (input) stay in memory
        if n is not root:
            assert n.output is None and n.input is None  # every parent ended: all io released

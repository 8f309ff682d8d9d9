"""The tree people read, ``view="all"``: every call's model exchanges and tool calls listed by
name, released or not, whatever its ``expose``; YAML that parses back, the same bytes for the
same events in any order. The tree the model sees (the default) is unchanged by it, byte for
byte. Agents named by their graph node (CrewAI, Agno) rather than by their span name."""

from __future__ import annotations

import random

import pytest
from helpers.received import FORMATS, received
from helpers.received import span as wire_span
from helpers.spans import Builder, leaf, node
from helpers.trees import find, here_line, parse

from callctx.projection import Projection
from callctx.projection.dialects import classify, function_name
from callctx.projection.events import SpanEnded
from callctx.projection.spans import records


def _program(b: Builder) -> None:
    """An agent whose calls used tools and a model: under ``expose=io`` (the default) and ``full``."""
    stage = leaf("_pick_stage", output="literature")
    b.span(
        "research_agent",
        children=[
            stage,
            node(
                "literature",
                node(
                    "seed_surveys",
                    leaf("arxiv", kind="tool", output="hits"),
                    leaf("gpt-x", kind="llm", output="thinking"),
                    output="surveys",
                ),
                leaf("arxiv", kind="tool", output="more hits"),
                leaf("fetch", kind="tool", status="error", error="TimeoutError: slow"),
                output="framework",
            ),
            node(
                "idea",
                leaf("gpt-x", kind="llm", output="an idea"),
                leaf("novelty", kind="tool", output="novel"),
                expose="full",
                output="ideas",
            ),
        ],
    )


def _events():
    b = Builder()
    _program(b)
    return b.events


def fold(events):
    p = Projection()
    p.apply_all(events)
    return p


EXPECTED_ALL = [{
    "function": "research_agent",
    "children": [
        {"function": "_pick_stage", "status": "done"},
        {"function": "literature", "status": "done", "children": [
            {"function": "seed_surveys", "status": "done", "children": [
                {"tool": "arxiv", "status": "done"},
                {"model": "gpt-x", "status": "done"},
            ]},
            {"tool": "arxiv", "status": "done"},
            {"tool": "fetch", "status": "error", "error": "TimeoutError: slow"},
        ]},
        {"function": "idea", "status": "done", "children": [
            {"model": "gpt-x", "status": "done"},
            {"tool": "novelty", "status": "done"},
        ]},
    ],
}]  # fmt: skip


def test_all_lists_every_tool_and_model_call_by_name():
    p = fold(_events())
    key = p.sessions()[0]
    assert parse(p.session_tree(key, view="all")) == EXPECTED_ALL
    # the model's view folds them away (DESIGN section 5)
    model = parse(p.session_tree(key))
    assert not find(model, "arxiv") and "tool" not in p.session_tree(key)
    assert model[0]["children"][1] == {"function": "literature", "status": "done",
                                       "children": [{"function": "seed_surveys", "status": "done"}]}  # fmt: skip


def test_the_default_tree_is_unchanged_by_rendering_all():
    events = _events()
    untouched = fold(events)
    p = fold(events)
    key = p.sessions()[0]
    before = {k: p.session_tree(k) for k in p.sessions()}
    views_before = {sid: p.view(sid).text for sid, n in p.nodes.items() if n.holds}
    for sid, n in p.nodes.items():
        if n.holds:
            p.view(sid, view="all")
    p.session_tree(key, view="all")
    after = {k: p.session_tree(k) for k in p.sessions()}
    assert after == before == {k: untouched.session_tree(k) for k in untouched.sessions()}
    assert {sid: p.view(sid).text for sid, n in p.nodes.items() if n.holds} == views_before
    assert p.session_tree(key, view="model") == before[key]


def test_all_is_byte_deterministic_in_any_order():
    events = _events()
    p = fold(events)
    key = p.sessions()[0]
    text = p.session_tree(key, view="all")
    assert p.session_tree(key, view="all") == text  # memoized: the same bytes again
    for seed in range(5):
        shuffled = list(events)
        random.Random(seed).shuffle(shuffled)
        assert fold(shuffled).session_tree(key, view="all") == text


def test_all_from_inside_a_running_call():
    events = _events()
    root = events[0].span_id
    seed = next(e for e in events if getattr(e, "name", "") == "seed_surveys").span_id
    running = {root, seed, *(e.span_id for e in events if getattr(e, "name", "") == "literature")}
    live = [e for e in events if not (isinstance(e, SpanEnded) and e.span_id in running)]
    p = fold(live)
    model, every = p.view(seed), p.view(seed, view="all")
    assert here_line(model.text) == here_line(every.text)
    lit = find(parse(every.text), "literature")[0]
    (current,) = [c for c in lit["children"] if c.get("function") == "seed_surveys"]
    assert current["status"] == "running"
    assert current["children"] == [{"tool": "arxiv", "status": "done"}, {"model": "gpt-x", "status": "done"}]
    assert "children" not in find(parse(model.text), "seed_surveys")[0]
    recovered = fold(live)
    recovered.mark_recovered()
    assert "status: interrupted" in recovered.view(seed, view="all").text


def test_running_and_io_kept_exchanges():
    b = Builder()
    # expose=full keeps its exchanges' io while it runs: "all" shows them as the model's view does
    b.span("agent", children=[leaf("search", kind="tool", output="hit")], attrs={"callctx.expose": "full"})
    events = [e for e in b.events if not (isinstance(e, SpanEnded) and e.span_id == b.events[0].span_id)]
    tool_start = next(e for e in events if getattr(e, "name", "") == "search")
    p = fold(events)
    agent = events[0].span_id
    assert p.view(agent, view="all").text == p.view(agent).text
    unfinished = fold([e for e in events if not (isinstance(e, SpanEnded) and e.span_id == tool_start.span_id)])
    assert {"tool": "search", "status": "running"} in parse(unfinished.view(agent, view="all").text)[0]["children"]


def test_a_top_level_tool_is_listed():
    b = Builder()
    b.span("lookup", kind="tool", output="x")
    b.span("gpt-x", kind="llm", output="hello")
    p = fold(b.events)
    key = p.sessions()[0]
    # no call holds it, so its io stays: shown as the model's view shows an exchange
    assert parse(p.session_tree(key, view="all")) == [{"tool": "lookup", "input": "{}", "output": "x"},
                                                      {"function": "turn", "output": "hello"}]  # fmt: skip
    assert parse(p.session_tree(key)) == [{"function": "turn", "output": "hello"}]


# ---- agents named by their graph node -----------------------------------------------------------
# Arize-ai/openinference python/instrumentation/openinference-instrumentation-crewai/src/openinference/
# instrumentation/crewai/_wrappers.py: _ExecuteCoreWrapper opens an AGENT span named by
# _get_execute_core_span_name ("{role}.{task}._execute_core", or "Task._execute_core" when the
# agent has no role) and sets graph.node.id = agent.role (graph.node.parent_id: the previous agent).
CREW = [
    ("Research crew.kickoff", {"openinference.span.kind": "CHAIN", "input.value": "{}"}, None),
    ("Senior Researcher.research_task._execute_core",
     {"openinference.span.kind": "AGENT", "input.value": '{"context": ""}', "input.mime_type": "application/json",
      "task_key": "k1", "graph.node.id": "Senior Researcher", "crew_key": "c1"}, 1),
    ("Task._execute_core",
     {"openinference.span.kind": "AGENT", "input.value": '{"context": "notes"}', "input.mime_type": "application/json",
      "graph.node.id": "Report Writer", "graph.node.parent_id": "Senior Researcher"}, 1),
    ("search_tool._run", {"openinference.span.kind": "TOOL", "tool.name": "search_tool"}, 2),
]  # fmt: skip


@pytest.mark.parametrize("fmt", FORMATS)
def test_crewai_agents_are_named_by_role(fmt):
    spans = []
    for i, (name, attrs, parent) in enumerate(CREW, start=1):
        a, evs = received(wire_span(i, name, attrs, parent=parent), fmt)
        if classify(name, a) == "agentic":
            assert function_name(name, "agentic", a) == (attrs.get("graph.node.id") or name)
        spans.append(wire_span(i, name, a, evs, parent=parent))
    p = fold(records(spans))
    tree = parse(p.session_tree(p.sessions()[0], view="all"))
    crew = tree[0]
    assert crew["function"] == "Research crew.kickoff"
    assert [c["function"] for c in crew["children"]] == ["Senior Researcher", "Report Writer"]
    assert crew["children"][0]["children"] == [{"tool": "search_tool", "status": "done"}]


def test_graph_node_names():
    agent = {"openinference.span.kind": "AGENT"}
    # openinference-instrumentation-agno _runs_wrapper.py: graph.node.id is a generated id,
    # graph.node.name the agent's name
    agno = {**agent, "graph.node.id": "3f2a9c", "graph.node.name": "Finance Agent"}
    assert function_name("Finance Agent.run", "agentic", agno) == "Finance Agent"
    # an agent's own name still comes first (the Agents SDK sets both to the agent's name)
    assert function_name("x", "agentic", {**agent, "agent.name": "Weather agent", "graph.node.id": "other"}) == (
        "Weather agent"
    )
    # only agents are named by a node
    tool = {"openinference.span.kind": "TOOL", "graph.node.id": "Senior Researcher"}
    assert function_name("search_tool._run", "tool", tool) == "search_tool._run"

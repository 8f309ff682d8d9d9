"""The seed's four moments (section 6, steps 1-4), checked node by node."""

from __future__ import annotations

from helpers.trees import find, here_line, parse

from callctx.cli.research_agent import run


def _moments(runtime):
    return run(runtime)


def _at(moments, function, nth=0):
    return [m for m in moments if m.function == function][nth]


def test_step1_lit_decide(runtime):
    m = _at(_moments(runtime), "_lit_decide")
    tree = parse(m.tree)
    root = tree[0]
    assert root["function"] == "research_agent"
    assert root["status"] == "running" and "input" in root
    first_pick, literature = root["children"]
    assert first_pick == {"function": "_pick_stage", "output": "go to literature"}
    assert literature["status"] == "running" and literature["input"] == {"topic": root["input"]["task"]}
    assert literature["children"] == [
        {"function": "_lit_decide", "input": {"topic": root["input"]["task"]}, "status": "running"}
    ]
    assert here_line(m.tree).strip() == "status: running  # you are here"
    # the marker sits on the _lit_decide node, the deepest one
    lines = m.tree.splitlines()
    assert lines[lines.index(here_line(m.tree)) - 3].strip() == "- function: _lit_decide"


def test_step2_seed_surveys(runtime):
    m = _at(_moments(runtime), "seed_surveys")
    literature = find(parse(m.tree), "literature")[0]
    lit_decide, seed = literature["children"]
    assert lit_decide == {"function": "_lit_decide", "output": "next: seed_surveys"}  # closed, shows its output
    assert seed["status"] == "running" and seed["input"] == {"query": "LLM agent frameworks surveys"}
    assert "output" not in seed and "children" not in seed
    assert "arxiv_search" not in m.tree  # the plain tool's span is folded away


def test_step3_second_pick_stage(runtime):
    m = _at(_moments(runtime), "_pick_stage", 1)
    root = parse(m.tree)[0]
    pick1, literature, pick2 = root["children"]
    assert pick1 == {"function": "_pick_stage", "output": "go to literature"}
    # literature finished: its output summary stays, its children keep structure only
    assert literature["output"] == "framework LLM-as-Code with 4 branches"
    assert "status" not in literature and "input" not in literature
    assert literature["children"] == [
        {"function": "_lit_decide", "status": "done"},
        {"function": "seed_surveys", "status": "done"},
        {"function": "extract_framework", "status": "done"},
    ]
    assert "{function: _lit_decide, status: done}" in m.tree  # flow form for released leaves
    assert pick2["status"] == "running" and pick2["input"] == {"done": ["literature"]}
    assert "# you are here" in m.tree.splitlines()[-1]


def test_step4_check_novelty(runtime):
    m = _at(_moments(runtime), "check_novelty")
    root = parse(m.tree)[0]
    names = [c["function"] for c in root["children"]]
    assert names == ["_pick_stage", "literature", "_pick_stage", "idea"]
    assert root["children"][2] == {"function": "_pick_stage", "output": "go to idea"}
    idea = root["children"][3]
    assert idea["status"] == "running"
    gen = idea["children"][0]
    assert gen["function"] == "generate_ideas" and gen["status"] == "running"
    check = gen["children"][0]
    assert check["function"] == "check_novelty" and check["status"] == "running"
    assert check["input"] == {"idea": "call-tree context"}
    assert here_line(m.tree).startswith(" " * 14 + "status: running")  # five levels deep
    # the released literature subtree is still there as structure
    lit = root["children"][1]
    assert [c["status"] for c in lit["children"]] == ["done"] * 3


def test_every_call_sees_itself_on_its_chain(runtime):
    for m in _moments(runtime):
        line = here_line(m.tree)
        lines = m.tree.splitlines()
        i = lines.index(line)
        # walk up to this node's "- function:" line
        while not lines[i].lstrip().startswith("- function:"):
            i -= 1
        assert lines[i].strip() == f"- function: {m.function}"

"""Seed fidelity: finished, unreleased io is kept whole (long text as a ``|`` block), and a
structured output reads as YAML in the tree, as a structured input does."""

from __future__ import annotations

from helpers.trees import find, parse

from callctx import agentic, setup


def test_a_long_output_is_shown_whole_under_a_running_parent(runtime):
    long = "\n".join(f"line {i}: " + "x" * 40 for i in range(40))  # ~2,000 characters
    assert len(long) > 1900
    seen = {}

    @agentic
    def write():
        return long

    @agentic
    def parent():
        write()
        seen["tree"] = runtime.call_tree()

    parent()
    node = find(parse(seen["tree"]), "write")[0]
    assert node["output"] == long  # whole, no cut
    assert "output: |" in seen["tree"]  # as a literal block


def test_a_structured_output_reads_as_yaml(runtime):
    seen = {}

    @agentic
    def plan():
        return {"steps": ["search", "read"], "budget": 3}

    @agentic
    def parent():
        plan()
        seen["tree"] = runtime.call_tree()

    parent()
    node = find(parse(seen["tree"]), "plan")[0]
    assert node["output"] == {"steps": ["search", "read"], "budget": 3}
    assert '"steps"' not in seen["tree"]  # not an escaped JSON string


def test_output_limit_is_an_explicit_option(tmp_path):
    rt = setup(tmp_path / "e.jsonl", output_limit=50)
    seen = {}
    try:

        @agentic
        def write():
            return "y" * 500

        @agentic
        def parent():
            write()
            seen["tree"] = rt.call_tree()

        parent()
    finally:
        rt.close()
    out = find(parse(seen["tree"]), "write")[0]["output"]
    assert out.endswith("…") and len(out) <= 52

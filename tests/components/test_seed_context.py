"""The seed's step 1: the context `_lit_decide` sees holds every block of the seed's example,
in the seed's order (with the date at the tail of the project part, per the design)."""

from __future__ import annotations

import re

from helpers.contexts import seed_ctx

from callctx.components import (
    assemble,
)

SEED_ORDER = [
    "<identity>",
    "<tool_enforcement>",
    "<execution_guidance>",
    "<platform_format>",
    "<inline_prompt>",
    "<skills>",
    "<memory>",
    "<environment>",
    "<pi_shield>",
    "<workspace>",
    "<git_repo>",
    "<session>",
    "<deferred_tools>",
    "Today is Tuesday, June 23, 2026.",
    "<call_tree>",
    "<situation>",
    "<memory-context>",
    "Research direction:",
    "<output_schema>",
]


def test_step1_context_has_every_seed_block_in_order(runtime, tmp_path):
    c = assemble(seed_ctx(runtime, tmp_path))
    text = c.text
    positions = [text.find(marker) for marker in SEED_ORDER]
    assert all(p >= 0 for p in positions), [m for m, p in zip(SEED_ORDER, positions, strict=True) if p < 0]
    assert positions == sorted(positions)
    assert c.tools and c.tools[0]["name"] == "arxiv_search"
    assert c.problems == []


def test_step1_situation_and_tree(runtime, tmp_path):
    c = assemble(seed_ctx(runtime, tmp_path))
    situation = c.segment("situation").text
    assert "INSIDE the agentic function `_lit_decide`" in situation
    assert "Call path: research_agent → literature → _lit_decide" in situation
    assert "Job: Pick the next literature-stage action (seed_surveys / extract_framework / done)." in situation
    assert "Your output will be parsed by the caller into a decision" in situation
    tree = c.segment("call_tree")
    assert tree.section == "tree" and tree.breakpoint
    assert "status: running  # you are here" in tree.text
    assert "".join(tree.blocks) == tree.text
    assert tree.blocks[-1].lstrip().startswith("- function: _lit_decide")
    # the layout: tools, system (first layer, project part), tree, turn; breakpoints closing the
    # first layer (the tools before it too), the project part and the tree
    assert [s.component for s in c.segments if s.breakpoint] == ["environment", "current_date", "call_tree"]
    assert re.search(r"\bL[012]\b", c.text) is None

"""The seed's step 1: the context `_lit_decide` sees holds every block of the seed's example,
in the seed's order (with the date at the tail of the project part, per the design)."""

from __future__ import annotations

import re
from datetime import datetime

from callctx.components import (
    AgentInfo,
    Ctx,
    DeferredTool,
    FileMemory,
    SessionBinding,
    Skill,
    ToolSpec,
    assemble,
)
from callctx.components.turn import for_view
from callctx.demo import run

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


def seed_ctx(runtime, tmp_path):
    views = {}
    run(runtime, on_call=lambda m: views.setdefault(m.function, runtime.projection.view(m.span_id)))
    view = views["_lit_decide"]
    ws = tmp_path / "OpenProgram"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / "AGENTS.md").write_text("# OpenProgram\nAgents as programs.\n")
    (ws / "USER.md").write_text("AI researcher working on LLM agents.\n")
    mem = FileMemory(tmp_path / "memory")
    mem.workspace.mkdir()
    (mem.workspace / "core.md").write_text("- The user is an AI researcher focused on LLM agents.\n")
    return Ctx(
        agent=AgentInfo(
            "research-agent",
            description="You are an AI research assistant powered by callctx.",
            inline_prompt="Focus on AI safety.",
        ),
        provider="openai",
        model="gpt-4o",
        channel="webui",
        tools=(ToolSpec("arxiv_search", "Search arXiv", {"type": "object", "properties": {"q": {"type": "string"}}}),),
        deferred_tools=(DeferredTool("paper_write", "Draft a paper section"),),
        skills=(Skill("arxiv"), Skill("research-lit"), Skill("novelty-check"), Skill("paper-write")),
        memory=mem,
        workspace=ws,
        session=SessionBinding("local_a001917168", "gpt-4o", "adaptive", "pro"),
        clock=lambda: datetime(2026, 6, 23, 14, 33),
        call_tree=view,
        turn=for_view(
            view,
            user_input="Research direction: LLM-as-Code. Pick the next action.",
            prefetch="- The user asked for AAAI formatting last week.",
            output_schema={"type": "object", "properties": {"action": {"enum": ["seed_surveys", "done"]}}},
        ),
    )


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

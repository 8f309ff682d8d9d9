"""Contexts the component tests assemble: a small one and the seed's step 1."""

from __future__ import annotations

from datetime import datetime

from callctx.cli.research_agent import run
from callctx.components import AgentInfo, Ctx, DeferredTool, FileMemory, SessionBinding, Skill, ToolSpec, Turn
from callctx.components.turn import for_view


def clock(dt):
    return lambda: dt


def base_ctx(tmp_path=None, **kw) -> Ctx:
    defaults = dict(
        agent=AgentInfo("research-agent", description="You are an AI research assistant."),
        provider="openai",
        model="gpt-4o",
        tools=(ToolSpec("arxiv_search", "Search arXiv", {"type": "object", "properties": {"q": {"type": "string"}}}),),
        skills=(Skill("arxiv"),),
        clock=clock(datetime(2026, 6, 24, 23, 59)),
        turn=Turn(function="f", doc="Do the thing.", call_path=["root", "f"], user_input="hello"),
    )
    defaults.update(kw)
    return Ctx(**defaults)


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

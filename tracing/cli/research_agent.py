"""The seed's research agent: ``research_agent`` loops over stages picked by ``_pick_stage``;
``literature`` runs ``_lit_decide``, ``seed_surveys`` (which searches arXiv with a plain
tool) and ``extract_framework``; ``idea`` runs ``generate_ideas``, which checks each idea
with ``check_novelty``. Every method asks its model through ``Agent.exec``; offline, the
scripted model answers by function name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from callctx import Agent, agentic
from callctx.components.inputs import Skill
from callctx.components.memory_store import FileMemory
from callctx.components.turn import decision, passed_to
from callctx.engine.execute import CallRecord
from callctx.engine.runtime import Runtime
from callctx.models import Model, ScriptedModel, tool_call

TASK = "Extend LLM-as-Code into an AAAI long paper"

Stage = Literal["literature", "idea", "done"]


class LitDecision(msgspec.Struct):
    action: Literal["seed_surveys", "extract_framework", "done"]


class Framework(msgspec.Struct):
    name: str
    branches: list[str]


class Verdict(msgspec.Struct):
    novel: bool
    reason: str


SCRIPT: dict[str, Any] = {
    "_pick_stage": ["literature", "idea", "done"],
    "_lit_decide": [{"action": "seed_surveys"}],
    "seed_surveys": [
        tool_call("arxiv_search", query="LLM agent frameworks survey"),
        "surveys:\n  1. arXiv:2603.22386  From Static Templates to Dynamic Runtime\n"
        "  2. arXiv:2601.04117  Agentic Runtime Graphs\n",
    ],
    "extract_framework": [{"name": "LLM-as-Code", "branches": ["prompting", "tooling", "runtime", "evaluation"]}],
    "generate_ideas": [["call-tree context", "cache-stable layouts"]],
    "check_novelty": [
        {"novel": True, "reason": "no prior work folds execution traces into the context"},
        {"novel": True, "reason": "prompt-cache-aware layouts are unexplored for agents"},
    ],
    "research_agent": ["Plan ready: a framework with 4 branches and 2 novel ideas, call-tree context first."],
}


def demo_model(wire: str = "anthropic", *, scale: int = 1) -> ScriptedModel:
    """The scripted model; ``scale`` > 1 runs that many literature / idea rounds, and names a
    real model (claude-sonnet-4-5) so the cache simulator applies its rules."""
    if scale <= 1:
        return ScriptedModel(SCRIPT, model="scripted-research", wire=wire)
    return ScriptedModel(scaled_script(scale), model="claude-sonnet-4-5", wire=wire)


def scaled_script(rounds: int) -> dict[str, Any]:
    """The demo's script for ``rounds`` literature / idea rounds (a longer run, a larger tree)."""
    s = dict(SCRIPT)
    s["_pick_stage"] = ["literature", "idea"] * rounds + ["done"]
    s["_lit_decide"] = [{"action": "seed_surveys"}]
    s["generate_ideas"] = [["call-tree context", "cache-stable layouts", "ratcheted budgets"]]
    s["check_novelty"] = [{"novel": True, "reason": "nothing like it in the surveys"}]
    return s


PROJECT_NOTES = (
    "## Section {i}\n\nThe paper's section {i} argues that an agent's execution trace is the right source of "
    "its context: every agentic call is a span, the call tree is folded from the spans, and each model call sees "
    "the calls on its path with their inputs, the finished calls before it with their outputs, and the structure "
    "of what was released. Claims in this section cite the surveys found in the literature stage.\n"
)


def demo_workspace(folder: Path, *, scale: int = 1) -> tuple[Path, FileMemory]:
    """A project folder (AGENTS.md, USER.md) and a memory workspace for the demo agent;
    ``scale`` > 1 adds project notes to AGENTS.md, so the system part passes the providers'
    minimum cacheable prefix."""
    ws = folder / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    notes = "".join("\n" + PROJECT_NOTES.format(i=i) for i in range(1, 7)) if scale > 1 else ""
    (ws / "AGENTS.md").write_text(
        "# LLM-as-Code paper\n\nTarget venue: AAAI (long paper, 7 pages + references).\n"
        "Keep every claim tied to a citation. Drafts live in paper/.\n" + notes,
        encoding="utf-8",
    )
    (ws / "USER.md").write_text("AI researcher working on LLM agents. Prefers concise answers.\n", encoding="utf-8")
    memory = FileMemory(folder / "memory", project_name="llm-as-code")
    (memory.workspace / "notes").mkdir(parents=True, exist_ok=True)
    (memory.workspace / "projects").mkdir(exist_ok=True)
    (memory.workspace / "core.md").write_text(
        "- The user is an AI researcher focused on LLM agents.\n- Technical terms stay in English.\n",
        encoding="utf-8",
    )
    (memory.workspace / "projects" / "llm-as-code.md").write_text(
        "- The framework draft has four branches.\n", encoding="utf-8"
    )
    (memory.workspace / "notes" / "venues.md").write_text(
        "The user asked for AAAI formatting and a novelty check on every idea.\n", encoding="utf-8"
    )
    return ws, memory


SKILLS = (Skill("arxiv", "search and read arXiv"), Skill("novelty-check"), Skill("paper-write"))


def arxiv_search(query: str, limit: int = 5) -> list[dict[str, str]]:
    """Search arXiv for papers matching the query."""
    return [
        {"id": "2603.22386", "title": "From Static Templates to Dynamic Runtime"},
        {"id": "2601.04117", "title": "Agentic Runtime Graphs"},
    ][:limit]


class ResearchAgent(Agent):
    """You are an AI research assistant that turns a research direction into a paper plan."""

    name = "research-agent"
    tools = (arxiv_search,)  # the same tools on every call: they open the cached prefix

    @agentic
    def research_agent(self, task: str) -> str:
        """Turn a research direction into a paper plan, one stage at a time."""
        done: list[str] = []
        framework: Framework | None = None
        while True:
            stage = self._pick_stage(done=list(done))
            if stage == "literature":
                framework = self.literature(topic=task)
            elif stage == "idea" and framework is not None:
                self.idea(framework=framework)
            else:
                break
            done.append(stage)
        return self.exec(f"Stages done: {', '.join(done)}. Summarize the plan in one sentence.")

    @agentic(
        summarize=lambda stage: f"go to {stage}",
        output="Your output will be parsed into a stage name.",
        position="main loop, picks the next stage",
    )
    def _pick_stage(self, done: list[str]) -> str:
        """Select the next research stage based on completed stages."""
        return self.exec(f"Completed stages: {', '.join(done) or 'none'}. Pick the next stage.", schema=Stage)

    @agentic(summarize=lambda fw: f"framework {fw.name} with {len(fw.branches)} branches")
    def literature(self, topic: str) -> Framework:
        """Survey the literature and extract a framework of the field."""
        action = self._lit_decide(topic=topic)
        surveys = self.seed_surveys(query="LLM agent frameworks surveys") if action == "seed_surveys" else ""
        return self.extract_framework(surveys=surveys)

    @agentic(
        summarize=lambda action: f"next: {action}",
        output=decision(),
        position="literature stage, decision step; candidates seed_surveys / extract_framework / done",
    )
    def _lit_decide(self, topic: str) -> str:
        """Pick the next literature-stage action (seed_surveys / extract_framework / done)."""
        return self.exec(f"Research direction: {topic}. Pick the next action.", schema=LitDecision).action

    @agentic(position="literature stage, search step", output=passed_to("extract_framework", "surveys"))
    def seed_surveys(self, query: str) -> str:
        """Generate seed survey queries for literature discovery."""
        return self.exec(f"Search query: {query}. Find seed surveys.")

    @agentic(summarize=lambda fw: f"{fw.name}: {', '.join(fw.branches)}")
    def extract_framework(self, surveys: str) -> Framework:
        """Extract the field's framework from the seed surveys."""
        return self.exec(f"Extract a framework from:\n{surveys}", schema=Framework)

    @agentic(summarize=lambda ideas: f"{len(ideas)} ideas checked")
    def idea(self, framework: Framework) -> list[dict[str, Any]]:
        """Turn the framework into checked research ideas."""
        return self.generate_ideas(framework=framework)

    @agentic(summarize=lambda ideas: f"{len(ideas)} ideas")
    def generate_ideas(self, framework: Framework) -> list[dict[str, Any]]:
        """Propose research ideas from the framework and check each for novelty."""
        ideas = self.exec(f"Propose ideas for the {framework.name} framework.", schema=list[str])
        return [{"idea": i, "novel": self.check_novelty(idea=i).novel} for i in ideas]

    @agentic(
        summarize=lambda v: "novel" if v.novel else "not novel",
        output="Your output is passed to generate_ideas as the per-idea novelty verdict.",
        position="idea stage, novelty check",
    )
    def check_novelty(self, idea: str) -> Verdict:
        """Check whether the proposed idea is novel against existing literature."""
        return self.exec(f"Check novelty of: {idea}", schema=Verdict)


def run(
    runtime: Runtime,
    *,
    model: Model | None = None,
    on_call: Callable[[CallRecord], None] | None = None,
    scale: int = 1,
) -> list[CallRecord]:
    """Run the research agent once; returns every model call it made (the demo script
    answers unless ``model`` is given; ``scale`` rounds of it)."""
    calls: list[CallRecord] = []

    def keep(call: CallRecord) -> None:
        calls.append(call)
        if on_call is not None:
            on_call(call)

    runtime.on_call(keep)
    try:
        ResearchAgent(runtime=runtime, model=model or demo_model(scale=scale)).research_agent(task=TASK)
    finally:
        runtime.observers.remove(keep)
    return calls

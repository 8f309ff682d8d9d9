"""The seed's research agent, offline: the call tree grows and releases as it runs.

``research_agent`` loops over stages picked by ``_pick_stage``; ``literature`` runs
``_lit_decide``, ``seed_surveys`` and ``extract_framework``; ``idea`` runs ``generate_ideas``,
which checks each idea with ``check_novelty``. Every agentic method asks its "model" once
through :meth:`ResearchAgent.think`; here the answers are scripted, keyed by function name,
and each ask records the call tree that call sees.

    python -m tracing.demo
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace

from . import Agent, agentic, setup
from .runtime import Runtime

TASK = "Extend LLM-as-Code into an AAAI long paper"

SCRIPT: dict[str, list[Any]] = {
    "research_agent": ["Plan ready: framework with 4 branches, 2 novel ideas."],
    "_pick_stage": ["literature", "idea", "done"],
    "_lit_decide": ["seed_surveys"],
    "seed_surveys": [
        "surveys:\n  1. arXiv:2603.22386  From Static Templates to Dynamic Runtime\n"
        "  2. arXiv:2601.04117  Agentic Runtime Graphs\n"
    ],
    "extract_framework": [{"name": "LLM-as-Code", "branches": ["prompting", "tooling", "runtime", "evaluation"]}],
    "generate_ideas": [["call-tree context", "cache-stable layouts"]],
    "check_novelty": [
        {"novel": True, "reason": "no prior work folds traces into context"},
        {"novel": True, "reason": "caching layouts are unexplored for agents"},
    ],
}


@dataclass
class Moment:
    """One model call: which function asked, and the call tree it saw."""

    function: str
    span_id: str
    tree: str


@dataclass
class Brain:
    """Scripted answers, one list per function, consumed in order."""

    script: dict[str, list[Any]] = field(default_factory=lambda: {k: list(v) for k, v in SCRIPT.items()})

    def __call__(self, function: str, prompt: str) -> Any:
        answers = self.script.get(function)
        if not answers:
            raise LookupError(f"no scripted answer left for {function}")
        return answers.pop(0) if len(answers) > 1 else answers[0]


class ResearchAgent(Agent):
    """An AI research assistant that turns a research direction into a paper plan."""

    name = "research-agent"

    def __init__(self, brain: Callable[[str, str], Any] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.brain = brain or Brain()
        self.moments: list[Moment] = []
        self.on_moment: Callable[[Moment], None] | None = None

    def think(self, function: str, prompt: str) -> Any:
        """Ask the model; records the call tree this call sees."""
        rt = self.runtime
        moment = Moment(function, rt.current_span_id() or "", rt.call_tree())
        self.moments.append(moment)
        if self.on_moment is not None:
            self.on_moment(moment)
        return self.brain(function, prompt)

    @agentic
    def research_agent(self, task: str) -> str:
        """Turn a research direction into a paper plan, one stage at a time."""
        done: list[str] = []
        framework: Any = None
        while True:
            stage = self._pick_stage(done=list(done))
            if stage == "literature":
                framework = self.literature(topic=task)
            elif stage == "idea":
                self.idea(framework=framework)
            else:
                break
            done.append(stage)
        return self.think("research_agent", "Summarize the plan.")

    @agentic(
        summarize=lambda stage: f"go to {stage}",
        output="Your output will be parsed into a stage name.",
        position="main loop, picks the next stage",
    )
    def _pick_stage(self, done: list[str]) -> str:
        """Select the next research stage based on completed stages."""
        return self.think("_pick_stage", f"Completed: {done or 'nothing'}. Pick the next stage.")

    @agentic(summarize=lambda fw: f"framework {fw['name']} with {len(fw['branches'])} branches")
    def literature(self, topic: str) -> dict[str, Any]:
        """Survey the literature and extract a framework of the field."""
        action = self._lit_decide(topic=topic)
        surveys = self.seed_surveys(query="LLM agent frameworks surveys") if action == "seed_surveys" else ""
        return self.extract_framework(surveys=surveys)

    @agentic(
        summarize=lambda action: f"next: {action}",
        output="Your output will be parsed into a decision.",
        position="literature stage, decision step; candidates seed_surveys / extract_framework / done",
    )
    def _lit_decide(self, topic: str) -> str:
        """Pick the next literature-stage action (seed_surveys / extract_framework / done)."""
        return self.think("_lit_decide", f"Research direction: {topic}. Pick the next action.")

    @agentic(
        position="literature stage, search step", output="Your output is passed to extract_framework as its surveys."
    )
    def seed_surveys(self, query: str) -> str:
        """Generate seed survey queries for literature discovery."""
        hits = arxiv_search(query, self.runtime.tracer)
        return self.think("seed_surveys", f"Search query: {query}. Results: {len(hits)}")

    @agentic(summarize=lambda fw: f"{fw['name']}: {', '.join(fw['branches'])}")
    def extract_framework(self, surveys: str) -> dict[str, Any]:
        """Extract the field's framework from the seed surveys."""
        return self.think("extract_framework", f"Extract a framework from:\n{surveys}")

    @agentic(summarize=lambda ideas: f"{len(ideas)} ideas checked")
    def idea(self, framework: dict[str, Any]) -> list[dict[str, Any]]:
        """Turn the framework into checked research ideas."""
        return self.generate_ideas(framework=framework)

    @agentic(summarize=lambda ideas: f"{len(ideas)} ideas")
    def generate_ideas(self, framework: dict[str, Any]) -> list[dict[str, Any]]:
        """Propose research ideas from the framework and check each for novelty."""
        ideas = self.think("generate_ideas", f"Propose ideas for {framework['name']}.")
        return [{"idea": i, **self.check_novelty(idea=i)} for i in ideas]

    @agentic(
        summarize=lambda v: "novel" if v.get("novel") else "not novel",
        output="Your output is passed to generate_ideas as the per-idea novelty verdict.",
        position="idea stage, novelty check",
    )
    def check_novelty(self, idea: str) -> dict[str, Any]:
        """Check whether the proposed idea is novel against existing literature."""
        return self.think("check_novelty", f"Check novelty of: {idea}")


def arxiv_search(query: str, tracer: trace.Tracer) -> list[str]:
    """A plain tool: it makes an ordinary span, which the call tree folds away."""
    with tracer.start_as_current_span("arxiv_search", attributes={"search.query": query}):
        return ["2603.22386", "2601.04117"]


def run(runtime: Runtime | None = None, *, on_moment: Callable[[Moment], None] | None = None) -> ResearchAgent:
    """Run the research agent once under ``runtime`` (a fresh one in a temp dir if None)."""
    rt = runtime or setup(Path(tempfile.mkdtemp(prefix="callctx-demo-")) / "events.jsonl")
    agent = ResearchAgent(runtime=rt)
    agent.on_moment = on_moment
    agent.research_agent(task=TASK)
    return agent


def main() -> None:
    out = sys.stdout

    def show(m: Moment) -> None:
        out.write(f"\n── {m.function} sees ──\n{m.tree}")

    rt = setup(Path(tempfile.mkdtemp(prefix="callctx-demo-")) / "events.jsonl")
    run(rt, on_moment=show)
    rt.close()
    out.write(f"\nevent log: {rt.log_path}\n")


if __name__ == "__main__":
    main()

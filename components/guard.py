"""The stability guard: which components move bytes inside the cached prefix when they should not.

The guard assembles a context twice across each of a few everyday changes (the clock passing
midnight, a few seconds passing, a new memory recall, one more finished call, a new input)
and compares the two, segment by segment. Each change has components that are expected to
move (the date at midnight, the call tree when a call finishes, the turn). Any other
component whose bytes differ while it sits before the request's last cache breakpoint is a
finding: it invalidates everything cached after it, on every such change.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import msgspec

from callctx.projection import Projection
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted

from .assemble import assemble
from .component import Registry
from .context import Context
from .defaults import default_registry
from .inputs import AgentInfo, Ctx, SessionBinding, Skill, ToolSpec
from .memory_store import FileMemory
from .turn import for_view


@dataclass(frozen=True)
class Finding:
    scenario: str
    component: str
    layer: str
    invalidated: int  # cached tokens after the change, up to the last breakpoint

    def __str__(self) -> str:
        return (
            f"{self.component} ({self.layer}) changed on '{self.scenario}' inside the cached prefix: "
            f"{self.invalidated:,} cached tokens after it are lost each time"
        )


@dataclass
class GuardReport:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class Scenario:
    name: str
    change: Callable[[Ctx], tuple[Ctx, Ctx]]
    expected: frozenset[str]  # components allowed to move ("turn": anything of the turn)


def _tree_views() -> tuple[object, object]:
    """A call tree before and after one more call finishes (the next one starts)."""
    p = Projection()
    t = "9" * 32

    def start(i: int, parent: str | None, name: str) -> str:
        sid = format(i, "016x")
        attrs = {s.OPERATION: s.OP_INVOKE_AGENT, s.AGENT_NAME: name, s.INPUT_VALUE: f'{{"n": {i}}}',
                 s.INPUT_MIME: s.MIME_JSON}  # fmt: skip
        p.apply(SpanStarted(t, sid, parent, f"invoke_agent {name}", i * 10, attrs))
        return sid

    def end(sid: str, out: str) -> None:
        p.apply(SpanEnded(t, sid, int(sid, 16) * 10 + 5, "ok", None, {s.OUTPUT_VALUE: out}))

    root = start(1, None, "agent")
    for i in range(2, 7):
        end(start(i, root, "step"), f"result {i}")
    current = start(7, root, "step")
    before = p.view(current)
    end(current, "result 7")
    after = p.view(start(8, root, "step"))
    return before, after


def default_ctx(folder: Path | None = None) -> Ctx:
    """A context that turns every built-in component on."""
    folder = Path(folder or tempfile.mkdtemp(prefix="callctx-guard-"))
    ws = folder / "project"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "AGENTS.md").write_text("# Project\nBuild carefully.\n", encoding="utf-8")
    (ws / "USER.md").write_text("The user likes short answers.\n", encoding="utf-8")
    mem = FileMemory(folder / "memory", project_name="project")
    (mem.workspace / "projects").mkdir(parents=True, exist_ok=True)
    (mem.workspace / "core.md").write_text("- a remembered fact\n", encoding="utf-8")
    (mem.workspace / "projects" / "project.md").write_text("- a project fact\n", encoding="utf-8")
    before, _ = _tree_views()
    return Ctx(
        agent=AgentInfo("agent", description="An agent under test.", inline_prompt="Be careful."),
        provider="openai",
        model="gpt-4o",
        tools=(ToolSpec("search", "Search", {"type": "object", "properties": {"q": {"type": "string"}}}),),
        skills=(Skill("search"),),
        memory=mem,
        workspace=ws,
        session=SessionBinding("session-1", "gpt-4o", "adaptive", "pro"),
        clock=lambda: datetime(2026, 6, 24, 23, 59, 30),
        call_tree=before,  # type: ignore[arg-type]
        turn=for_view(before, user_input="Do the next step.", prefetch="- recalled fact"),  # type: ignore[arg-type]
    )


def _clock(ctx: Ctx, delta: timedelta) -> Ctx:
    now = ctx.clock()
    return ctx.replace(clock=lambda: now + delta)


def _next_call(ctx: Ctx) -> tuple[Ctx, Ctx]:
    before, after = _tree_views()
    return (
        ctx.replace(call_tree=before, turn=for_view(before, user_input=ctx.turn.user_input)),  # type: ignore[arg-type]
        ctx.replace(call_tree=after, turn=for_view(after, user_input=ctx.turn.user_input)),  # type: ignore[arg-type]
    )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("a few seconds later", lambda c: (c, _clock(c, timedelta(seconds=5))), frozenset()),
    Scenario("clock past midnight", lambda c: (c, _clock(c, timedelta(minutes=1))), frozenset({"current_date"})),
    Scenario(
        "new memory prefetch",
        lambda c: (c, c.replace(turn=msgspec.structs.replace(c.turn, prefetch="- another recalled fact"))),
        frozenset({"turn"}),
    ),
    Scenario("one more finished call", _next_call, frozenset({"call_tree", "turn"})),
    Scenario(
        "new turn input",
        lambda c: (c, c.replace(turn=msgspec.structs.replace(c.turn, user_input="Something else entirely."))),
        frozenset({"turn"}),
    ),
)


def _last_breakpoint(ctx: Context) -> int:
    marks = [i for i, seg in enumerate(ctx.segments) if seg.breakpoint]
    return marks[-1] if marks else -1


def _compare(scenario: Scenario, a: Context, b: Context, report: GuardReport) -> None:
    last = _last_breakpoint(b)
    old = {seg.component: seg for seg in a.segments}
    for i, seg in enumerate(b.segments):
        before = old.get(seg.component)
        if before is not None and before.text == seg.text:
            continue
        if i > last or not seg.cacheable:
            continue  # after the cached prefix: free to change
        cached_after = sum(x.tokens for x in b.segments[i : last + 1])
        allowed = seg.component in scenario.expected or (seg.section == "turn" and "turn" in scenario.expected)
        tree_a = a.segment("call_tree")
        if seg.component == "call_tree" and allowed and before is not None and tree_a is not None:
            cut = sum(len(x) for x in (tree_a.blocks or [tree_a.text])[: (tree_a.breakpoint_block or 0) + 1])
            if not seg.text.startswith(tree_a.text[:cut]):
                report.findings.append(Finding(scenario.name, seg.component, seg.layer, cached_after))
            continue
        if allowed:
            report.notes.append(
                f"{scenario.name}: {seg.component} moves as expected ({cached_after:,} cached tokens after it)"
            )
            continue
        report.findings.append(Finding(scenario.name, seg.component, seg.layer, cached_after))


def check(registry: Registry | None = None, ctx: Ctx | None = None) -> GuardReport:
    """Run every scenario against ``registry`` (default: the built-ins and installed plugins)."""
    registry = registry if registry is not None else default_registry()
    base = ctx if ctx is not None else default_ctx()
    report = GuardReport()
    for scenario in SCENARIOS:
        ctx_a, ctx_b = scenario.change(base)
        _compare(scenario, assemble(ctx_a, registry), assemble(ctx_b, registry), report)
    return report

"""The cache ledger against a provider that really caches, driven by callctx's own agents: an
``Agent`` whose ``@agentic`` method calls ``self.exec`` through ``OpenAIChat`` (one run, one
session: the call tree grows from call to call) and through ``AnthropicMessages`` (another run,
every question its own tree), both pointed at :class:`~helpers.caching_server.CachingServer`.
Before known questions a cache buster is injected: the workspace's AGENTS.md edited (the system
part changes after its first layer), a tool added, a pause past the TTL, another model, a
question from an agent with no long instructions (under the minimum), an eviction by the
provider. Between busters every call is a clean hit.

What the server did is checked first, then that the log's calls carry the usage it answered,
then what ``callctx cache LOG --why --json --ttl TTL`` says of each call (see
``tests/frameworks/test_cache_reasons.py`` for the same with other frameworks' agents).

Minimums from the rules table (``gpt-4.1`` family 2,048 tokens, Claude Sonnet 4.5 / 4.6 1,024).
Real time plays no part in the outcome: the TTL, on the server and on the ledger, is 600 s, far
longer than a run takes, so no real gap between calls reaches it; and the pause takes no time:
:class:`Clocks` moves the server's clock (:meth:`~helpers.caching_server.CachingServer.advance`)
and the span timestamps (the OpenTelemetry SDK's ``time_ns``, which callctx's spans start and end
on, patched for the run) forward by the TTL and a minute at once. The ledger sees a gap over the
TTL exactly there, however slow the machine."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import opentelemetry.sdk.trace as otel_sdk_trace
import pytest
from helpers.caching_server import (
    UNCHECKED,
    CacheRules,
    CachingServer,
    Difference,
    Eviction,
    Part,
    Read,
    Reason,
    Served,
    Step,
    difference_problems,
    expected_calls,
    ledger,
    long_prompt,
    loss_problems,
    pieces,
    reason_problems,
    reported_problems,
    served_problems,
    table_rules,
    text_of,
)
from helpers.stores import calls_in

from callctx import Agent, agentic, setup
from callctx.models.anthropic import AnthropicMessages
from callctx.models.base import Model
from callctx.models.openai import OpenAIChat

TTL = 600.0  # far more than a run takes: only a pause makes a gap this long
PAUSE = TTL + 60.0  # how far a pause moves the clocks forward, at once
QUESTION = "What's the weather in Paris?"
OPENAI_RULES = table_rules("openai", ttl_seconds=TTL)
ANTHROPIC_RULES = table_rules("anthropic", ttl_seconds=TTL)
MODELS = {"openai": ("gpt-4.1-mini", "gpt-4.1"), "anthropic": ("claude-sonnet-4-5", "claude-sonnet-4-6")}
LONG = long_prompt(max(OPENAI_RULES(m).min_tokens for m in MODELS["openai"]) + 600)
AGENTS_MD = "# Weather desk\n\nThis project answers questions about the weather.\nUnits: celsius.\n"
EDITED, EDIT = AGENTS_MD.replace("celsius", "fahrenheit"), "fahrenheit"


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny and 22 C in {city}"


def get_forecast(city: str, days: int) -> str:
    """The forecast for a city, for the next few days."""
    return f"Rain in {city} for {days} days"


class Concierge(Agent):
    """Answers the shop's customers."""

    instructions: str | None = LONG

    def __init__(self, tools: list[Callable[..., str]], model: Any = None) -> None:
        super().__init__(model=model)  # None: the runtime's model
        self.offered = tools

    @agentic
    def answer(self, question: str) -> str:
        """Answer one customer's question."""
        return self.exec(question, tools=self.offered)


class Receptionist(Concierge):
    """Greets the shop's customers."""

    instructions = None  # only callctx's own short system part: under the minimum


@dataclass
class Run:
    provider: str
    log: Path
    served: list[Served]
    evictions: list[Eviction]
    steps: list[Step]

    def rules(self, s: Served) -> CacheRules:
        return (OPENAI_RULES if self.provider == "openai" else ANTHROPIC_RULES)(s.model)


# a step's first difference, or a function finding it in what the server received
DifferenceSpec = Difference | Literal["unchecked"] | Callable[[Served], Difference] | None


def where(s: Served, part: Part, holds: str) -> tuple[int, int]:
    """The index of the piece of ``part`` that holds ``holds`` in what the server received, and
    the offset of ``holds`` in it."""
    index = next(p.index for p in pieces(s.api, s.body) if p.part == part and holds in p.text)
    return index, text_of(s.api, s.body, part, index).index(holds)


def the_edit(s: Served) -> Difference:
    """Where AGENTS.md's edit is in the system part sent (its block, for Anthropic)."""
    return Difference("system", *where(s, "system", EDIT))


def the_new_tool(s: Served) -> Difference:
    """Which of the tools sent is the one added."""
    return Difference("tools", where(s, "tools", '"get_forecast"')[0])


class Clocks:
    """The clocks a run's cache outcome reads, moved forward together: the server's and the one
    callctx's spans are stamped with (the OpenTelemetry SDK's ``time_ns``, shifted while the
    context of :meth:`shifted` is open)."""

    def __init__(self, server: CachingServer) -> None:
        self.server = server
        self.shift_ns = 0

    @contextmanager
    def shifted(self) -> Iterator[Clocks]:
        assert otel_sdk_trace.time_ns is time.time_ns, "the OpenTelemetry SDK no longer stamps spans with time.time_ns"
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(otel_sdk_trace, "time_ns", lambda: time.time_ns() + self.shift_ns)
            yield self

    def pause(self, seconds: float) -> None:
        """Time passing, ``seconds`` of it, at once."""
        self.server.advance(seconds)
        self.shift_ns += int(seconds * 1e9)


def drive(provider: str, tmp: Path) -> Run:
    """One run of the scenario through ``provider``'s client, each question a step."""
    m1, m2 = MODELS[provider]
    workspace = tmp / "workspace"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text(AGENTS_MD, encoding="utf-8")
    log = tmp / "events.jsonl"
    steps: list[Step] = []
    session = "weather-desk" if provider == "openai" else None  # OpenAI: one tree for every question

    with (
        CachingServer(openai=OPENAI_RULES, anthropic=ANTHROPIC_RULES) as server,
        Clocks(server).shifted() as clocks,
    ):

        def client(model: str) -> Model:
            if provider == "openai":
                return OpenAIChat(model, base_url=server.base_url, api_key="test", max_retries=0)
            return AnthropicMessages(model, base_url=server.url, api_key="test", max_retries=0)

        runtime = setup(log, model=client(m1), session_id=session, workspace=workspace, cwd=workspace,
                        clock=lambda: datetime(2026, 12, 1, 10, 0))  # fmt: skip
        same: DifferenceSpec = None if session is None else UNCHECKED  # a growing tree differs in the messages

        def ask(agent: Concierge, injected: str, reason: Reason, difference: DifferenceSpec = UNCHECKED,
                served: Read = "some", short: bool = False) -> None:  # fmt: skip
            """One question, and the step it makes (a difference found in what was sent, when it
            depends on where the layout put the injected text)."""
            first = len(server.served)
            agent.answer(QUESTION)
            found = difference(server.served[first]) if callable(difference) else difference
            steps.append(Step(injected, reason, found, served, len(server.served) - first, short))

        try:
            weather = Concierge([get_weather])
            ask(weather, "nothing", "first", None)
            ask(weather, "nothing", "hit")
            (workspace / "AGENTS.md").write_text(EDITED, encoding="utf-8")
            ask(weather, "AGENTS.md edited", "prefix_changed", the_edit, "partial")
            both = Concierge([get_weather, get_forecast])
            ask(both, "a second tool", "tools_changed", the_new_tool, "none")
            clocks.pause(PAUSE)  # the TTL running out, without waiting for it
            ask(both, "a pause past the TTL", "ttl_expired", same, "none")
            switched = client(m2)
            both = Concierge([get_weather, get_forecast], model=switched)  # the public way: an agent's model
            ask(both, "another model", "model_changed", same, "none")
            ask(Receptionist([get_weather, get_forecast], model=switched), "an agent with no long instructions",
                "below_minimum", short=True)  # fmt: skip
            ask(both, "nothing", "hit")
            server.evict()
            ask(both, "an eviction by the provider", "evicted", same, "none")
        finally:
            runtime.close()
        return Run(provider, log, server.served, server.evictions, steps)


@pytest.fixture(scope="module", params=sorted(MODELS))
def run(request, tmp_path_factory) -> Run:
    return drive(request.param, tmp_path_factory.mktemp(request.param))


# ---- the run: what the server did and what the log holds ---------------------------------------
def test_the_server_cached_as_the_busters_say(run):
    assert served_problems(run.steps, run.served, run.rules) == []
    assert all(step.calls == 2 for step in run.steps)
    assert {s.api for s in run.served} == {"chat" if run.provider == "openai" else "messages"}


def test_the_edit_is_the_only_change_before_it(run):
    calls = expected_calls(run.steps)
    (edited,) = [e for e in calls if e.reason == "prefix_changed"]
    assert isinstance(edited.difference, Difference) and edited.compared_with is not None
    before, after = run.served[edited.compared_with - 1], run.served[edited.call - 1]
    index, offset = edited.difference.index, edited.difference.offset
    assert (
        text_of(before.api, before.body, "system", index)[:offset]
        == text_of(after.api, after.body, "system", index)[:offset]
    )
    assert text_of(before.api, before.body, "system", index)[offset:].startswith("celsius")
    if run.provider == "anthropic":  # the first layer, with the long instructions, is a block of its own
        assert index > 0 and LONG in text_of(after.api, after.body, "system", 0)


def test_the_eviction_happened_just_before_the_call_it_busts(run):
    (evicted,) = [e.call for e in expected_calls(run.steps) if e.reason == "evicted"]
    (eviction,) = run.evictions
    assert eviction.entries > 0 and run.served[evicted - 2].at <= eviction.at <= run.served[evicted - 1].at


def test_every_call_was_logged_with_the_usage_the_server_answered(run):
    calls = calls_in(run.log)
    got = [(c.model, c.usage.input, c.usage.cache_read or 0, c.usage.cache_write or 0, c.foreign) for c in calls]
    want = [(s.model, s.prompt_tokens, s.cache_read, s.cache_write, False) for s in run.served]
    assert got == want


# ---- the ledger ---------------------------------------------------------------------------------
def test_the_ledger_gives_each_call_its_injected_reason(run):
    problems = reason_problems(ledger(run.log, TTL), expected_calls(run.steps), run.served, TTL)
    assert problems == [], "\n".join(problems)


def test_the_ledger_finds_each_first_difference_where_it_was_injected(run):
    problems = difference_problems(ledger(run.log, TTL), expected_calls(run.steps))
    assert problems == [], "\n".join(problems)


def test_the_ledger_reports_what_the_server_answered(run):
    problems = reported_problems(ledger(run.log, TTL), run.served)
    assert problems == [], "\n".join(problems)


def test_the_ledger_counts_a_loss_exactly_on_the_busted_calls(run):
    problems = loss_problems(ledger(run.log, TTL), expected_calls(run.steps), TTL)
    assert problems == [], "\n".join(problems)

"""Switching model in a run: per call (``exec(model=)``) and per agent (``Agent.model``), each
recorded on the chat span, asked through the provider's official SDK, and rebuilt from the log."""

from __future__ import annotations

import pytest
from helpers.sdk import ANTHROPIC_TEXT, OPENAI_TEXT, Capture, anthropic_client, openai_client
from helpers.stores import rebuilt_calls
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callctx import Agent, agentic, setup
from callctx.models import ScriptedModel
from callctx.models.anthropic import AnthropicMessages
from callctx.models.openai import OpenAIChat
from callctx.projection import schema as s


@pytest.fixture
def spans(runtime):
    exporter = InMemorySpanExporter()
    runtime.provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def chats(spans) -> list[dict]:
    return [dict(sp.attributes) for sp in spans.get_finished_spans() if sp.name.startswith("chat ")]


class Writer(Agent):
    """Writes short texts."""

    @agentic
    def write(self, topic: str, model: object = None) -> str:
        """Write about a topic."""
        return self.exec(f"Write about {topic}.", model=model) if model is not None else self.exec(f"Topic: {topic}.")


def test_each_call_asks_the_model_it_was_given_and_says_who_chose_it(runtime, spans):
    runtime.config.model = ScriptedModel({"*": "from the runtime"}, model="scripted-runtime")
    by_agent = ScriptedModel({"*": "from the agent"}, model="scripted-agent")
    by_call = ScriptedModel({"*": "from the call"}, model="scripted-call")

    class Pinned(Writer):
        model = by_agent  # a class's own model

    assert Writer().write("tea") == "from the runtime"
    assert Writer(model=by_agent).write("tea") == "from the agent"
    assert Pinned().write("tea") == "from the agent"
    assert Pinned().write("tea", model=by_call) == "from the call"  # the call's own wins over its agent's

    got = [(a[s.REQUEST_MODEL], a.get(s.MODEL_CHOICE, "runtime")) for a in chats(spans)]
    assert got == [("scripted-runtime", "runtime"), ("scripted-agent", "agent"), ("scripted-agent", "agent"),
                   ("scripted-call", "exec")]  # fmt: skip
    assert s.MODEL_CHOICE not in chats(spans)[0]  # the runtime's model: nothing more to say


def test_a_switch_between_providers_goes_through_their_sdks_and_rebuilds_from_the_log(tmp_path):
    anthropic, openai = Capture(ANTHROPIC_TEXT), Capture(OPENAI_TEXT)
    claude = AnthropicMessages("claude-sonnet-4-6", client=anthropic_client(anthropic))
    rt = setup(tmp_path / "events.jsonl", model=claude)
    fast = OpenAIChat("gpt-4o-mini", client=openai_client(openai))

    class Planner(Agent):
        """Plans a trip."""

        @agentic
        def plan(self, city: str) -> str:
            """Plan a day in a city."""
            first = self.exec(f"Where to go in {city}?")
            return first + self.exec("Now in one line.", model=fast)  # a cheaper model for the last step

    try:
        assert Planner().plan("Lyon") == "Hello!Hello!"
    finally:
        rt.close()
    assert len(anthropic.bodies()) == 1 and len(openai.bodies()) == 1  # each provider got its own request
    assert openai.bodies()[0]["model"] == "gpt-4o-mini" and "messages" in openai.bodies()[0]
    assert anthropic.bodies()[0]["model"] == "claude-sonnet-4-6" and "system" in anthropic.bodies()[0]
    rebuilt = rebuilt_calls(tmp_path / "events.jsonl")
    assert [(r.verified, r.call.provider, r.call.model) for r in rebuilt] == [
        (True, "anthropic", "claude-sonnet-4-6"), (True, "openai", "gpt-4o-mini")]  # fmt: skip
    assert [r.body for r in rebuilt] == [anthropic.bodies()[0], openai.bodies()[0]]  # what each server received


def test_a_spec_is_resolved_once_per_runtime_and_a_bad_one_fails_before_any_span(runtime, spans):
    made = runtime.model_of("scripted:scripted-x")
    assert runtime.model_of("scripted:scripted-x") is made  # one client per spec, shared
    assert made.params.model == "scripted-x"

    @agentic
    def ask(spec: str) -> str:
        return runtime.exec("hi", model=spec)

    assert ask("scripted:scripted-x") == ask("scripted:scripted-x")
    with pytest.raises(ValueError, match="unknown provider 'nosuch'"):
        ask("nosuch:model")
    names = [sp.name for sp in spans.get_finished_spans()]
    assert names.count("chat scripted-x") == 2
    assert not any(n.startswith("chat nosuch") or n == "chat model" for n in names)  # no model was asked

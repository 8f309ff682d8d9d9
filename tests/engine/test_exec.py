"""Runtime.exec: context from the live tree, the tool loop, schema retry, errors, top-level turns."""

from __future__ import annotations

import msgspec
import pytest
from helpers.sdk import ANTHROPIC_TEXT, Capture, anthropic_client, anthropic_tool_use
from helpers.stores import calls_in, rebuilt_calls
from helpers.trees import find, parse
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from callctx import Agent, agentic, setup
from callctx.components.wire.exchange import ToolResults, UserNote
from callctx.engine.execute import OutputValidationError
from callctx.models import ModelError, ScriptedModel, tool_call
from callctx.models.anthropic import AnthropicMessages
from callctx.projection import schema as s
from callctx.store.local import LocalStore


@pytest.fixture
def spans(runtime):
    exporter = InMemorySpanExporter()
    runtime.provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def calls(runtime):
    seen = []
    runtime.on_call(seen.append)
    return seen


def script(runtime, **answers):
    runtime.config.model = ScriptedModel(answers)


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def test_tool_loop_with_plain_and_agentic_tools(runtime, spans, calls):
    @agentic
    def summarize(text: str) -> str:
        """Summarize a text in a few words."""
        return runtime.exec(f"Summarize: {text}")

    @agentic
    def analyst(doc: str) -> str:
        """Analyse a document."""
        return runtime.exec(f"Analyse: {doc}", tools=[word_count, summarize])

    script(
        runtime,
        analyst=[
            {"tool_calls": [{"name": "word_count", "arguments": {"text": "a b c"}},
                            {"name": "summarize", "arguments": {"text": "long text"}}]},
            "3 words; short summary",
        ],
        summarize=["short summary"],
    )  # fmt: skip
    assert analyst("a b c") == "3 words; short summary"
    first, inner, second = calls  # analyst asks, summarize (as a tool) asks, analyst answers
    assert [t["name"] for t in first.context.tools] == ["word_count", "summarize"]
    assert first.context.tools[0]["parameters"]["properties"] == {"text": {"type": "string"}}
    assert inner.function == "summarize"
    results = second.body["messages"][-1]["content"]
    assert [r["content"] for r in results] == ["3", "short summary"]
    assert isinstance(second.context, type(first.context))
    tool_spans = [sp for sp in spans.get_finished_spans() if sp.name.startswith("execute_tool")]
    assert {sp.attributes[s.TOOL_NAME] for sp in tool_spans} == {"word_count", "summarize"}
    # the agentic tool entered the tree under the call that used it; the plain one did not
    tree = parse(runtime.projection.session_tree(runtime.projection.sessions()[0]))
    assert [c["function"] for c in tree[0].get("children", [])] == ["summarize"]
    assert "word_count" not in str(tree)


def test_failing_and_unknown_tools_are_reported_to_the_model(runtime, calls):
    def broken(x: int) -> int:
        raise RuntimeError("tool exploded")

    @agentic
    def f():
        return runtime.exec("go", tools=[broken])

    script(runtime, f=[tool_call("broken", x=1), tool_call("missing"), tool_call("broken", x="NaN"), "done"])
    assert f() == "done"
    contents = [c.body["messages"][-1]["content"][0] for c in calls[1:]]
    assert contents[0]["is_error"] and "tool exploded" in contents[0]["content"]
    assert "no tool named 'missing'" in contents[1]["content"]
    assert "invalid arguments for broken" in contents[2]["content"]


def test_current_function_is_never_offered_to_itself(runtime, calls):
    class Researcher(Agent):
        @agentic
        def plan(self, goal: str) -> str:
            """Plan the work."""
            return self.exec("plan it", tools=[self.plan, word_count])

    script(runtime, plan=["the plan"])
    assert Researcher().plan("x") == "the plan"
    assert [t["name"] for t in calls[0].context.tools] == ["word_count"]
    situation = calls[0].context.segment("situation").text
    assert "`plan` itself — do NOT call it" in situation


class Verdict(msgspec.Struct):
    novel: bool
    reason: str


def test_schema_validation_retry(runtime, calls):
    @agentic
    def check(idea: str) -> Verdict:
        return runtime.exec("Is it novel?", schema=Verdict)

    script(runtime, check=['{"novel": "maybe"}', '```json\n{"novel": true, "reason": "new"}\n```'])
    assert check("x") == Verdict(True, "new")
    assert len(calls) == 2
    note = calls[1].body["messages"][-1]["content"][0]["text"]
    assert "did not match the output schema" in note and "Expected `bool`" in note
    assert "<output_schema>" in calls[0].context.turn


def test_schema_failure_after_retry_raises(runtime, spans):
    @agentic
    def check() -> Verdict:
        return runtime.exec("Is it novel?", schema=Verdict)

    script(runtime, check=["nope", "still nope"])
    with pytest.raises(OutputValidationError, match="does not match the schema"):
        check()
    (sp,) = [x for x in spans.get_finished_spans() if x.name == "invoke_agent check"]
    assert sp.status.status_code is StatusCode.ERROR


def test_provider_error_marks_spans_and_loses_nothing(runtime, spans):
    cap = Capture((429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}))
    runtime.config.model = AnthropicMessages("claude-sonnet-4-6", client=anthropic_client(cap))

    @agentic
    def ask():
        return runtime.exec("hello")

    with pytest.raises(ModelError) as info:
        ask()
    assert info.value.status == 429 and info.value.retryable
    by_name = {sp.name: sp for sp in spans.get_finished_spans()}
    assert by_name["chat claude-sonnet-4-6"].status.status_code is StatusCode.ERROR
    assert by_name["invoke_agent ask"].status.status_code is StatusCode.ERROR
    runtime.close()
    (call,) = calls_in(runtime.log_path)
    assert call.status == "error" and "429" in call.error
    with LocalStore(runtime.log_path) as store:
        assert call.manifest and store.recorded(call).texts  # what it tried to send is in the log


def test_real_client_tool_loop_and_usage(runtime, spans):
    cap = Capture(anthropic_tool_use("word_count", {"text": "a b"}), ANTHROPIC_TEXT)
    runtime.config.model = AnthropicMessages("claude-sonnet-4-6", client=anthropic_client(cap))

    @agentic
    def ask():
        return runtime.exec("count", tools=[word_count])

    assert ask() == "Hello!"
    _, second = cap.bodies()
    assert second["messages"][-1]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "2",
        "is_error": False,
        "cache_control": {"type": "ephemeral"},
    }  # fmt: skip  (round three reads what round two sent)
    chats = [sp for sp in spans.get_finished_spans() if sp.name.startswith("chat ")]
    last = chats[-1].attributes
    assert last[s.USAGE_CACHE_READ] == 200 and last[s.USAGE_CACHE_WRITE] == 100
    assert last[s.USAGE_INPUT] == 310 and last[s.USAGE_OUTPUT] == 2
    assert last[s.PROVIDER] == "anthropic" and last[s.REQUEST_MODEL] == "claude-sonnet-4-6"


def test_exec_outside_any_call_is_a_top_level_turn(tmp_path):
    from callctx import setup

    rt = setup(tmp_path / "events.jsonl", session_id="chat-1", model=ScriptedModel({"*": ["hi!", "fine"]}))
    seen = []
    rt.on_call(seen.append)
    try:
        assert rt.exec("hello") == "hi!"
        assert rt.exec("how are you?") == "fine"
    finally:
        rt.close()
    first, second = seen
    assert first.context.segment("situation") is None  # no agentic call to be inside of
    tree = parse(second.tree)
    assert tree[0] == {"function": "turn", "output": "hi!"}  # the first turn, seen by the second
    assert tree[1]["input"] == {"prompt": "how are you?"}
    assert len(find(parse(rt.projection.session_tree("chat-1")), "turn")) == 2


def test_memory_prefetch_reaches_the_turn(runtime, calls, tmp_path):
    from callctx.components import FileMemory

    mem = FileMemory(tmp_path / "m")
    (mem.workspace / "notes").mkdir(parents=True)
    (mem.workspace / "notes" / "n.md").write_text("The user prefers tea over coffee.\n")
    runtime.config.base = runtime.config.base.replace(memory=mem)

    @agentic
    def drinks():
        return runtime.exec("What drink does the user prefer, tea or coffee?")

    drinks()
    assert "prefers tea" in calls[0].context.segment("memory_prefetch").text
    assert "empty so far" in calls[0].context.segment("memory_global").text


def test_exchanges_are_recorded_for_replay(runtime, calls):
    @agentic
    def f():
        return runtime.exec("go", tools=[word_count])

    script(runtime, f=[tool_call("word_count", text="x y"), "2"])
    f()
    assert isinstance(calls[1].body["messages"][1]["content"][0], dict)

    runtime.close()
    exchanges = rebuilt_calls(runtime.log_path)[1].exchanges
    assert isinstance(exchanges[1], ToolResults) and not isinstance(exchanges[0], UserNote)


def test_scripted_model_from_a_file_and_a_callable(runtime, tmp_path):
    path = tmp_path / "script.yaml"
    path.write_text("f:\n  - first\n  - second\n'*': anything else\n")
    runtime.config.model = ScriptedModel(path)

    @agentic
    def f():
        return runtime.exec("go")

    @agentic
    def g():
        return runtime.exec("go")

    assert [f(), f(), f(), g()] == ["first", "second", "second", "anything else"]
    runtime.config.model = ScriptedModel(lambda function, request: f"{function}:{len(request.body['messages'])}")
    assert g() == "g:1"


@pytest.mark.parametrize("kind", ["openai", "openai gpt-5.6", "openai-responses", "gemini"])
def test_other_real_clients_parse_replies(runtime, spans, kind):
    from helpers.sdk import GEMINI_TEXT, OPENAI_TEXT, RESPONSES_TEXT, gemini_client, openai_client, openai_tool_call

    from callctx.models.gemini import Gemini
    from callctx.models.openai import OpenAIChat, OpenAIResponses

    if kind == "openai":
        cap = Capture(openai_tool_call("word_count", {"text": "a b c"}), OPENAI_TEXT)
        runtime.config.model = OpenAIChat("gpt-4o-mini", client=openai_client(cap))
    elif kind == "openai gpt-5.6":  # GPT-5.6 reports its cache writes too
        details = {"cached_tokens": 4, "cache_write_tokens": 6}
        written = {**OPENAI_TEXT, "usage": {**OPENAI_TEXT["usage"], "prompt_tokens_details": details}}
        cap = Capture(openai_tool_call("word_count", {"text": "a b c"}), written)
        runtime.config.model = OpenAIChat("gpt-5.6-sol", client=openai_client(cap))
    elif kind == "openai-responses":
        cap = Capture(RESPONSES_TEXT)
        runtime.config.model = OpenAIResponses("gpt-4o-mini", client=openai_client(cap))
    else:
        cap = Capture(GEMINI_TEXT)
        runtime.config.model = Gemini("gemini-2.5-flash", client=gemini_client(cap))

    @agentic
    def ask():
        return runtime.exec("hello", tools=[word_count])

    assert ask() == "Hello!"
    if kind == "openai":
        assert cap.bodies()[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    chat = [sp for sp in spans.get_finished_spans() if sp.name.startswith("chat ")][-1]
    assert chat.attributes[s.USAGE_CACHE_READ] == 4 and chat.attributes[s.USAGE_OUTPUT] == 2
    if kind == "openai gpt-5.6":  # the tool result that ends the loop carries a breakpoint
        first, second = cap.bodies()
        assert first["prompt_cache_options"] == second["prompt_cache_options"] == {"mode": "explicit"}
        assert first["prompt_cache_key"] == second["prompt_cache_key"]
        assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": [
            {"type": "text", "text": "3", "prompt_cache_breakpoint": {"mode": "explicit"}}]}  # fmt: skip
        assert chat.attributes[s.USAGE_CACHE_WRITE] == 6


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("openai", "[Execution guidance (openai)]"),
        ("anthropic", None),  # Claude's tool use is native: no extra guidance
        ("gemini", "[Execution guidance (google)]"),
    ],
)
def test_each_provider_gets_its_guidance_block(tmp_path, client, expected):
    from callctx.models.anthropic import AnthropicMessages
    from callctx.models.gemini import Gemini
    from callctx.models.openai import OpenAIChat

    model = {"openai": lambda: OpenAIChat("gpt-4o-mini", client=object()),
             "anthropic": lambda: AnthropicMessages("claude-sonnet-4-5", client=object()),
             "gemini": lambda: Gemini("gemini-2.5-flash", client=object())}[client]()  # fmt: skip
    from callctx.components import assemble

    rt = setup(tmp_path / "e.jsonl")
    try:
        ctx = rt.config.base.replace(provider=model.provider, model=model.params.model)
        block = assemble(ctx, rt.config.registry).segment("model_guidance")
    finally:
        rt.close()
    if expected is None:
        assert block is None
    else:
        assert expected in block.text


def test_cwd_is_always_shown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rt = setup(tmp_path / "e.jsonl")
    other = setup(tmp_path / "f.jsonl", cwd=tmp_path / "elsewhere")
    try:
        calls = []
        rt.on_call(calls.append)
        rt.exec("hello")
        assert f"<cwd>{tmp_path.resolve()}</cwd>" in calls[0].context.system
        assert other.config.base.cwd == (tmp_path / "elsewhere").resolve()
    finally:
        rt.close()
        other.close()

"""Async agents: ``await aexec`` from async agentic functions, sibling tasks with their own
call paths, concurrent tool calls, streaming, and the same records as ``exec``."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from helpers.trees import find, parse

from callctx import Agent, ScriptedModel, agentic, setup, tool_call
from callctx.projection import Projection


def test_four_sibling_tasks_awaiting_aexec_keep_their_paths(tmp_path):
    rt = setup(tmp_path / "e.jsonl", model=ScriptedModel({"study": "notes", "survey": "done"}))
    seen = []
    rt.on_call(seen.append)

    @agentic
    async def study(topic: str) -> str:
        await asyncio.sleep(0)  # yield to the siblings: they interleave
        return await rt.aexec(f"Study {topic}.")

    @agentic
    async def survey() -> str:
        results = await asyncio.gather(*(study(t) for t in ("a", "b", "c", "d")))
        assert results == ["notes"] * 4
        return await rt.aexec("Summarize.")

    try:
        assert asyncio.run(survey()) == "done"
    finally:
        rt.close()
    studies = [c for c in seen if c.function == "study"]
    assert len(studies) == 4
    for call in studies:
        assert "Call path: survey → study" in call.context.turn
        here = [line for line in call.tree.splitlines() if "# you are here" in line]
        assert len(here) == 1  # each sees itself once, under survey, whatever its siblings did
    final = parse(rt.projection.session_tree(rt.projection.sessions()[0]))
    assert len(find(final, "study")) == 4
    replayed = Projection.from_log(tmp_path / "e.jsonl")  # recording and replay as for exec
    key = replayed.sessions()[0]
    assert replayed.session_tree(key) == rt.projection.session_tree(key)


def test_tool_calls_of_one_turn_run_concurrently(tmp_path):
    both = threading.Barrier(2, timeout=30)  # each tool waits for the other: only concurrency passes

    def slow_sync(x: int) -> int:
        """Wait for the other tool, then answer."""
        both.wait()
        return x * 2

    async def slow_async(x: int) -> int:
        """Answer from async code."""
        await asyncio.to_thread(both.wait)
        return x + 1

    rt = setup(
        tmp_path / "e.jsonl",
        model=ScriptedModel({"work": [{"tool_calls": [{"name": "slow_sync", "arguments": {"x": 2}},
                                                      {"name": "slow_async", "arguments": {"x": 2}}]}, "ok"]}),
    )  # fmt: skip
    seen = []
    rt.on_call(seen.append)

    @agentic
    async def work():
        return await rt.aexec("go", tools=[slow_sync, slow_async])

    try:
        assert asyncio.run(work()) == "ok"
    finally:
        rt.close()
    results = seen[-1].exchanges[-1].results
    assert [(r.name, r.content, r.is_error) for r in results] == [("slow_sync", "4", False), ("slow_async", "3", False)]


def test_exec_inside_a_running_loop_points_to_aexec(runtime):
    @agentic
    async def f():
        return runtime.exec("hi")

    with pytest.raises(RuntimeError, match="aexec"):
        asyncio.run(f())


ANSWER = "The tree is the program's own call stack, folded from its spans."


def _explain(tmp_path, mode: str) -> tuple[dict, list[str]]:
    rt = setup(tmp_path / f"{mode}.jsonl", model=ScriptedModel({"explain": ANSWER}), session_id="s")
    seen, pieces = [], []
    rt.on_call(seen.append)

    @agentic
    def explain():
        return rt.exec("Explain.", stream=pieces.append if mode == "stream" else None)

    @agentic(name="explain")
    async def aexplain():
        async def collect(text):
            pieces.append(text)

        return await rt.aexec("Explain.", stream=collect)

    try:
        out = asyncio.run(aexplain()) if mode == "astream" else explain()
    finally:
        rt.close()
    assert out == ANSWER
    return seen[0].body, pieces


def test_a_streamed_call_is_recorded_as_a_plain_one(tmp_path):
    plain, none = _explain(tmp_path, "plain")
    streamed, pieces = _explain(tmp_path, "stream")
    astreamed, apieces = _explain(tmp_path, "astream")
    assert none == []
    assert len(pieces) > 3 and "".join(pieces) == ANSWER  # delivered as it arrived, in pieces
    assert "".join(apieces) == ANSWER
    assert plain == streamed == astreamed  # the request recorded is the same


def test_agent_aexec_with_an_async_tool(tmp_path):
    async def lookup(word: str) -> str:
        """Look a word up."""
        await asyncio.sleep(0)
        return f"{word}: a definition"

    class Reader(Agent):
        """You read."""

        tools = (lookup,)

        @agentic
        async def read(self, word: str) -> str:
            return await self.aexec(f"Define {word}.")

    rt = setup(tmp_path / "e.jsonl", model=ScriptedModel({"read": [tool_call("lookup", word="trace"), "a span tree"]}))
    try:
        assert asyncio.run(Reader(runtime=rt).read("trace")) == "a span tree"
    finally:
        rt.close()


def _sse(events: list[tuple[str | None, dict]]) -> bytes:
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


OPENAI_STREAM = [(None, {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": piece},
                                      "finish_reason": None}]}) for piece in ("Hel", "lo, ", "world!")] + [
    (None, {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    (None, {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini", "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12,
                      "prompt_tokens_details": {"cached_tokens": 4}}}),
]  # fmt: skip

ANTHROPIC_STREAM = [
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-6",
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 1, "cache_read_input_tokens": 4,
                  "cache_creation_input_tokens": 0}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": piece}}) for piece in ("Hel", "lo, ", "world!")],
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 3}}),
    ("message_stop", {"type": "message_stop"}),
]  # fmt: skip


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_providers_stream_and_record_the_same_request(tmp_path, provider):
    """Against the official SDK on a transport that answers with the provider's own event
    stream: the text arrives in its deltas, and the request recorded equals the plain one."""
    import httpx2
    from helpers.sdk import ANTHROPIC_TEXT, OPENAI_TEXT

    from callctx.models.anthropic import AnthropicMessages
    from callctx.models.openai import OpenAIChat

    sent = []

    def handler(request):
        body = json.loads(request.content)
        sent.append(body)
        if body.get("stream"):
            events = OPENAI_STREAM if provider == "openai" else ANTHROPIC_STREAM
            return httpx2.Response(200, content=_sse(events), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=OPENAI_TEXT if provider == "openai" else ANTHROPIC_TEXT)

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    if provider == "openai":
        import openai

        model = OpenAIChat("gpt-4o-mini", client=openai.OpenAI(api_key="sk-test", max_retries=0, http_client=http))
    else:
        import anthropic

        model = AnthropicMessages(
            "claude-sonnet-4-6", client=anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=http)
        )
    records, pieces = [], []
    for streamed in (True, False):  # the same call twice, in two runs: streamed, then plain
        rt = setup(tmp_path / f"{streamed}.jsonl", model=model, session_id="s")
        rt.on_call(records.append)

        @agentic
        def greet():
            return rt.exec("Say hello.", stream=pieces.append if streamed else None)  # noqa: B023

        try:
            text = greet()
        finally:
            rt.close()
        if streamed:
            assert text == "Hello, world!"
    assert pieces == ["Hel", "lo, ", "world!"]  # delivered as the deltas arrived
    streamed_call, plain_call = records
    assert streamed_call.reply.usage.cache_read == 4 and streamed_call.reply.usage.output == 3
    assert streamed_call.body == plain_call.body  # the request recorded is the same as without streaming
    wire_streamed, wire_plain = sent
    assert wire_streamed.pop("stream") is True
    wire_streamed.pop("stream_options", None)
    assert wire_streamed == wire_plain == streamed_call.body  # and it is what went over the wire


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_aexec_goes_through_the_providers_async_client(tmp_path, provider):
    import httpx2
    from helpers.sdk import ANTHROPIC_TEXT, OPENAI_TEXT

    from callctx.models.anthropic import AnthropicMessages
    from callctx.models.openai import OpenAIChat

    sent = []

    def handler(request):
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=OPENAI_TEXT if provider == "openai" else ANTHROPIC_TEXT)

    refuse = httpx2.Client(transport=httpx2.MockTransport(lambda r: pytest.fail("the blocking client was used")))
    async_http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    if provider == "openai":
        import openai

        model = OpenAIChat(
            "gpt-4o-mini",
            client=openai.OpenAI(api_key="sk-test", max_retries=0, http_client=refuse),
            async_client=openai.AsyncOpenAI(api_key="sk-test", max_retries=0, http_client=async_http),
        )
    else:
        import anthropic

        model = AnthropicMessages(
            "claude-sonnet-4-6",
            client=anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=refuse),
            async_client=anthropic.AsyncAnthropic(api_key="sk-ant-test", max_retries=0, http_client=async_http),
        )
    rt = setup(tmp_path / "e.jsonl", model=model)
    seen = []
    rt.on_call(seen.append)

    @agentic
    async def hello():
        return await rt.aexec("Say hello.")

    try:
        assert asyncio.run(hello()) == "Hello!"
    finally:
        rt.close()
    assert sent == [seen[0].body]  # the request the async client sent is the one recorded

"""Async agents: ``await aexec`` from async agentic functions, sibling tasks with their own
call paths, concurrent tool calls, streaming, and the same records as ``exec``."""

from __future__ import annotations

import asyncio
import threading

import pytest
from conftest import find, parse

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

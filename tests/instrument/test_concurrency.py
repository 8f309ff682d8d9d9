"""Parallel siblings (asyncio tasks, threads) each see their own chain; the tree stays whole."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from helpers.trees import find, here_line, parse

from callctx import agentic, carry


def _chain_of_here(tree_text: str) -> list[dict]:
    """The running nodes from the root down to the one marked ``# you are here``."""
    tree = parse(tree_text)
    chain = []
    items = tree
    while True:
        running = [n for n in items if n.get("status") == "running" and "input" in n]
        if not running:
            return chain
        assert len(running) == 1, running  # siblings running in parallel show without input
        chain.append(running[0])
        items = running[0].get("children", [])


def test_asyncio_gather_of_100_nested_tasks(runtime):
    seen: dict[int, str] = {}

    @agentic
    async def leaf(task: int, step: int) -> str:
        await asyncio.sleep(0.001 * (task % 5))
        seen[task * 10 + step] = runtime.call_tree()
        await asyncio.sleep(0)
        return f"{task}.{step}"

    @agentic
    async def branch(task: int) -> list[str]:
        out = []
        for step in range(3):
            out.append(await leaf(task, step))
        return out

    @agentic
    async def fan_out(n: int) -> int:
        results = await asyncio.gather(*(branch(i) for i in range(n)))
        return len(results)

    assert asyncio.run(fan_out(100)) == 100
    assert len(seen) == 300
    for key, text in seen.items():
        task, step = divmod(key, 10)
        chain = _chain_of_here(text)
        assert [n["function"] for n in chain] == ["fan_out", "branch", "leaf"]
        assert chain[1]["input"] == {"task": task}
        assert chain[2]["input"] == {"task": task, "step": step}
        assert "leaf" in here_line(text) or "status: running  # you are here" in here_line(text)
        mine = [c for c in chain[1]["children"] if c["function"] == "leaf"]
        assert len(mine) == step + 1  # its own earlier steps, not another task's

    final = parse(runtime.projection.session_tree(runtime.projection.sessions()[0]))
    branches = final[0]["children"]
    assert len(branches) == 100
    assert all(len(b["children"]) == 3 for b in branches)


def test_threads_with_carry(runtime):
    seen: dict[tuple[int, int], str] = {}
    lock = threading.Lock()

    @agentic
    def step(worker: int, i: int) -> int:
        text = runtime.call_tree()
        with lock:
            seen[(worker, i)] = text
        return i

    @agentic
    def worker(w: int) -> int:
        return sum(step(w, i) for i in range(25))

    @agentic
    def pool(n: int) -> list[int]:
        with ThreadPoolExecutor(max_workers=n) as ex:
            return list(ex.map(carry(worker), range(n)))

    assert pool(8) == [300] * 8
    assert len(seen) == 200
    for (w, i), text in seen.items():
        chain = _chain_of_here(text)
        assert [n["function"] for n in chain] == ["pool", "worker", "step"]
        assert chain[1]["input"] == {"w": w} and chain[2]["input"] == {"worker": w, "i": i}
        assert len(chain[1]["children"]) == i + 1
    final = parse(runtime.projection.session_tree(runtime.projection.sessions()[0]))
    assert len(find(final, "worker")) == 8 and len(find(final, "step")) == 200


def test_threads_without_carry_start_their_own_trees(runtime):
    @agentic
    def lonely() -> str:
        return runtime.call_tree()

    @agentic
    def parent() -> str:
        with ThreadPoolExecutor(max_workers=1) as ex:
            return ex.submit(lonely).result()

    text = parent()
    assert parse(text)[0]["function"] == "lonely"  # no context in the thread: a new root


def test_a_thread_without_carry_is_named_once(runtime, caplog, monkeypatch):
    from callctx.instrument import threads

    monkeypatch.setattr(threads, "_warned", False)

    @agentic
    def lonely() -> str:
        return "alone"

    @agentic
    def parent(carried: bool) -> list[str]:
        with ThreadPoolExecutor(max_workers=2) as ex:
            return [ex.submit(carry(lonely) if carried else lonely).result() for _ in range(3)]

    def alone_in_a_thread() -> str:  # no call is running anywhere: a thread's own root is fine
        return lonely()

    with caplog.at_level("WARNING", logger="callctx.instrument.threads"):
        with ThreadPoolExecutor(max_workers=1) as ex:
            assert ex.submit(alone_in_a_thread).result() == "alone"
        assert parent(True) == ["alone"] * 3
        assert not caplog.records
        assert parent(False) == ["alone"] * 3
        lonely()  # in the main thread, with nothing around it: no warning either
    (record,) = caplog.records
    assert "'invoke_agent lonely'" in record.getMessage() and "callctx.carry(fn)" in record.getMessage()


def test_asyncio_to_thread_carries_the_call(runtime):
    @agentic
    def blocking(n: int = 1) -> str:
        return runtime.call_tree()

    @agentic
    async def parent(job: str) -> str:
        return await asyncio.to_thread(blocking, 2)

    chain = _chain_of_here(asyncio.run(parent("x")))
    assert [n["function"] for n in chain] == ["parent", "blocking"]

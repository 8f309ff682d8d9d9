"""MCP servers' tools through callctx.engine.mcp: a real server (tests/mcp_server.py) over stdio and
streamable HTTP, its tools in the runtime's tool loop, and a server that dies mid-session.

Timeouts here only guard against hangs; nothing waits by sleeping."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from callctx import ScriptedModel, agentic, setup, tool_call
from callctx.components.wire.exchange import ToolResults
from callctx.engine.mcp import McpServer, McpTool, McpToolError
from callctx.projection import read_log
from callctx.projection.events import SpanStarted

SERVER = Path(__file__).parents[1] / "helpers" / "mcp_server.py"
NAMES = ["add", "die", "echo", "fail", "hang", "pid"]
PROMPT = 5.0  # seconds: what "promptly" means for a failure (a hang would take `timeout`, 20s)


def stdio(**kw) -> McpServer:
    return McpServer.stdio([sys.executable, str(SERVER)], name="test", timeout=20.0, **kw)


@pytest.fixture
def server():
    s = stdio()
    yield s
    s.close()


def test_tools_are_listed_sorted_with_their_schemas(server):
    tools = server.tools()
    assert [t.name for t in tools] == NAMES
    add = tools[0]
    assert isinstance(add, McpTool) and add.args is None
    assert add.spec.description == "Add two integers."
    assert add.spec.parameters["properties"].keys() == {"a", "b"}
    assert add.spec.parameters["properties"]["a"]["type"] == "integer"
    assert add.spec.parameters["required"] == ["a", "b"]
    again = server.tools()
    assert again == tools and {*again} == {*tools}  # stable: equal and hashable across listings
    assert [t.spec for t in again] == [t.spec for t in tools]


def test_calls_return_text(server):
    assert server.start() is server.start()  # idempotent
    assert server.call("add", {"a": 2, "b": 3}) == "5"
    echo = next(t for t in server.tools() if t.name == "echo")
    assert echo.call({"text": "héllo\nworld"}) == "héllo\nworld"  # Tool.call passes the dict as given


def test_tool_errors_raise_mcp_tool_error(server):
    with pytest.raises(McpToolError, match="no good reason"):
        server.call("fail", {"reason": "no good reason"})
    with pytest.raises(McpToolError, match="nosuch"):
        server.call("nosuch", {})
    assert server.call("add", {"a": 1, "b": 1}) == "2"  # the connection survives tool errors


def test_a_request_that_times_out_keeps_the_connection(server):
    server.start()
    server.timeout = 0.5  # the request's own timeout (connecting had the full 20s)
    with pytest.raises(McpToolError, match=r"no answer to tools/call hang within 0.5s"):
        server.call("hang")
    server.timeout = 20.0
    assert server.call("add", {"a": 2, "b": 3}) == "5"


def test_a_dead_server_fails_promptly_and_stays_dead_without_reconnect():
    s = stdio(reconnect=False)
    try:
        assert s.call("add", {"a": 2, "b": 3}) == "5"
        started = time.monotonic()
        with pytest.raises(McpToolError, match="MCP server test is not reachable"):
            s.call("die")
        with pytest.raises(McpToolError, match="MCP server test is not reachable"):
            s.call("add", {"a": 2, "b": 3})
        with pytest.raises(McpToolError, match="not reachable"):
            s.tools()
        assert time.monotonic() - started < PROMPT
    finally:
        s.close()
        s.close()  # idempotent
    with pytest.raises(McpToolError, match="closed"):
        s.call("add", {"a": 1, "b": 2})


def test_the_next_call_after_a_crash_reconnects_once(server):
    first = server.call("pid")
    with pytest.raises(McpToolError, match="not reachable"):
        server.call("die")
    assert server.call("add", {"a": 2, "b": 3}) == "5"  # a fresh server process
    assert server.call("pid") != first


def test_a_server_that_cannot_start_is_reported_not_hung():
    s = McpServer.stdio([sys.executable, str(SERVER), "crash_on_start"], name="broken", timeout=20.0)
    started = time.monotonic()
    try:
        with pytest.raises(McpToolError, match="MCP server broken is not reachable"):
            s.start()
        with pytest.raises(McpToolError, match="not reachable"):
            s.tools()
    finally:
        s.close()
    assert time.monotonic() - started < 2 * PROMPT


def test_a_missing_program_is_reported():
    s = McpServer.stdio(["/nonexistent/mcp-server"], timeout=20.0)
    try:
        with pytest.raises(McpToolError, match="mcp-server is not reachable"):
            s.tools()
    finally:
        s.close()


def test_concurrent_calls_from_threads(server):
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = server.call("add", {"a": i, "b": 1000})
        except Exception as e:  # noqa: BLE001 - collected for the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert results == {i: str(i + 1000) for i in range(16)}


def test_close_without_start_and_twice():
    s = stdio()
    s.close()
    s.close()
    with pytest.raises(McpToolError, match="closed"):
        s.tools()


def test_streamable_http():
    import uvicorn
    from helpers.mcp_server import server as app_server

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # connections queue here until uvicorn accepts them: no waiting for startup
    port = sock.getsockname()[1]
    config = uvicorn.Config(app_server.streamable_http_app(), log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    s = McpServer.http(f"http://127.0.0.1:{port}/mcp", headers={"X-Test": "1"}, timeout=20.0)
    try:
        assert [t.name for t in s.tools()] == NAMES
        assert s.call("add", {"a": 2, "b": 3}) == "5"
        with pytest.raises(McpToolError, match="bad input"):
            s.call("fail", {"reason": "bad input"})
    finally:
        s.close()
        web.should_exit = True
        thread.join(20)
        sock.close()


def test_end_to_end_through_the_runtime(tmp_path):
    log = tmp_path / "events.jsonl"
    script = {
        "solve": [tool_call("add", a=2, b=3), "five"],
        "crash": [tool_call("die"), tool_call("add", a=1, b=1), "ok"],
    }
    rt = setup(log, model=ScriptedModel(script))
    seen = []
    rt.on_call(seen.append)
    server = stdio(reconnect=False)
    try:
        tools = server.tools()

        @agentic
        def solve():
            return rt.exec("add them", tools=tools)

        @agentic
        def crash():
            return rt.exec("break it", tools=tools)

        assert solve() == "five"
        first, second = seen
        assert [t["name"] for t in first.context.tools] == NAMES  # the tools block lists the MCP tools
        assert first.context.tools[0]["parameters"]["properties"]["a"]["type"] == "integer"
        (results,) = [e for e in second.exchanges if isinstance(e, ToolResults)]
        (result,) = results.results
        assert (result.name, result.content, result.is_error) == ("add", "5", False)
        assert '"5"' in json.dumps(second.body)  # the result went to the model

        started = time.monotonic()
        assert crash() == "ok"  # the agent carries on past the dead server
        assert time.monotonic() - started < PROMPT
        last = seen[-1]
        died, dead = [r for e in last.exchanges if isinstance(e, ToolResults) for r in e.results]
        assert died.name == "die" and died.is_error and "not reachable" in died.content
        assert dead.name == "add" and dead.is_error and "MCP server test is not reachable" in dead.content
    finally:
        server.close()
        rt.close()

    records = list(read_log(log))
    starts = [r for r in records if isinstance(r, SpanStarted)]
    adds = [r for r in starts if r.name == "execute_tool add"]
    assert len(adds) == 2
    # the SDK's client span for the request nests under the tool's span (the caller's context is carried over)
    sends = [r for r in starts if r.name.startswith("MCP send tools/call")]
    assert all(r.parent_id in {a.span_id for a in starts if a.name.startswith("execute_tool")} for r in sends)

"""Tools the model reaches through the runtime itself: the deferred memory tools (listed by
name; loaded when called, their schema in the result, the tools block unchanged) and the
tools of MCP servers given to ``setup(mcp=...)`` or ``Agent.mcp``."""

from __future__ import annotations

import sys
from pathlib import Path

from callctx import Agent, FileMemory, ScriptedModel, agentic, setup, tool_call
from callctx.engine.mcp import McpServer

SERVER = Path(__file__).parents[1] / "helpers" / "mcp_server.py"


def test_a_deferred_memory_tool_loads_when_called(tmp_path):
    mem = FileMemory(tmp_path / "mem")
    script = {"remember": [tool_call("memory_write", path="notes/tea.md", text="The user prefers tea."),
                           tool_call("memory_read", path="notes/tea.md"), "saved"]}  # fmt: skip
    rt = setup(tmp_path / "e.jsonl", memory=mem, model=ScriptedModel(script))
    seen = []
    rt.on_call(seen.append)

    @agentic
    def remember():
        return rt.exec("Remember that the user prefers tea.")

    try:
        assert remember() == "saved"
    finally:
        rt.close()
    assert (mem.workspace / "notes" / "tea.md").read_text() == "The user prefers tea."
    first, second, third = seen
    assert "memory_write" in first.context.text  # listed in the deferred catalog ...
    assert not any(t["name"] == "memory_write" for t in first.context.tools)  # ... not in the tools block
    assert first.context.tools == third.context.tools  # loading one did not change the tools block
    write = second.exchanges[-1].results[0]
    assert not write.is_error and write.content.startswith("[memory_write loaded; its schema: ")
    read = third.exchanges[-1].results[0]
    assert read.content.startswith("[memory_read loaded") and read.content.endswith("The user prefers tea.")


def test_mcp_servers_given_to_setup_and_to_an_agent(tmp_path):
    server = McpServer.stdio([sys.executable, str(SERVER)], name="calc", timeout=20.0)
    rt = setup(tmp_path / "e.jsonl", mcp=[server],
               model=ScriptedModel({"solve": [tool_call("add", a=2, b=3), "five"],
                                    "shout": [tool_call("echo", text="hi"), "HI"]}))  # fmt: skip
    seen = []
    rt.on_call(seen.append)

    @agentic
    def solve():
        return rt.exec("Add 2 and 3.")

    class Shouter(Agent):
        """You shout."""

        mcp = (McpServer.stdio([sys.executable, str(SERVER)], name="echo", timeout=20.0),)

        @agentic
        def shout(self):
            return self.exec("Shout hi.")

    try:
        assert solve() == "five"
        assert Shouter(runtime=rt).shout() == "HI"
    finally:
        rt.close()
        Shouter.mcp[0].close()
    names = [t["name"] for t in seen[0].context.tools]
    assert names == sorted(names) and "add" in names  # listed in a stable order
    assert seen[1].exchanges[-1].results[0].content == "5"
    assert seen[3].exchanges[-1].results[0].content == "hi"

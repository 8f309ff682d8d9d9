"""A real MCP server over stdio, for tests/test_mcp.py: ``python tests/mcp_server.py``.

Written with the official SDK (``MCPServer``, formerly ``FastMCP``). ``die`` ends the process
at once, without answering, as a crash would; ``crash_on_start`` as an argument makes the
server exit before it speaks MCP at all.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and "crash_on_start" in sys.argv[1:]:
    os._exit(3)  # before the SDK loads: a server that dies at once

import anyio

try:
    from mcp.server.mcpserver import MCPServer as _Server  # mcp >= 2
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server
    from mcp.server.fastmcp.exceptions import ToolError

server = _Server("callctx-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fail, with the given reason."""
    raise ToolError(reason)  # a deliberate failure: its text reaches the client (a crash's would not)


@server.tool()
def pid() -> int:
    """The server's process id (tells a restarted server from the first one)."""
    return os.getpid()


@server.tool()
async def hang() -> str:
    """Never answer (until the client cancels the request)."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def die() -> str:
    """Exit the server process abruptly, without answering."""
    sys.stdout.flush()
    os._exit(1)


if __name__ == "__main__":
    server.run()

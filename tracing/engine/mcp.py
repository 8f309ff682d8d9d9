"""MCP servers' tools as callctx tools, through the official ``mcp`` client SDK.

``McpServer`` connects to one MCP server (a subprocess over stdio, or a streamable HTTP
endpoint) and offers its tools as callctx :class:`~callctx.engine.tools.Tool` s, usable from plain
synchronous code::

    server = McpServer.stdio(["uvx", "mcp-server-time"])
    rt.exec("What time is it in Tokyo?", tools=server.tools())
    server.close()

Needs the ``mcp`` extra (``pip install callctx[mcp]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import CancelledError as FutureCancelledError
from concurrent.futures import TimeoutError as FutureTimeoutError
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

import anyio
import mcp.shared.exceptions as _mcp_exceptions
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mcp_types

from callctx.components.inputs import ToolSpec
from callctx.engine.tools import Tool
from callctx.projection.errors import CallctxError

__all__ = ["McpServer", "McpTool", "McpToolError"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_MCPError: type[Exception] = getattr(_mcp_exceptions, "MCPError", None) or _mcp_exceptions.McpError  # type: ignore[attr-defined]  # 2.x / 1.x
_CONNECTION_CLOSED = -32000  # the JSON-RPC code the SDK gives requests cut off by a closed connection
_CLOSE_BUDGET = 10.0  # seconds close() waits for the transport to wind down (stdio: stdin, SIGTERM, SIGKILL)
_GUARD = 5.0  # seconds a caller waits past the request's own timeout before giving up on the loop itself

Transport = Callable[[], AbstractAsyncContextManager[Sequence[Any]]]


class McpToolError(CallctxError, RuntimeError):
    """An MCP tool call that did not give a result: the tool reported an error (``isError``),
    the server answered with a protocol error, or the server is not reachable (it died, the
    connection broke, it did not answer in time, or the ``McpServer`` is closed).

    Raised from a tool's ``fn``, it reaches the model as an error tool result (the runtime
    reports a failing tool to the model and never raises)."""


class McpTool(Tool):
    """A :class:`Tool` backed by an MCP server's tool (``args`` is None: the server validates
    the arguments). Equal and hashable by (server, tool name), so listings taken at different
    times compare equal when the tool did not change."""

    def __hash__(self) -> int:
        return hash(self.fn)


class _Call:
    """A tool's ``fn``: calls the tool on its server with the model's argument dict."""

    __slots__ = ("server", "tool")

    def __init__(self, server: McpServer, tool: str) -> None:
        self.server = server
        self.tool = tool

    def __call__(self, arguments: dict[str, Any]) -> str:
        return self.server.call(self.tool, arguments)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Call) and other.server is self.server and other.tool == self.tool

    def __hash__(self) -> int:
        return hash((id(self.server), self.tool))

    def __repr__(self) -> str:
        return f"<MCP tool {self.tool!r} of {self.server.name!r}>"


class _Connection:
    """One connected, initialized session. Its fields are only touched on the loop thread."""

    def __init__(self) -> None:
        self.session: ClientSession | None = None
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.broken: str | None = None  # why it cannot be used any more; None while it works

    def fail(self, cause: str) -> None:
        if self.broken is None:
            self.broken = cause


class McpServer:
    """A connection to one MCP server, for synchronous callers.

    Threading: the ``mcp`` SDK is asynchronous, so each ``McpServer`` runs a private asyncio
    event loop in a daemon thread (started by the first :meth:`start`, :meth:`tools` or
    :meth:`call`). That loop owns the transport and the ``ClientSession``; the public methods
    submit coroutines to it (``asyncio.run_coroutine_threadsafe``) and block the calling thread
    until the answer comes or the timeout runs out. All public methods are thread-safe: any
    number of threads may call tools at once, and their requests are multiplexed on the one
    session. The caller's contextvars (the current OpenTelemetry span, so the SDK's
    ``MCP send`` client span nests under the ``execute_tool`` span) are carried into each
    request. The public methods must not be called from the loop's own thread (the SDK's
    callbacks): they raise ``RuntimeError`` rather than deadlock.

    Errors: :meth:`tools` and :meth:`call` raise :class:`McpToolError` and nothing else for
    every failure (tool error, protocol error, unreachable server, timeout, closed), and never
    block longer than about twice ``timeout`` (one reconnection plus the request). When the
    server dies or the connection breaks, the call in flight fails promptly with "MCP server
    <name> is not reachable: ..."; the next call reconnects once (a fresh subprocess for stdio)
    when ``reconnect`` is true, and fails the same way without. A request that times out leaves
    the connection in place (a slow tool is not a dead server). :meth:`close` is idempotent and
    bounded; after it every call raises :class:`McpToolError`.
    """

    def __init__(self, transport: Transport, *, name: str, timeout: float = 30.0, reconnect: bool = True) -> None:
        """Use :meth:`stdio` or :meth:`http`; ``transport`` opens the SDK transport (an async
        context manager yielding the read and write streams first)."""
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.name = name
        self.timeout = float(timeout)
        self.reconnect = reconnect
        self._transport = transport
        self._lock = threading.Lock()  # guards starting the loop thread and closing
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # loop-thread state
        self._conn: _Connection | None = None
        self._connect_lock: asyncio.Lock | None = None

    # ------------------------------------------------------------------ constructors

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        timeout: float = 30.0,
        reconnect: bool = True,
        stderr: TextIO | None = None,
    ) -> McpServer:
        """A server run as a subprocess speaking MCP over its stdin/stdout.

        ``command`` is the program and its arguments; ``env`` is added to the SDK's small
        default environment (PATH, HOME, ...), not to this process's whole environment;
        ``stderr`` (a real file) receives the server's log, this process's stderr by default.
        The subprocess starts on :meth:`start` (or the first :meth:`tools` / :meth:`call`)."""
        if not command:
            raise ValueError("command must name a program")
        params = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=dict(env) if env is not None else None, cwd=cwd
        )

        def transport() -> AbstractAsyncContextManager[Sequence[Any]]:
            return stdio_client(params, errlog=stderr) if stderr is not None else stdio_client(params)

        return cls(transport, name=name or Path(command[0]).name, timeout=timeout, reconnect=reconnect)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        timeout: float = 30.0,
        reconnect: bool = True,
    ) -> McpServer:
        """A server at a streamable HTTP endpoint (``https://host/mcp``); ``headers`` go with
        every request (authorization, say)."""
        hdrs = dict(headers) if headers else None
        return cls(_http_transport(url, hdrs), name=name or url, timeout=timeout, reconnect=reconnect)

    # ------------------------------------------------------------------ public API

    def start(self) -> McpServer:
        """Connect and initialize the session, if not already connected (idempotent).

        Raises :class:`McpToolError` when the server cannot be reached."""
        self._run(self._ensure(), 2 * self.timeout)
        return self

    def tools(self) -> list[Tool]:
        """The server's tools, sorted by name (so the tools block is the same between calls).

        Each tool's spec is the MCP tool's name, description and input schema; calling it
        calls the tool on this server (see :meth:`call`). Lists afresh on each call (one round
        trip). Raises :class:`McpToolError` when the server is not reachable."""
        listed = self._run(self._list_tools(), 2 * self.timeout)
        out: list[Tool] = []
        for t in sorted(listed, key=lambda t: t.name):
            schema = _field(t, "input_schema", "inputSchema") or {"type": "object", "properties": {}}
            spec = ToolSpec(t.name, t.description or "", dict(schema))
            out.append(McpTool(spec, _Call(self, t.name), None))
        return out

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Call tool ``name`` with ``arguments``; returns the result as text.

        The text is the result's text contents joined with newlines (the structured content as
        JSON when there is no text). Raises :class:`McpToolError` with the tool's text when the
        result is an error, and when the server is not reachable or does not answer in time."""
        result = self._run(self._call_tool(name, dict(arguments or {})), 2 * self.timeout)
        text = _result_text(result)
        if _field(result, "is_error", "isError"):
            raise McpToolError(text or f"MCP tool {name} failed")
        return text

    def close(self) -> None:
        """Close the session, stop the server (stdio) and the loop thread. Idempotent; returns
        within about ten seconds even when the server does not stop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        try:
            fut.result(_CLOSE_BUDGET + 1)
        except (FutureTimeoutError, FutureCancelledError):
            fut.cancel()
            log.warning("callctx: MCP server %s did not shut down in time; abandoning it", self.name)
        except Exception:  # closing never raises
            log.debug("callctx: closing MCP server %s failed", self.name, exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(2.0)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> McpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpServer({self.name!r})"

    # ------------------------------------------------------------------ the loop thread

    def _loop_for_call(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise McpToolError(f"MCP server {self.name} is not reachable: the connection is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=_serve_forever, args=(loop,), name=f"mcp:{self.name}", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            if threading.current_thread() is self._thread:
                raise RuntimeError("McpServer methods cannot be called from its own event loop thread")
            return self._loop

    def _run(self, coro: Coroutine[Any, Any, _T], budget: float) -> _T:
        """Run ``coro`` on the loop, in the caller's context; wait at most ``budget`` (+ a guard)."""
        try:
            loop = self._loop_for_call()
        except BaseException:
            coro.close()
            raise
        ctx = contextvars.copy_context()
        fut = asyncio.run_coroutine_threadsafe(_in_context(coro, ctx), loop)
        try:
            return fut.result(budget + _GUARD)
        except (FutureTimeoutError, FutureCancelledError):
            fut.cancel()
            why = "the connection is closed" if self._closed else f"no answer within {budget:g}s"
            raise McpToolError(f"MCP server {self.name} is not reachable: {why}") from None

    async def _ensure(self) -> _Connection:
        """The live connection: connect on first use, reconnect once if it broke."""
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if self._closed:
                raise McpToolError(f"MCP server {self.name} is not reachable: the connection is closed")
            conn = self._conn
            if conn is not None and conn.broken is None:
                return conn
            if conn is not None:
                if not self.reconnect:
                    raise McpToolError(f"MCP server {self.name} is not reachable: {conn.broken}")
                log.info("callctx: MCP server %s: reconnecting (%s)", self.name, conn.broken)
                await self._stop(conn, min(self.timeout, _CLOSE_BUDGET))
            self._conn = conn = await self._connect()
            return conn

    async def _connect(self) -> _Connection:
        conn = _Connection()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # the connection outlives the request that opened it: run it in a context of its own
        conn.task = asyncio.get_running_loop().create_task(self._hold(conn, ready), context=contextvars.Context())
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeout + 1)
        except TimeoutError:
            conn.fail(f"no answer to initialize within {self.timeout:g}s")
        except Exception as e:  # noqa: BLE001 - reported below as "not reachable"
            conn.fail(_describe(e))
        if conn.broken is not None:
            await self._stop(conn, min(self.timeout, _CLOSE_BUDGET))
            raise McpToolError(f"MCP server {self.name} is not reachable: {conn.broken}")
        return conn

    async def _hold(self, conn: _Connection, ready: asyncio.Future[None]) -> None:
        """Open the transport and session, initialize, then hold them until ``conn.stop``.

        Runs as one task so the SDK's task groups and cancel scopes enter and exit in the same
        task, as anyio requires."""
        try:
            async with self._transport() as streams, ClientSession(streams[0], streams[1]) as session:
                with anyio.fail_after(self.timeout):
                    await session.initialize()
                conn.session = session
                if not ready.done():
                    ready.set_result(None)
                await conn.stop.wait()
        except BaseException as e:
            conn.fail(_describe(e))
            if not ready.done():
                ready.set_exception(McpToolError(conn.broken))
            if not isinstance(e, Exception):
                raise  # cancellation, exit
            log.debug("callctx: MCP server %s: connection ended", self.name, exc_info=True)
        finally:
            conn.fail("the connection ended")
            conn.session = None

    async def _stop(self, conn: _Connection, budget: float) -> None:
        conn.fail("the connection is closed")
        conn.stop.set()
        task = conn.task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), budget)
        except TimeoutError:
            task.cancel()
            await asyncio.wait({task}, timeout=2.0)
        except BaseException:  # noqa: BLE001 - the task's own failure is already recorded on conn
            pass

    async def _shutdown(self) -> None:
        lock = self._connect_lock
        locked = False
        if lock is not None:
            with contextlib.suppress(TimeoutError):  # a connect in progress: stop whatever is there anyway
                await asyncio.wait_for(lock.acquire(), _CLOSE_BUDGET / 2)
                locked = True
        try:
            conn, self._conn = self._conn, None
            if conn is not None:
                await self._stop(conn, _CLOSE_BUDGET / 2)
        finally:
            if locked and lock is not None:
                lock.release()
        # requests still waiting (on a connect, say) end now rather than when their timeout runs out
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=1.0)

    async def _request(self, what: str, send: Callable[[ClientSession], Coroutine[Any, Any, _T]]) -> _T:
        conn = await self._ensure()
        session = conn.session
        if session is None or conn.broken is not None:
            raise McpToolError(f"MCP server {self.name} is not reachable: {conn.broken or 'no session'}")
        try:
            with anyio.fail_after(self.timeout):
                return await send(session)
        except TimeoutError:
            raise McpToolError(
                f"MCP server {self.name} is not reachable: no answer to {what} within {self.timeout:g}s"
            ) from None
        except _MCPError as e:
            error = getattr(e, "error", None)
            if getattr(error, "code", None) == _CONNECTION_CLOSED:
                conn.fail(_describe(e))
                raise McpToolError(f"MCP server {self.name} is not reachable: {_describe(e)}") from None
            raise McpToolError(f"MCP server {self.name}: {what} failed: {e}") from None
        except McpToolError:
            raise
        except Exception as e:  # noqa: BLE001 - transport failures: the connection is gone
            conn.fail(_describe(e))
            raise McpToolError(f"MCP server {self.name} is not reachable: {_describe(e)}") from None

    async def _list_tools(self) -> list[Any]:
        async def listing(session: ClientSession) -> list[Any]:
            tools: list[Any] = []
            cursor: str | None = None
            for _ in range(1000):  # a server handing out cursors forever is not followed forever
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(page.tools)
                cursor = _field(page, "next_cursor", "nextCursor")
                if not cursor:
                    break
            return tools

        return await self._request("tools/list", listing)

    async def _call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self._request(f"tools/call {name}", lambda session: session.call_tool(name, arguments))


def _serve_forever(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        asyncio.set_event_loop(None)


async def _in_context(coro: Coroutine[Any, Any, _T], ctx: contextvars.Context) -> _T:
    """Await ``coro`` in a task running in ``ctx`` (the submitting thread's context)."""
    return await asyncio.get_running_loop().create_task(coro, context=ctx)


def _http_transport(url: str, headers: dict[str, str] | None) -> Transport:
    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:  # mcp < 1.24: the older name, which takes the headers itself
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]

        return lambda: streamablehttp_client(url, headers=headers)
    from mcp.shared._httpx_utils import create_mcp_http_client

    @asynccontextmanager
    async def transport() -> AsyncIterator[Sequence[Any]]:
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    return transport


def _field(obj: Any, name: str, legacy: str) -> Any:
    """A result field by its mcp 2.x (snake_case) or 1.x (camelCase) name."""
    value = getattr(obj, name, None)
    return getattr(obj, legacy, None) if value is None else value


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in getattr(result, "content", None) or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            parts.append(block.resource.text)
        elif kind == "resource_link":
            parts.append(f"[resource: {block.uri}]")
        elif kind is not None:
            parts.append(f"[{kind}: {getattr(block, 'mime_type', None) or getattr(block, 'mimeType', '')}]")
    if any(parts):
        return "\n".join(parts)
    structured = _field(result, "structured_content", "structuredContent")
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False, default=repr)
    return "\n".join(parts)


def _describe(e: BaseException) -> str:
    """A one-line cause, looking into exception groups (the SDK's task groups raise them)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    if isinstance(e, asyncio.CancelledError):
        return "the connection was cancelled"
    if isinstance(e, _MCPError) and getattr(getattr(e, "error", None), "code", None) == _CONNECTION_CLOSED:
        return "the connection closed (the server exited?)"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__

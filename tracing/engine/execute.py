"""``Runtime.exec``: one model call made from inside an agentic call, with its tool loop.

It assembles the context from the live call tree, translates it to the model's wire format,
records what was sent (content-addressed, in the log), calls the model inside a
``chat {model}`` span, runs the tools the model asks for, validates the output against the
schema (one retry that shows the model the error) and returns the value.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

import msgspec
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from callctx.components import assemble, record, wire
from callctx.components.context import Context
from callctx.components.doctext import first_paragraph
from callctx.components.inputs import AgentInfo, Attachment, Sealed, Turn
from callctx.components.memory import prefetch
from callctx.components.turn import for_view
from callctx.components.wire.exchange import AssistantTurn, Exchange, ToolResult, ToolResults, UserNote
from callctx.engine.config import Config
from callctx.engine.tools import Tool, as_tools, result_text
from callctx.instrument.decorator import TracedCall
from callctx.models.base import (
    AsyncModel,
    AsyncStreamingModel,
    Model,
    ModelError,
    ModelRequest,
    Reply,
    StreamingModel,
)
from callctx.projection import Projection, TreeView
from callctx.projection import schema as s
from callctx.projection.errors import CallctxError
from callctx.projection.events import Blob, encode, failure_line
from callctx.projection.log import EventLog
from callctx.projection.schema import BLOB_EVENT

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from callctx.instrument.agent import Agent


log = logging.getLogger(__name__)

ModelChoice = Literal["runtime", "agent", "exec"]
"""Who chose a call's model: the runtime's (``setup(model=)``), its agent's (``Agent.model``),
or the call's own (``exec(model=)``); recorded on the chat span as ``callctx.model_choice``."""
assert get_args(ModelChoice) == s.MODEL_CHOICES


class OutputValidationError(CallctxError, ValueError):
    """The model's output did not match the schema, even after one retry."""


@dataclass(frozen=True)
class CallRecord:
    """One model call, as observers see it (``Runtime.on_call``)."""

    index: int
    function: str | None
    span_id: str | None  # the agentic call it was made from
    chat_span_id: str
    context: Context
    body: dict[str, Any]
    reply: Reply | None
    error: BaseException | None = None
    exchanges: tuple[Exchange, ...] = ()  # the tool loop so far, sent after the turn

    @property
    def tree(self) -> str:
        """The call tree this call saw (YAML), as sent."""
        seg = self.context.segment("call_tree")
        if seg is None:
            return ""
        text = seg.text.strip("\n")
        return text.removeprefix("<call_tree>\n").removesuffix("</call_tree>")


class ExecHost(Protocol):
    """What a model call needs from the runtime it runs in (``Runtime`` is one)."""

    config: Config
    tracer: Tracer
    projection: Projection

    def current_span_id(self) -> str | None: ...

    def view(self, span_id: str, model: Model | None = None) -> TreeView: ...

    def model_of(self, spec: Model | str) -> Model: ...

    def start_span(self, name: str, attributes: dict[str, Any]) -> trace.Span: ...

    def next_call_index(self) -> int: ...

    def store_blobs(self, blobs: dict[str, str]) -> None: ...

    def texts_to_send(self, blobs: dict[str, str]) -> dict[str, str]: ...

    def sealed(self, key: str) -> tuple[Sealed, ...]: ...

    def seal(self, key: str, sent: Sealed) -> None: ...

    def deferred(self) -> dict[str, Tool]: ...

    def notify(self, call: CallRecord) -> None: ...


def agent_info(agent: Agent | None, default: AgentInfo) -> AgentInfo:
    if agent is None:
        return default
    return AgentInfo(
        name=agent.name,
        agent_id=agent.agent_id,
        description=first_paragraph(type(agent).__doc__) or default.description,
        inline_prompt=getattr(agent, "instructions", None) or default.inline_prompt,
    )


def execute(
    rt: ExecHost,
    prompt: str,
    *,
    schema: Any = None,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    position: str | None = None,
    output: str | None = None,
    attachments: Sequence[Attachment] = (),
    agent: Agent | None = None,
    stream: Callable[[str], None] | None = None,
    model: Model | str | None = None,
) -> Any:
    """One model call and its tool loop, blocking (see :func:`aexecute` for async code)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "exec() was called from a running event loop, where it would block the loop: "
            "use `await runtime.aexec(...)` (or `await self.aexec(...)` in an Agent) instead"
        )
    steps = _Steps(rt, prompt, schema, tools, position, output, attachments, agent, model)
    if steps.top_level:
        # Outside any agentic call: a top-level conversation turn, itself a call in the tree,
        # so the turns of a session see each other.
        with TracedCall("turn", {"prompt": prompt}, **{s.TURN: True}) as call:
            call.output = _drive(steps.run(), stream)
            return call.output
    return _drive(steps.run(), stream)


async def aexecute(
    rt: ExecHost,
    prompt: str,
    *,
    schema: Any = None,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    position: str | None = None,
    output: str | None = None,
    attachments: Sequence[Attachment] = (),
    agent: Agent | None = None,
    stream: Callable[[str], Any] | None = None,
    model: Model | str | None = None,
) -> Any:
    """:func:`execute` for async code: the model through its async client, the tool calls of
    one model turn concurrently (async tools awaited, sync ones in threads). What is recorded
    is the same as for ``execute``."""
    steps = _Steps(rt, prompt, schema, tools, position, output, attachments, agent, model)
    if steps.top_level:
        with TracedCall("turn", {"prompt": prompt}, **{s.TURN: True}) as call:
            call.output = await _adrive(steps.run(), stream)
            return call.output
    return await _adrive(steps.run(), stream)


class _Ask(msgspec.Struct, frozen=True):
    """A step asks the driver for the model's reply to ``request``."""

    model: Any
    request: ModelRequest


class _Run(msgspec.Struct, frozen=True):
    """A step asks the driver to run the tool calls of one model turn."""

    calls: list[Any]  # (ToolCall, Tool | None)
    tracer: Any


def _drive(steps: Any, stream: Callable[[str], None] | None) -> Any:
    """Run the steps of one exec, blocking: the model's client, then each tool in turn."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            ask = steps.throw(failure) if failure is not None else steps.send(answer)
        except StopIteration as done:
            return done.value
        failure = None
        try:
            if type(ask) is _Ask:
                answer = _complete(ask.model, ask.request, stream)
            else:
                answer = [_run_tool(ask.tracer, call, tool) for call, tool in ask.calls]
        except BaseException as e:  # noqa: BLE001 - handed back to the step that asked, which records it
            failure = e


async def _adrive(steps: Any, stream: Callable[[str], Any] | None) -> Any:
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            ask = steps.throw(failure) if failure is not None else steps.send(answer)
        except StopIteration as done:
            return done.value
        failure = None
        try:
            if type(ask) is _Ask:
                answer = await _acomplete(ask.model, ask.request, stream)
            else:
                answer = list(await asyncio.gather(*(_arun_tool(ask.tracer, c, t) for c, t in ask.calls)))
        except BaseException as e:  # noqa: BLE001
            failure = e


def _complete(model: Any, request: ModelRequest, stream: Callable[[str], None] | None) -> Reply:
    if stream is not None and isinstance(model, StreamingModel):
        return model.stream(request, stream)
    reply = model.complete(request)
    if stream is not None and reply.text:
        stream(reply.text)  # a client that cannot stream delivers the whole text at once
    return reply


async def _acomplete(model: Any, request: ModelRequest, stream: Callable[[str], Any] | None) -> Reply:
    if stream is not None and isinstance(model, AsyncStreamingModel):
        return await model.astream(request, stream)
    if stream is not None and isinstance(model, StreamingModel):
        # the provider streams through its blocking client: in a thread, each piece handed to
        # ``stream`` on this loop (awaited when it is a coroutine function), in order
        loop = asyncio.get_running_loop()
        pending: list[Any] = []

        def hand(text: str) -> None:
            if inspect.iscoroutinefunction(stream):
                pending.append(asyncio.run_coroutine_threadsafe(stream(text), loop))
            else:
                loop.call_soon_threadsafe(stream, text)

        reply = await asyncio.to_thread(model.stream, request, hand)
        for done in pending:
            await asyncio.wrap_future(done)
        await asyncio.sleep(0)  # let the pieces scheduled last run before the reply is returned
        return reply
    if isinstance(model, AsyncModel):
        reply = await model.acomplete(request)
    else:
        reply = await asyncio.to_thread(_complete, model, request, None)
    if stream is not None and reply.text:
        done = stream(reply.text)
        if inspect.isawaitable(done):
            await done
    return reply


class _Steps:
    """The steps of one exec, without IO: assemble the context, ask for the model's reply,
    run the tools it asks for, validate the output. A driver (:func:`_drive`, blocking, or
    :func:`_adrive`, async) does the asking: ``run()`` yields what it needs and receives it,
    so the logic exists once for both."""

    def __init__(
        self,
        rt: ExecHost,
        prompt: str,
        schema: Any,
        tools: Sequence[Any],
        position: str | None,
        output: str | None,
        attachments: Sequence[Attachment],
        agent: Agent | None,
        model: Model | str | None = None,
    ) -> None:
        self.rt = rt
        self.prompt, self.schema, self.tools = prompt, schema, tools
        self.position, self.output, self.attachments, self.agent = position, output, attachments, agent
        self.model, self.choice = choose_model(rt, model, agent)  # resolved before any span starts
        span_id = rt.current_span_id()
        self.caller = rt.projection.call_of(span_id) if span_id is not None else None  # the agentic call
        self.top_level = self.caller is None

    def run(self) -> Any:
        rt, prompt, schema, tools = self.rt, self.prompt, self.schema, self.tools
        position, output, attachments, agent = self.position, self.output, self.attachments, self.agent
        top_level = self.top_level
        cfg = rt.config
        caller = self.caller  # the agentic call it is made from
        if top_level:  # a top-level turn runs inside its own span, started since
            span_id = rt.current_span_id()
            caller = rt.projection.call_of(span_id) if span_id else None
        call_id = caller.span_id if caller is not None else None
        model, choice = self.model, self.choice
        view = rt.view(call_id, model) if call_id else None
        function = None if top_level or caller is None else caller.function
        # The agent's standing tools first (the same on every call: the tools section opens the
        # cached prefix), then this call's own; an agentic function is never offered to itself.
        standing = [*cfg.tools, *(getattr(agent, "tools", None) or ()), *_mcp_tools(getattr(agent, "mcp", None))]
        tool_list = as_tools(_unique([*standing, *tools]), exclude=function)
        offered = {t.name for t in tool_list}
        deferred = {k: v for k, v in rt.deferred().items() if k not in offered}  # by name only, until called
        loaded: set[str] = set()

        memory = cfg.base.memory
        recalled, failed = prefetch(memory, prompt) if memory is not None else (None, False)
        turn_inputs: dict[str, Any] = {
            "user_input": prompt,
            "attachments": list(attachments),
            "output_schema": _json_schema(schema) if schema is not None else None,
            "prefetch": recalled,
            "prefetch_failed": failed,
        }
        if view is not None and not top_level:
            turn = for_view(view, **turn_inputs)
            if position is not None or output is not None:
                turn = msgspec.structs.replace(
                    turn,
                    position=position if position is not None else turn.position,
                    output_contract=output if output is not None else turn.output_contract,
                )
        else:
            turn = Turn(**turn_inputs)
        base = cfg.base
        session = base.session.session_id or _trace_hex()
        ctx = base.replace(
            agent=agent_info(agent, base.agent),
            provider=model.provider,
            model=model.params.model,
            tools=tuple(t.spec for t in tool_list),
            call_tree=view,
            sealed=rt.sealed(session),
            turn=turn,
        )
        context = assemble(ctx, cfg.registry)
        tree = context.segment("call_tree")
        if tree is not None and tree.blocks and tree.breakpoint_block is not None:
            rt.seal(session, Sealed(tuple(tree.blocks), tree.breakpoint_block, tree.parent_block))
        call_path = " → ".join(turn.call_path) if turn.call_path else None

        exchanges: list[Exchange] = []
        retried = False
        for _ in range(cfg.max_tool_rounds + 1):
            reply = yield from _chat(rt, model, choice, context, exchanges, function, call_id, call_path)
            if reply.tool_calls:
                exchanges.append(AssistantTurn(reply.text, list(reply.tool_calls)))
                by_name = {**deferred, **{t.name: t for t in tool_list}}
                results = yield _Run([(c, by_name.get(c.name)) for c in reply.tool_calls], rt.tracer)
                exchanges.append(ToolResults([_loaded(r, deferred, loaded) for r in results]))
                continue
            text = reply.text or ""
            if schema is None:
                return text
            try:
                return _validate(text, schema)
            except (msgspec.ValidationError, msgspec.DecodeError) as e:
                if retried:
                    raise OutputValidationError(f"{function or 'turn'}: output does not match the schema: {e}") from e
                retried = True
                exchanges.append(AssistantTurn(text))
                exchanges.append(
                    UserNote(
                        f"Your output did not match the output schema: {e}. "
                        "Reply again with only the corrected JSON value, nothing else."
                    )
                )
        raise ModelError(model.provider, f"the tool loop did not finish in {cfg.max_tool_rounds} rounds")


def _loaded(result: ToolResult, deferred: dict[str, Tool], loaded: set[str]) -> ToolResult:
    """The first result of a deferred tool carries its schema: the model learns it where it
    costs no cache (the tail of the request), and the tools block stays as it was."""
    tool = deferred.get(result.name)
    if tool is None or result.name in loaded:
        return result
    loaded.add(result.name)
    schema = json.dumps(
        {"name": tool.name, "description": tool.spec.description, "parameters": tool.spec.parameters},
        sort_keys=True,
        ensure_ascii=False,
    )
    return msgspec.structs.replace(result, content=f"[{tool.name} loaded; its schema: {schema}]\n{result.content}")


def _mcp_tools(servers: Any) -> list[Tool]:
    """The tools of an agent's MCP servers (a server that cannot be reached offers none)."""
    out: list[Tool] = []
    for server in servers or ():
        try:
            out.extend(server.tools())
        except Exception as e:  # noqa: BLE001 - a dead server costs its tools, not the call
            log.warning("callctx: MCP server %s offers no tools this call: %s", getattr(server, "name", "?"), e)
    return out


def _unique(tools: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for t in tools:
        key = ("tool", t.name) if isinstance(t, Tool) else ("fn", id(getattr(t, "__func__", t)))
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _json_schema(schema: Any) -> dict[str, Any]:
    (ref,), defs = msgspec.json.schema_components([schema], ref_template="#/$defs/{name}")
    if "$ref" in ref:
        name = ref["$ref"].rsplit("/", 1)[-1]
        out = dict(defs.pop(name))
        if defs:
            out["$defs"] = defs
        return out
    if defs:
        ref = {**ref, "$defs": defs}
    return ref


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.S)


def _validate(text: str, schema: Any) -> Any:
    m = _FENCE.match(text)
    raw = m.group(1) if m else text.strip()
    if schema is str:
        return text
    try:
        return msgspec.json.decode(raw, type=schema)
    except msgspec.DecodeError:
        if raw and raw[0] not in '{["0123456789-tfn':  # a bare word for a str / Literal / Enum schema
            return msgspec.convert(raw, schema)
        raise


def choose_model(rt: ExecHost, model: Model | str | None, agent: Agent | None) -> tuple[Model, ModelChoice]:
    """The model a call asks, and who chose it: the call's own (``exec(model=)``), else its
    agent's (``Agent.model``), else the runtime's. ``provider:model`` specs are resolved once
    per runtime; ``ValueError`` for an unknown provider, as ``setup`` gives."""
    if model is not None:
        return rt.model_of(model), "exec"
    chosen = getattr(agent, "model", None)
    if chosen is not None:
        return rt.model_of(chosen), "agent"
    return rt.config.model, "runtime"


def _chat(
    rt: ExecHost,
    model: Model,
    choice: ModelChoice,
    context: Context,
    exchanges: list[Exchange],
    function: str | None,
    call_id: str | None,
    call_path: str | None,
) -> Any:  # a generator of steps returning the Reply
    params = model.params
    body = wire.build(model.wire, context, exchanges, params)
    manifest, blobs = record.record(context, exchanges, model.wire, params, body)
    rt.store_blobs(blobs)
    attrs: dict[str, Any] = {
        s.OPERATION: s.OP_CHAT,
        s.PROVIDER: model.provider,
        s.REQUEST_MODEL: params.model,
        s.SPAN_KIND: "LLM",
        s.CONTEXT: manifest,
    }
    if choice != "runtime":
        attrs[s.MODEL_CHOICE] = choice
    if function:
        attrs[s.FUNCTION] = function
    if call_path:
        attrs[s.CALL_PATH] = call_path
    if rt.config.capture_content:
        attrs.update(_content_attributes(context, exchanges))
    index = rt.next_call_index()
    span = rt.start_span(f"{s.OP_CHAT} {params.model}", attrs)
    for h, text in rt.texts_to_send(blobs).items():  # for receivers far from this log (callctx serve)
        span.add_event(BLOB_EVENT, {"hash": h, "text": text})
    reply: Reply | None = None
    try:
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            reply = yield _Ask(model, ModelRequest(body, function, context))
    except BaseException as e:
        span.record_exception(e)
        span.set_status(Status(StatusCode.ERROR, failure_line(e)))
        span.end()
        rt.notify(CallRecord(index, function, call_id, _hex(span), context, body, None, e, tuple(exchanges)))
        raise
    used = reply.usage
    end: dict[str, Any] = {
        key: value
        for key, value in ((s.USAGE_INPUT, used.input), (s.USAGE_OUTPUT, used.output),
                           (s.USAGE_CACHE_READ, used.cache_read), (s.USAGE_CACHE_WRITE, used.cache_write))
        if value is not None  # what the provider did not report is not written
    }  # fmt: skip
    if reply.model:
        end[s.RESPONSE_MODEL] = reply.model
    if reply.text is not None:
        end[s.OUTPUT_VALUE] = reply.text
        end[s.OUTPUT_MIME] = s.MIME_TEXT
    if reply.finish:
        end["gen_ai.response.finish_reasons"] = (str(reply.finish),)
    if rt.config.capture_content:
        end[s.OUTPUT_MESSAGES] = json.dumps([_message("assistant", reply.text, reply)], ensure_ascii=False)
    span.set_attributes(end)
    span.end()
    rt.notify(CallRecord(index, function, call_id, _hex(span), context, body, reply, None, tuple(exchanges)))
    return reply


def _trace_hex() -> str:
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x")


def _hex(span: trace.Span) -> str:
    return format(span.get_span_context().span_id, "016x")


def _tool_span(tracer: Any, call: Any) -> Any:
    attrs = {
        s.OPERATION: s.OP_EXECUTE_TOOL,
        s.TOOL_NAME: call.name,
        "gen_ai.tool.call.id": call.id,
        s.TOOL_ARGUMENTS: json.dumps(call.arguments, ensure_ascii=False),
        s.SPAN_KIND: "TOOL",
    }
    return tracer.start_as_current_span(
        f"{s.OP_EXECUTE_TOOL} {call.name}", attributes=attrs, record_exception=False, set_status_on_exception=False
    )


def _outcome(call: Any, error: BaseException | None, value: Any = None) -> tuple[str, bool]:
    """What the model is told: the result as text, or the failure (a failing tool is reported
    to the model, never raised into the agent)."""
    if error is None:
        return result_text(value), False
    if isinstance(error, msgspec.ValidationError):
        return f"invalid arguments for {call.name}: {error}", True
    return f"{type(error).__name__}: {error}", True


def _result(span: Any, call: Any, content: str, error: bool) -> ToolResult:
    span.set_attribute(s.TOOL_RESULT, content)
    if error:
        span.set_status(Status(StatusCode.ERROR, content.splitlines()[0] if content else "error"))
    return ToolResult(call.id, call.name, content, error)


def _run_tool(tracer: Any, call: Any, tool: Tool | None) -> ToolResult:
    with _tool_span(tracer, call) as span:
        if tool is None:
            return _result(span, call, f"no tool named {call.name!r} is available", True)
        try:
            value = tool.call(call.arguments)
            if inspect.iscoroutine(value):  # an async tool called from blocking code
                value = asyncio.run(value)
        except Exception as e:  # noqa: BLE001
            return _result(span, call, *_outcome(call, e))
        return _result(span, call, *_outcome(call, None, value))


async def _arun_tool(tracer: Any, call: Any, tool: Tool | None) -> ToolResult:
    with _tool_span(tracer, call) as span:
        if tool is None:
            return _result(span, call, f"no tool named {call.name!r} is available", True)
        try:
            if tool.is_async:
                value = await tool.call(call.arguments)
            else:
                value = await asyncio.to_thread(tool.call, call.arguments)  # carries the span along
        except Exception as e:  # noqa: BLE001
            return _result(span, call, *_outcome(call, e))
        return _result(span, call, *_outcome(call, None, value))


def _message(role: str, text: str | None, reply: Reply | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "content": text})
    if reply is not None:
        parts.extend(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
        )
    return {"role": role, "parts": parts}


def _content_attributes(context: Context, exchanges: list[Exchange]) -> dict[str, str]:
    """GenAI content attributes (only when content capture is on)."""
    system = [{"type": "text", "content": context.system}] if context.system else []
    user = _message("user", context.tree + context.turn)
    messages = [user]
    for e in exchanges:
        if isinstance(e, AssistantTurn):
            m = _message("assistant", e.text)
            m["parts"].extend(
                {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in e.tool_calls
            )
            messages.append(m)
        elif isinstance(e, ToolResults):
            messages.append(
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": r.id, "response": r.content} for r in e.results],
                }
            )
        elif isinstance(e, UserNote):
            messages.append(_message("user", e.text))
    return {
        s.SYSTEM_INSTRUCTIONS: json.dumps(system, ensure_ascii=False),
        s.INPUT_MESSAGES: json.dumps(messages, ensure_ascii=False),
    }


def write_blobs(log: EventLog, known: set[str], blobs: dict[str, str]) -> None:
    """Append the texts the log does not hold yet (callers hold the projection lock)."""
    for h, text in blobs.items():
        if h not in known:
            log.write(encode(Blob(h, text)))
            known.add(h)

"""``Runtime.exec``: one model call made from inside an agentic call, with its tool loop.

It assembles the context from the live call tree, translates it to the model's wire format,
records what was sent (content-addressed, in the log), calls the model inside a
``chat {model}`` span, runs the tools the model asks for, validates the output against the
schema (one retry that shows the model the error) and returns the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from callctx.components import assemble, record, wire
from callctx.components.context import Context
from callctx.components.ctx import AgentInfo, Attachment, Sealed, Turn
from callctx.components.doctext import first_paragraph
from callctx.components.memory import prefetch
from callctx.components.turn import for_view
from callctx.components.wire.exchange import AssistantTurn, Exchange, ToolResult, ToolResults, UserNote
from callctx.projection import Projection, TreeView
from callctx.projection import schema as s
from callctx.projection.events import Blob, encode
from callctx.projection.spans import BLOB_EVENT

from .config import Config
from .decorator import TracedCall
from .models.base import ModelError, ModelRequest, Reply
from .tools import Tool, as_tools, result_text

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from .agent import Agent


class OutputValidationError(ValueError):
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

    def view(self, span_id: str) -> TreeView: ...

    def next_call_index(self) -> int: ...

    def store_blobs(self, blobs: dict[str, str]) -> None: ...

    def texts_to_send(self, blobs: dict[str, str]) -> dict[str, str]: ...

    def sealed(self, key: str) -> tuple[Sealed, ...]: ...

    def seal(self, key: str, sent: Sealed) -> None: ...

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
) -> Any:
    caller = None
    span_id = rt.current_span_id()
    if span_id is not None:
        caller = rt.projection.call_of(span_id)  # the agentic call this model call is made from
    if caller is None:
        # Outside any agentic call: a top-level conversation turn, itself a call in the tree,
        # so the turns of a session see each other.
        with TracedCall("turn", {"prompt": prompt}, **{s.TURN: True}) as call:
            call.output = _run(rt, prompt, schema, tools, position, output, attachments, agent, top_level=True)
            return call.output
    return _run(rt, prompt, schema, tools, position, output, attachments, agent, top_level=False)


def _run(
    rt: ExecHost,
    prompt: str,
    schema: Any,
    tools: Sequence[Any],
    position: str | None,
    output: str | None,
    attachments: Sequence[Attachment],
    agent: Agent | None,
    *,
    top_level: bool,
) -> Any:
    cfg = rt.config
    span_id = rt.current_span_id()
    caller = rt.projection.call_of(span_id) if span_id else None  # the agentic call it is made from
    call_id = caller.span_id if caller is not None else None
    view = rt.view(call_id) if call_id else None
    function = None if top_level or caller is None else caller.function
    # The agent's standing tools first (the same on every call: the tools section opens the
    # cached prefix), then this call's own; an agentic function is never offered to itself.
    standing = [*cfg.tools, *(getattr(agent, "tools", None) or ())]
    tool_list = as_tools(_unique([*standing, *tools]), exclude=function)

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
    model = cfg.model
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
        rt.seal(session, Sealed(tuple(tree.blocks), tree.breakpoint_block))
    call_path = " → ".join(turn.call_path) if turn.call_path else None

    exchanges: list[Exchange] = []
    retried = False
    for _ in range(cfg.max_tool_rounds + 1):
        reply = _chat(rt, context, exchanges, function, call_id, call_path)
        if reply.tool_calls:
            exchanges.append(AssistantTurn(reply.text, list(reply.tool_calls)))
            exchanges.append(_run_tools(rt, reply, tool_list))
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


def _unique(tools: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for t in tools:
        key = getattr(t, "__func__", t)
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


def _chat(
    rt: ExecHost,
    context: Context,
    exchanges: list[Exchange],
    function: str | None,
    call_id: str | None,
    call_path: str | None,
) -> Reply:
    model = rt.config.model
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
    if function:
        attrs[s.FUNCTION] = function
    if call_path:
        attrs[s.CALL_PATH] = call_path
    if rt.config.capture_content:
        attrs.update(_content_attributes(context, exchanges))
    index = rt.next_call_index()
    span = rt.tracer.start_span(f"{s.OP_CHAT} {params.model}", attributes=attrs)
    for h, text in rt.texts_to_send(blobs).items():  # for receivers far from this log (callctx serve)
        span.add_event(BLOB_EVENT, {"hash": h, "text": text})
    reply: Reply | None = None
    try:
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            reply = model.complete(ModelRequest(body, function, context))
    except BaseException as e:
        span.record_exception(e)
        span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"))
        span.end()
        rt.notify(CallRecord(index, function, call_id, _hex(span), context, body, None, e, tuple(exchanges)))
        raise
    end: dict[str, Any] = {
        s.USAGE_INPUT: reply.usage.input,
        s.USAGE_OUTPUT: reply.usage.output,
        s.USAGE_CACHE_READ: reply.usage.cache_read,
        s.USAGE_CACHE_WRITE: reply.usage.cache_write,
    }
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


def _run_tools(rt: ExecHost, reply: Reply, tools: list[Tool]) -> ToolResults:
    by_name = {t.name: t for t in tools}
    results = []
    for call in reply.tool_calls:
        t = by_name.get(call.name)
        attrs = {
            s.OPERATION: s.OP_EXECUTE_TOOL,
            s.TOOL_NAME: call.name,
            "gen_ai.tool.call.id": call.id,
            s.TOOL_ARGUMENTS: json.dumps(call.arguments, ensure_ascii=False),
            s.SPAN_KIND: "TOOL",
        }
        with rt.tracer.start_as_current_span(
            f"{s.OP_EXECUTE_TOOL} {call.name}", attributes=attrs, record_exception=False, set_status_on_exception=False
        ) as span:
            if t is None:
                content, error = f"no tool named {call.name!r} is available", True
            else:
                try:
                    content, error = result_text(t.call(call.arguments)), False
                except msgspec.ValidationError as e:
                    content, error = f"invalid arguments for {call.name}: {e}", True
                except Exception as e:  # noqa: BLE001 - a failing tool is reported to the model, not raised
                    content, error = f"{type(e).__name__}: {e}", True
            span.set_attribute(s.TOOL_RESULT, content)
            if error:
                span.set_status(Status(StatusCode.ERROR, content.splitlines()[0] if content else "error"))
        results.append(ToolResult(call.id, call.name, content, error))
    return ToolResults(results)


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


def write_blobs(log: Any, known: set[str], blobs: dict[str, str]) -> None:
    """Append the texts the log does not hold yet (callers hold the projection lock)."""
    for h, text in blobs.items():
        if h not in known:
            log.write(encode(Blob(h, text)))
            known.add(h)

"""OpenAI Chat Completions and Responses, with the cache controls each model takes.

Every request carries a ``prompt_cache_key``: a hash of the identity and session blocks
(``blocks.session_key``), the same on every call of an agent's session, so the requests that
share a prefix are routed to the same cache (OpenAI routes by a hash of the first tokens and
that key).

Models before GPT-5.6 cache by token prefix automatically: no markers, the system part goes
out as one string (Chat: a ``system`` message; Responses: ``instructions``), the call tree and
the turn as two text parts.

GPT-5.6 and later (the ``breakpoint_from`` rule of the cache rules table) cache at the
breakpoints a request marks: the system part goes out as a ``developer`` message of text
parts, one per stable stretch, the call tree as its blocks, and ``prompt_cache_breakpoint``
(``{"mode": "explicit"}``) closes the parts ``blocks.plan`` marks with the ``openai`` marking,
at most four: the request names ``prompt_cache_options`` ``{"mode": "explicit"}`` so OpenAI
adds no implicit breakpoint of its own and writes every mark. Tool results (and the runtime's
notes) go out as text parts too, so a part keeps the same shape whether or not a mark closes
it. The model's own messages are never marked.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from ..cache_rules import breakpoint_model
from ..context import Context
from .blocks import Block, Plan, plan, session_key, system_text, tree_text, turn_text
from .exchange import AssistantTurn, Exchange, ToolResults, UserNote
from .params import Params

TextKind = Literal["text", "input_text"]  # a text part's type: Chat's, then Responses'
BREAKPOINT: dict[str, str] = {"mode": "explicit"}
EXPLICIT: dict[str, str] = {"mode": "explicit"}  # prompt_cache_options: no implicit breakpoint


def _text(kind: TextKind, text: str, cache: bool = False) -> dict[str, Any]:
    part: dict[str, Any] = {"type": kind, "text": text}
    if cache:
        part["prompt_cache_breakpoint"] = dict(BREAKPOINT)
    return part


def _user_parts(context: Context, kind: TextKind, tree: list[Block] | None) -> list[dict[str, Any]]:
    """The first user message: the call tree (as one part, or as its marked blocks), the turn,
    then the turn's images."""
    if tree is None:
        parts = [_text(kind, t) for t in (tree_text(context), turn_text(context)) if t]
    else:
        parts = [_text(kind, b.text, b.cache) for b in tree]
        turn = turn_text(context)
        if turn:
            parts.append(_text(kind, turn))
    for a in context.media:
        data = base64.b64encode(a.data or b"").decode()
        if kind == "text":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{a.mime};base64,{data}"}})
        else:
            parts.append({"type": "input_image", "image_url": f"data:{a.mime};base64,{data}", "detail": "auto"})
    return parts


def _marks(context: Context, exchanges: list[Exchange], params: Params) -> Plan | None:
    """Where this request's breakpoints go, for a model that caches at breakpoints; None for
    one that caches by prefix."""
    return plan(context, exchanges, "openai") if breakpoint_model(params.model) else None


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as OpenAI describes a function (Chat nests it under ``function``, Responses
    puts the same keys at the top level)."""
    return {"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}


def _finish(body: dict[str, Any], context: Context, marks: Plan | None, params: Params, max_key: str) -> dict:
    """The cache controls, then the sampling parameters (under the name each API gives the
    output cap)."""
    key = session_key(context)
    if key:
        body["prompt_cache_key"] = key
    if marks is not None and (any(b.cache for b in (*marks.system, *marks.tree)) or marks.exchanges):
        body["prompt_cache_options"] = dict(EXPLICIT)  # with no mark at all, OpenAI's implicit one
    if params.max_tokens is not None:
        body[max_key] = params.max_tokens
    if params.temperature is not None:
        body["temperature"] = params.temperature
    return body


def build_chat(context: Context, exchanges: list[Exchange], params: Params) -> dict[str, Any]:
    body: dict[str, Any] = {"model": params.model}
    marks = _marks(context, exchanges, params)
    messages: list[dict[str, Any]] = []
    if marks is None:
        system = system_text(context)
        if system:
            messages.append({"role": "system", "content": system})
    elif marks.system:
        messages.append({"role": "developer", "content": [_text("text", b.text, b.cache) for b in marks.system]})
    messages.append({"role": "user", "content": _user_parts(context, "text", None if marks is None else marks.tree)})
    for i, e in enumerate(exchanges):
        messages.extend(_chat_exchange(e, marks is not None, marks is not None and i in marks.exchanges))
    body["messages"] = messages
    if context.tools:
        body["tools"] = [{"type": "function", "function": _function(t)} for t in context.tools]
    return _finish(body, context, marks, params, "max_completion_tokens")


def _chat_exchange(e: Exchange, parts: bool, cache: bool) -> list[dict[str, Any]]:
    """One exchange as Chat messages; with ``parts`` its user and tool texts as text parts,
    the last one closed by a breakpoint when ``cache``."""
    if isinstance(e, AssistantTurn):
        msg: dict[str, Any] = {"role": "assistant", "content": e.text}
        if e.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in e.tool_calls
            ]
        return [msg]
    if isinstance(e, ToolResults):
        last = len(e.results) - 1
        return [
            {"role": "tool", "tool_call_id": r.id, "content": [_text("text", r.content, cache and i == last)]}
            if parts
            else {"role": "tool", "tool_call_id": r.id, "content": r.content}
            for i, r in enumerate(e.results)
        ]
    if isinstance(e, UserNote):
        return [{"role": "user", "content": [_text("text", e.text, cache)] if parts else e.text}]
    raise TypeError(f"unknown exchange {type(e).__name__}")


def build_responses(context: Context, exchanges: list[Exchange], params: Params) -> dict[str, Any]:
    body: dict[str, Any] = {"model": params.model}
    marks = _marks(context, exchanges, params)
    items: list[dict[str, Any]] = []
    if marks is None:
        system = system_text(context)
        if system:
            body["instructions"] = system
    elif marks.system:
        items.append({"role": "developer", "content": [_text("input_text", b.text, b.cache) for b in marks.system]})
    items.append({"role": "user", "content": _user_parts(context, "input_text", None if marks is None else marks.tree)})
    for i, e in enumerate(exchanges):
        items.extend(_responses_exchange(e, marks is not None, marks is not None and i in marks.exchanges))
    body["input"] = items
    if context.tools:
        body["tools"] = [{"type": "function", **_function(t), "strict": False} for t in context.tools]
    return _finish(body, context, marks, params, "max_output_tokens")


def _responses_exchange(e: Exchange, parts: bool, cache: bool) -> list[dict[str, Any]]:
    """One exchange as Responses items; with ``parts`` tool outputs and user notes as text
    parts, the last one closed by a breakpoint when ``cache``."""
    if isinstance(e, AssistantTurn):
        out: list[dict[str, Any]] = []
        if e.text:
            out.append({"role": "assistant", "content": e.text})
        out.extend(
            {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": json.dumps(c.arguments)}
            for c in e.tool_calls
        )
        return out
    if isinstance(e, ToolResults):
        last = len(e.results) - 1
        return [
            {
                "type": "function_call_output",
                "call_id": r.id,
                "output": [_text("input_text", r.content, cache and i == last)] if parts else r.content,
            }
            for i, r in enumerate(e.results)
        ]
    if isinstance(e, UserNote):
        return [{"role": "user", "content": [_text("input_text", e.text, cache)] if parts else e.text}]
    raise TypeError(f"unknown exchange {type(e).__name__}")

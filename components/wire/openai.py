"""OpenAI Chat Completions and Responses. OpenAI caches by token prefix automatically (from
1,024 tokens, in 128-token steps), so no markers: the layout alone keeps the prefix stable."""

from __future__ import annotations

import base64
import json
from typing import Any

from ..context import Context
from .blocks import system_text, tree_text, turn_text
from .exchange import AssistantTurn, Exchange, ToolResults, UserNote
from .params import Params


def _user_parts(context: Context, kind: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": kind, "text": t} for t in (tree_text(context), turn_text(context)) if t]
    for a in context.media:
        data = base64.b64encode(a.data or b"").decode()
        if kind == "text":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{a.mime};base64,{data}"}})
        else:
            parts.append({"type": "input_image", "image_url": f"data:{a.mime};base64,{data}", "detail": "auto"})
    return parts


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as OpenAI describes a function (Chat nests it under ``function``, Responses
    puts the same keys at the top level)."""
    return {"name": tool["name"], "description": tool["description"], "parameters": tool["parameters"]}


def _sampling(body: dict[str, Any], params: Params, max_key: str) -> dict[str, Any]:
    """The sampling parameters, under the name each API gives the output cap."""
    if params.max_tokens is not None:
        body[max_key] = params.max_tokens
    if params.temperature is not None:
        body["temperature"] = params.temperature
    return body


def build_chat(context: Context, exchanges: list[Exchange], params: Params) -> dict[str, Any]:
    body: dict[str, Any] = {"model": params.model}
    messages: list[dict[str, Any]] = []
    system = system_text(context)
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": _user_parts(context, "text")})
    for e in exchanges:
        messages.extend(_chat_exchange(e))
    body["messages"] = messages
    if context.tools:
        body["tools"] = [{"type": "function", "function": _function(t)} for t in context.tools]
    return _sampling(body, params, "max_completion_tokens")


def _chat_exchange(e: Exchange) -> list[dict[str, Any]]:
    if isinstance(e, AssistantTurn):
        msg: dict[str, Any] = {"role": "assistant", "content": e.text}
        if e.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in e.tool_calls
            ]
        return [msg]
    if isinstance(e, ToolResults):
        return [{"role": "tool", "tool_call_id": r.id, "content": r.content} for r in e.results]
    if isinstance(e, UserNote):
        return [{"role": "user", "content": e.text}]
    raise TypeError(f"unknown exchange {type(e).__name__}")


def build_responses(context: Context, exchanges: list[Exchange], params: Params) -> dict[str, Any]:
    body: dict[str, Any] = {"model": params.model}
    system = system_text(context)
    if system:
        body["instructions"] = system
    items: list[dict[str, Any]] = [{"role": "user", "content": _user_parts(context, "input_text")}]
    for e in exchanges:
        items.extend(_responses_exchange(e))
    body["input"] = items
    if context.tools:
        body["tools"] = [{"type": "function", **_function(t), "strict": False} for t in context.tools]
    return _sampling(body, params, "max_output_tokens")


def _responses_exchange(e: Exchange) -> list[dict[str, Any]]:
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
        return [{"type": "function_call_output", "call_id": r.id, "output": r.content} for r in e.results]
    if isinstance(e, UserNote):
        return [{"role": "user", "content": e.text}]
    raise TypeError(f"unknown exchange {type(e).__name__}")

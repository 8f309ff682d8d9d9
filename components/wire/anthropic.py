"""Anthropic Messages: system and tools as blocks with ``cache_control`` at the breakpoints.

Anthropic caches only at content-block boundaries where an earlier request put a
breakpoint, looking back at most 20 blocks, with at most 4 breakpoints per request, in the
prefix order tools, system, messages. So: one marker on each stable stretch of the system
part (the first covers the tools too), one inside the call tree on the last block the next
call will repeat, and one where it pays most: at the end of the tool exchange so far in a
tool round, else on the block that ends where the current call's parent begins. The turn is
never marked.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ..context import Context
from .blocks import plan, turn_text
from .exchange import AssistantTurn, Exchange, ToolResults, UserNote
from .params import Params

DEFAULT_MAX_TOKENS = 4096
EPHEMERAL = {"type": "ephemeral"}


def _text(text: str, cache: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = dict(EPHEMERAL)
    return block


def build(context: Context, exchanges: list[Exchange], params: Params) -> dict[str, Any]:
    body: dict[str, Any] = {"model": params.model, "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS}
    if params.temperature is not None:
        body["temperature"] = params.temperature

    if context.tools:  # no marker of their own: the first system marker's prefix holds them
        body["tools"] = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in context.tools
        ]

    # Four markers (blocks.plan): the two system stretches, the tree where the current call
    # begins, and either the end of the tool exchange so far (the next round sends all of it
    # again) or, before any tool round, the tree where the call's parent begins (a call that
    # moves up a level); past four, the earliest go.
    marks = plan(context, exchanges, "anthropic")
    system = [_text(b.text, b.cache) for b in marks.system]
    if system:
        body["system"] = system

    content = [_text(b.text, b.cache) for b in marks.tree]
    turn = turn_text(context)
    if turn:
        content.append(_text(turn, False))
    for a in context.media:
        content.append(_media(a.name, a.mime, a.data or b""))
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    for i, e in enumerate(exchanges):
        messages.append(_exchange(e))
        if i in marks.exchanges:
            messages[-1]["content"][-1]["cache_control"] = dict(EPHEMERAL)
    body["messages"] = messages
    return body


def _media(name: str, mime: str, data: bytes) -> dict[str, Any]:
    kind = "image" if mime.startswith("image/") else "document"
    return {"type": kind, "source": {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode()}}


def _exchange(e: Exchange) -> dict[str, Any]:
    if isinstance(e, AssistantTurn):
        content: list[dict[str, Any]] = []
        if e.text:
            content.append({"type": "text", "text": e.text})
        content.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in e.tool_calls)
        return {"role": "assistant", "content": content}
    if isinstance(e, ToolResults):
        return {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": r.id, "content": r.content, "is_error": r.is_error}
                for r in e.results
            ],
        }
    if isinstance(e, UserNote):
        return {"role": "user", "content": [{"type": "text", "text": e.text}]}
    raise TypeError(f"unknown exchange {type(e).__name__}")


def count_breakpoints(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')

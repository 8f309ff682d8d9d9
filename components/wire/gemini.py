"""Gemini ``generateContent``. Gemini caches implicitly by prefix; the system instruction
holds the stable part and the first user turn holds the call tree, then this turn."""

from __future__ import annotations

import base64
from typing import Any

from ..context import Context
from .blocks import system_text, tree_text, turn_text
from .exchange import AssistantTurn, Exchange, ToolResults, UserNote
from .params import Params


def build(context: Context, exchanges: list[Exchange], params: Params) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": t} for t in (tree_text(context), turn_text(context)) if t]
    for a in context.media:
        # the SDK sends this one key in snake case, as it does parameters_json_schema
        parts.append({"inlineData": {"data": base64.b64encode(a.data or b"").decode(), "mime_type": a.mime}})
    contents: list[dict[str, Any]] = [{"role": "user", "parts": parts}]
    contents.extend(_exchange(e) for e in exchanges)
    body: dict[str, Any] = {"contents": contents}
    system = system_text(context)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if context.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {"description": t["description"], "name": t["name"], "parameters_json_schema": t["parameters"]}
                    for t in context.tools
                ]
            }
        ]
    config: dict[str, Any] = {}
    if params.max_tokens is not None:
        config["maxOutputTokens"] = params.max_tokens
    if params.temperature is not None:
        config["temperature"] = params.temperature
    body["generationConfig"] = config
    return body


def _exchange(e: Exchange) -> dict[str, Any]:
    if isinstance(e, AssistantTurn):
        parts: list[dict[str, Any]] = []
        if e.text:
            parts.append({"text": e.text})
        parts.extend({"functionCall": {"name": c.name, "args": c.arguments}} for c in e.tool_calls)
        return {"role": "model", "parts": parts}
    if isinstance(e, ToolResults):
        return {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": r.name, "response": _response(r.content, r.is_error)}} for r in e.results
            ],
        }
    if isinstance(e, UserNote):
        return {"role": "user", "parts": [{"text": e.text}]}
    raise TypeError(f"unknown exchange {type(e).__name__}")


def _response(content: str, is_error: bool) -> dict[str, Any]:
    return {"error": content} if is_error else {"result": content}

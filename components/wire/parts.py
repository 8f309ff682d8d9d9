"""A request body as a person compares two of them: its tools, its system texts and its
messages, each as text, in the order the wire sends them (:class:`Parts`).

What a provider caches is a prefix of the body in this order (tools, system, messages), so
the first place two requests' parts differ is where one broke the other's cached prefix.
Indexes are positions within their part as the wire sends them: the Nth tool, the Nth system
message or block (Anthropic's ``system`` blocks; OpenAI's leading system and developer
messages, or the Responses API's ``instructions``; Gemini's ``systemInstruction`` parts), the
Nth message after them. A tool is its name, description and parameters as compact JSON with
sorted keys; a message is ``role: text`` with its content blocks joined (a tool call as its
name and arguments).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import msgspec


class Parts(msgspec.Struct, frozen=True):
    """A request as a person compares two: each tool's definition (JSON text, in the order
    sent; ``tool_names`` beside), each system text, each message (``role: text``)."""

    tools: list[str] = []
    tool_names: list[str] = []
    system: list[str] = []
    messages: list[str] = []

    @property
    def empty(self) -> bool:
        return not (self.tools or self.system or self.messages)


def tool_text(name: Any, description: Any, parameters: Any) -> str:
    """One tool's definition as :class:`Parts` keeps it."""
    return _json({"name": name, "description": description or "", "parameters": parameters or {}})


def request_parts(wire: str, body: Mapping[str, Any]) -> Parts:
    """The parts of a request body in the wire format ``wire`` (``anthropic``, ``openai-chat``,
    ``openai-responses``, ``gemini``). ``ValueError`` for another wire."""
    match wire:
        case "anthropic":
            return _anthropic(body)
        case "openai-chat":
            return _chat(body)
        case "openai-responses":
            return _responses(body)
        case "gemini":
            return _gemini(body)
    raise ValueError(f"no parts for wire {wire!r}")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _texts(content: Any) -> str:
    """The text of a message's content: a string, or its parts (their text, else their JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else _json(p) for p in content
        )
    return _json(content)


def _tools(tools: Any, key: str) -> tuple[list[str], list[str]]:
    texts, names = [], []
    for t in tools or []:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        texts.append(tool_text(fn.get("name"), fn.get("description"), fn.get(key)))
        names.append(str(fn.get("name") or ""))
    return texts, names


def _chat(body: Mapping[str, Any]) -> Parts:
    tools, names = _tools(body.get("tools"), "parameters")
    messages = list(body.get("messages") or [])
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    said = []
    for m in messages[lead:]:
        text = _texts(m.get("content"))
        text += "".join(f"{c['function'].get('name')}{c['function'].get('arguments') or ''}"
                        for c in m.get("tool_calls") or [] if isinstance(c.get("function"), dict))  # fmt: skip
        said.append(f"{m.get('role')}: {text}")
    return Parts(tools, names, [_texts(m.get("content")) for m in messages[:lead]], said)


def _responses(body: Mapping[str, Any]) -> Parts:
    tools, names = _tools(body.get("tools"), "parameters")
    raw = body.get("input")
    items: list[Any] = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
    system = [str(body["instructions"])] if body.get("instructions") else []
    lead = 0
    while lead < len(items) and isinstance(items[lead], dict) and items[lead].get("role") in ("system", "developer"):
        system.append(_texts(items[lead].get("content")))
        lead += 1
    said = []
    for item in items[lead:]:
        if not isinstance(item, dict):
            said.append(str(item))
        elif item.get("type") == "function_call":
            said.append(f"assistant: {item.get('name')}{item.get('arguments') or ''}")
        elif item.get("type") == "function_call_output":
            said.append(f"tool: {_texts(item.get('output'))}")
        elif "content" in item:
            said.append(f"{item.get('role')}: {_texts(item['content'])}")
        else:
            said.append(_json(item))
    return Parts(tools, names, system, said)


def _block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"{block.get('name')}{_json(block.get('input') or {})}"
    if kind == "tool_result":
        return _texts(block.get("content"))
    return _json({k: v for k, v in block.items() if k != "cache_control"})


def _anthropic(body: Mapping[str, Any]) -> Parts:
    tools, names = _tools(body.get("tools"), "input_schema")
    system = body.get("system")
    blocks = [system] if isinstance(system, str) else [_block(b) for b in system or []]
    said = []
    for m in body.get("messages") or []:
        content = m.get("content")
        text = content if isinstance(content, str) else "".join(_block(b) for b in content or [])
        said.append(f"{m.get('role')}: {text}")
    return Parts(tools, names, blocks, said)


def _gemini(body: Mapping[str, Any]) -> Parts:
    texts, names = [], []
    for group in body.get("tools") or []:
        for fn in group.get("functionDeclarations") or []:
            texts.append(tool_text(fn.get("name"), fn.get("description"), fn.get("parameters")))
            names.append(str(fn.get("name") or ""))
    instruction = body.get("systemInstruction") or {}
    system = [str(p.get("text", "")) for p in instruction.get("parts") or []]
    said = []
    for c in body.get("contents") or []:
        text = "".join(str(p["text"]) if "text" in p else _json(p) for p in c.get("parts") or [])
        said.append(f"{c.get('role')}: {text}")
    return Parts(texts, names, system, said)


__all__ = ["Parts", "request_parts", "tool_text"]

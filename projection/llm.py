"""Model calls as any instrumentation writes them: model, provider, token usage and the
messages a span carries, read from our attributes, the GenAI conventions (current "parts"
form and the older ``content`` form), OpenInference (flattened ``llm.*`` keys), OpenLLMetry
(``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``) and Langfuse (observation input/output).

Everything here is a pure function of a span's attributes: no span is trusted to carry any
particular key, and what cannot be read is left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec

from . import schema as s

Role = str  # "system" | "user" | "assistant" | "tool" ... as the span names it


class Message(msgspec.Struct, frozen=True, omit_defaults=True):
    """One message of a model call, as reconstructed from a span: its role and its text (tool
    calls and tool results rendered as text lines)."""

    role: Role
    text: str = ""


class Reconstructed(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a foreign model call's span says the model saw and answered. Not verified: spans
    may truncate or omit content; only callctx's own calls are rebuilt and hash-checked."""

    system: list[str] = []
    messages: list[Message] = []
    output: list[Message] = []
    source: str = ""  # which attributes it came from

    @property
    def empty(self) -> bool:
        return not (self.system or self.messages or self.output)


UsageKey = Literal["input", "output", "cache_read", "cache_write"]

# Per usage field, the attribute names that carry it, most specific first.
_USAGE: dict[UsageKey, tuple[str, ...]] = {
    "input": (s.USAGE_INPUT, "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens"),
    "output": (
        s.USAGE_OUTPUT,
        "gen_ai.usage.completion_tokens",
        "llm.token_count.completion",
        "llm.usage.completion_tokens",
    ),
    "cache_read": (
        s.USAGE_CACHE_READ,
        "gen_ai.usage.cache_read_input_tokens",
        "llm.token_count.prompt_details.cache_read",
    ),
    "cache_write": (
        s.USAGE_CACHE_WRITE,
        "gen_ai.usage.cache_creation_input_tokens",
        "llm.token_count.prompt_details.cache_write",
    ),
}
LANGFUSE_USAGE = "langfuse.observation.usage_details"
LANGFUSE_MODEL = "langfuse.observation.model.name"
_LANGFUSE_USAGE_KEYS: dict[str, UsageKey] = {
    "input": "input",
    "prompt_tokens": "input",
    "output": "output",
    "completion_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "input_cache_read": "cache_read",
    "cache_creation_input_tokens": "cache_write",
}

_json = msgspec.json.Decoder()


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _json.decode(value)
        except msgspec.DecodeError:
            return None
    return value


def usage_of(*layers: Mapping[str, Any]) -> dict[str, int]:
    """Token usage from a span's attributes (later layers win: pass start, then end)."""
    out: dict[str, int] = {}
    for attrs in layers:
        for field, keys in _USAGE.items():
            for key in keys:
                n = _int(attrs.get(key))
                if n is not None:
                    out[field] = n
                    break
        details = _decode(attrs.get(LANGFUSE_USAGE))
        if isinstance(details, Mapping):
            for key, field in _LANGFUSE_USAGE_KEYS.items():
                n = _int(details.get(key))
                if n is not None:
                    out.setdefault(field, n)
    return out


def model_of(*layers: Mapping[str, Any]) -> str | None:
    """The model asked for (else the one that answered)."""
    for key in (s.REQUEST_MODEL, "llm.model_name", LANGFUSE_MODEL, s.RESPONSE_MODEL, "gen_ai.response.model"):
        for attrs in layers:
            value = attrs.get(key)
            if value:
                return str(value)
    return None


def provider_of(*layers: Mapping[str, Any]) -> str | None:
    for key in (s.PROVIDER, "gen_ai.system", "llm.provider", "llm.system"):
        for attrs in layers:
            value = attrs.get(key)
            if value:
                return str(value)
    return None


# ---- messages -------------------------------------------------------------------------------
def _text_of(content: Any) -> str:
    """Text of a message's content in any of the common shapes."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        kind = content.get("type")
        if "content" in content and kind in (None, "text", "reasoning"):
            return _text_of(content.get("content"))
        if "text" in content:
            return _text_of(content.get("text"))
        if kind in ("tool_call", "function_call") or "arguments" in content:
            args = content.get("arguments")
            args_text = args if isinstance(args, str) else msgspec.json.encode(args).decode() if args else ""
            return f"[tool call {content.get('name', '?')}({args_text})]"
        if kind in ("tool_call_response", "function_call_output") or "response" in content:
            return f"[tool result] {_text_of(content.get('response', content.get('output')))}"
        return msgspec.json.encode(content).decode()
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    return str(content)


def _message(obj: Any) -> Message | None:
    if not isinstance(obj, Mapping):
        return None
    role = str(obj.get("role") or obj.get("type") or "user")
    parts = obj.get("parts")
    text = _text_of(parts if parts is not None else obj.get("content"))
    calls = obj.get("tool_calls")
    if isinstance(calls, list):
        extra = []
        for c in calls:
            if isinstance(c, Mapping):
                inner = c.get("function")
                fn = inner if isinstance(inner, Mapping) else c
                extra.append(f"[tool call {fn.get('name', '?')}({fn.get('arguments', '')})]")
        text = "\n".join(t for t in (text, *extra) if t)
    return Message(role, text)


def _messages(value: Any) -> list[Message]:
    value = _decode(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list):
        return [m for m in (_message(v) for v in value) if m is not None]
    if isinstance(value, str) and value:
        return [Message("user", value)]
    return []


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened lists (``prefix.0.message.role``...) as a list of nested dicts, by index."""
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        i, _, rest = key[len(head) :].partition(".")
        if not i.isdigit() or not rest:
            continue
        node = items.setdefault(int(i), {})
        parts = rest.split(".")
        for p in parts[:-1]:
            nxt = node.get(p)
            if not isinstance(nxt, dict):
                nxt = node[p] = {}
            node = nxt
        node[parts[-1]] = value
    return [items[i] for i in sorted(items)]


def _unflatten_lists(node: Any) -> Any:
    """Turn dicts keyed "0", "1", ... into lists (OpenInference nests indexed lists)."""
    if isinstance(node, dict):
        if node and all(k.isdigit() for k in node):
            return [_unflatten_lists(node[k]) for k in sorted(node, key=int)]
        return {k: _unflatten_lists(v) for k, v in node.items()}
    return node


def _openinference(items: Iterable[dict[str, Any]]) -> list[Message]:
    out = []
    for item in items:
        m = _unflatten_lists(item.get("message", item))
        if not isinstance(m, dict):
            continue
        texts = []
        if m.get("content") is not None:
            texts.append(_text_of(m["content"]))
        for c in m.get("contents") or ():
            if isinstance(c, dict):
                mc = c.get("message_content", c)
                if isinstance(mc, dict) and mc.get("text") is not None:
                    texts.append(str(mc["text"]))
        for call in m.get("tool_calls") or ():
            tc = call.get("tool_call", call) if isinstance(call, dict) else {}
            fn = tc.get("function", {}) if isinstance(tc, dict) else {}
            if isinstance(fn, dict):
                texts.append(f"[tool call {fn.get('name', '?')}({fn.get('arguments', '')})]")
        out.append(Message(str(m.get("role") or "user"), "\n".join(t for t in texts if t)))
    return out


def _openllmetry(items: Iterable[dict[str, Any]]) -> list[Message]:
    out = []
    for item in items:
        texts = [_text_of(item.get("content"))] if item.get("content") is not None else []
        calls = _unflatten_lists(item.get("tool_calls") or {})
        for c in calls if isinstance(calls, list) else ():
            if isinstance(c, dict):
                texts.append(f"[tool call {c.get('name', '?')}({c.get('arguments', '')})]")
        out.append(Message(str(item.get("role") or "user"), "\n".join(t for t in texts if t)))
    return out


def messages_of(*layers: Mapping[str, Any]) -> Reconstructed:
    """The system instructions, input messages and output a model-call span carries."""
    attrs: dict[str, Any] = {}
    for layer in layers:
        attrs.update(layer)
    system: list[str] = []
    sys_value = _decode(attrs.get(s.SYSTEM_INSTRUCTIONS))
    if sys_value:
        text = _text_of(sys_value)
        if text:
            system.append(text)
    if s.INPUT_MESSAGES in attrs or s.OUTPUT_MESSAGES in attrs:
        messages = _messages(attrs.get(s.INPUT_MESSAGES))
        output = _messages(attrs.get(s.OUTPUT_MESSAGES))
        return _split_system(system, messages, output, "gen_ai.input.messages")
    oi_in = _indexed(attrs, "llm.input_messages")
    oi_out = _indexed(attrs, "llm.output_messages")
    if oi_in or oi_out:
        return _split_system(system, _openinference(oi_in), _openinference(oi_out), "llm.input_messages")
    tl_in = _indexed(attrs, "gen_ai.prompt")
    tl_out = _indexed(attrs, "gen_ai.completion")
    if tl_in or tl_out:
        return _split_system(system, _openllmetry(tl_in), _openllmetry(tl_out), "gen_ai.prompt")
    lf_in = attrs.get("langfuse.observation.input")
    lf_out = attrs.get("langfuse.observation.output")
    if lf_in is not None or lf_out is not None:
        out = _messages(lf_out)
        if not out and lf_out is not None:
            out = [Message("assistant", _text_of(_decode(lf_out)))]
        return _split_system(system, _messages(lf_in), out, "langfuse.observation.input")
    value_in = attrs.get(s.INPUT_VALUE)
    value_out = attrs.get(s.OUTPUT_VALUE)
    if value_in is not None or value_out is not None:
        out = [Message("assistant", _text_of(_decode(value_out)))] if value_out is not None else []
        return _split_system(system, _messages(value_in), out, "input.value")
    return Reconstructed(system=system, source="gen_ai.system_instructions" if system else "")


def _split_system(system: list[str], messages: list[Message], output: list[Message], source: str) -> Reconstructed:
    """System messages found among the inputs join the system instructions."""
    system = list(system)
    rest: list[Message] = []
    for m in messages:
        if m.role in ("system", "developer") and not rest:
            system.append(m.text)
        else:
            rest.append(m)
    output = [m if m.role != "user" else Message("assistant", m.text) for m in output]
    return Reconstructed(system=system, messages=rest, output=output, source=source)

"""Model calls as any instrumentation writes them: model, provider, token usage, and the
messages and tool definitions a span carries.

Messages are read from our attributes and the GenAI conventions (the current "parts" form and
the older ``content`` form, as attributes or in span events), OpenInference (flattened
``llm.*`` keys), OpenLLMetry (``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``), Langfuse
(observation input/output), Google ADK (``gcp.vertex.agent.llm_request`` / ``llm_response``)
and OpenInference's ``input.value`` / ``output.value`` (messages given as JSON, or as Python
``repr`` strings: :mod:`.reprs`). Span events are the GenAI per-message events
(``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message``, ``gen_ai.choice``: the v1.36 conventions, which Strands Agents writes by
default, their body in the event's attributes, or as JSON in ``gen_ai.event.content`` as Azure
AI Inference writes it), ``gen_ai.client.inference.operation.details`` (what Strands writes
under ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: it adds several to one span,
read together) and the older ``gen_ai.content.prompt`` / ``gen_ai.content.completion``. Values
are JSON text or structured (an OTLP kvlist or array decodes to dicts and lists); both read
alike. Tool definitions: :mod:`.tooldefs`.

Everything here is a pure function of a span's attributes and events: no span is trusted to
carry any particular key, and what cannot be read is left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from . import schema as s
from .events import SpanEvent
from .reprs import repr_message
from .tooldefs import ToolDef, decoded, tool_defs, tool_list

Role = str  # "system" | "user" | "assistant" | "tool" ... as the span names it

Source = Literal[
    "",
    "gen_ai.input.messages",
    "gen_ai.client.inference.operation.details",
    "gen_ai.{role}.message",
    "llm.input_messages",
    "gen_ai.prompt",
    "langfuse.observation.input",
    "gen_ai.content.prompt",
    "gcp.vertex.agent.llm_request",
    "input.value",
    "gen_ai.system_instructions",
]
"""Where a call's messages were read: an attribute (or attribute family), the details event, or
the per-message events (``gen_ai.{role}.message`` and ``gen_ai.choice``); empty: nowhere."""


class Message(msgspec.Struct, frozen=True, omit_defaults=True):
    """One message of a model call, as reconstructed from a span: its role and its text (tool
    calls and tool results rendered as text lines)."""

    role: Role
    text: str = ""


class Reconstructed(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a foreign model call's span says the model saw and answered. Not verified: spans
    may truncate or omit content; only callctx's own calls are rebuilt and hash-checked.

    ``tools`` are the tool definitions it was offered, in the order sent."""

    system: list[str] = []
    messages: list[Message] = []
    output: list[Message] = []
    source: Source = ""  # where the messages came from
    tools: list[ToolDef] = []

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


def usage_of(*layers: Mapping[str, Any]) -> dict[str, int]:
    """Token usage from a span's attributes (later layers win: pass start, then end)."""
    out: dict[str, int] = {}
    for attrs in layers:
        for field, keys in _USAGE.items():
            for key in keys:
                value = attrs.get(key)
                n = None if value is None else _int(value)
                if n is not None:
                    out[field] = n
                    break
        details = decoded(attrs.get(LANGFUSE_USAGE))
        if isinstance(details, Mapping):
            for key, field in _LANGFUSE_USAGE_KEYS.items():
                n = _int(details.get(key))
                if n is not None:
                    out.setdefault(field, n)
    return out


def carries_usage(*layers: Mapping[str, Any]) -> bool:
    """Does a span report token usage (any of input, output, cache read, cache write)?

    For the one-call-per-request rule: an LLM span with an LLM-kind descendant that carries
    usage wraps that call (LlamaIndex's ``chat_with_tools`` around ``chat``, ADK's ``call_llm``
    around ``generate_content``, smolagents' model span around the provider SDK's) and is not
    a call itself."""
    return bool(usage_of(*layers))


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
DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
CHOICE_EVENT = "gen_ai.choice"
MESSAGE_EVENTS: dict[str, Role] = {f"gen_ai.{role}.message": role for role in ("system", "user", "assistant", "tool")}
PROMPT_EVENT = "gen_ai.content.prompt"  # attribute gen_ai.prompt (conventions before the per-message events)
COMPLETION_EVENT = "gen_ai.content.completion"  # attribute gen_ai.completion
EVENT_CONTENT = "gen_ai.event.content"  # Azure AI Inference: an event's body as JSON
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
ADK_REQUEST = "gcp.vertex.agent.llm_request"
ADK_RESPONSE = "gcp.vertex.agent.llm_response"


def _call_text(name: Any, args: Any) -> str:
    args_text = args if isinstance(args, str) else msgspec.json.encode(args).decode() if args else ""
    return f"[tool call {name or '?'}({args_text})]"


def _text_of(content: Any) -> str:
    """Text of a message's content in any of the common shapes: GenAI parts, OpenAI content
    parts, Bedrock / Strands content blocks (``text``, ``toolUse``, ``toolResult``), Gemini parts
    (``text``, ``function_call``, ``function_response``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        kind = content.get("type")
        if "content" in content and kind in (None, "text", "reasoning", "thinking"):
            return _text_of(content.get("content"))
        if "text" in content:
            return _text_of(content.get("text"))
        if kind in ("tool_call", "function_call") or "arguments" in content:
            return _call_text(content.get("name"), content.get("arguments"))
        if kind in ("tool_call_response", "function_call_output"):
            result = next((content[k] for k in ("response", "result", "output") if k in content), None)
            return f"[tool result] {_text_of(result)}"
        if "response" in content:
            return f"[tool result] {_text_of(content.get('response'))}"
        for key in ("toolUse", "function_call", "functionCall"):
            call = content.get(key)
            if isinstance(call, Mapping):
                return _call_text(call.get("name"), call.get("input", call.get("args")))
        for key in ("toolResult", "function_response", "functionResponse"):
            result = content.get(key)
            if isinstance(result, Mapping):
                return f"[tool result] {_text_of(result.get('content', result.get('response')))}"
        if "parts" in content:
            return _text_of(content.get("parts"))
        if isinstance(content.get("value"), str):
            return str(content["value"])  # Azure: {"text": {"value": ...}}
        return msgspec.json.encode(content).decode()
    if isinstance(content, list):
        return "\n".join(t for t in (_text_of(c) for c in content) if t)
    return str(content)


def _message(obj: Any, role: Role | None = None) -> Message | None:
    """One message: an object in the GenAI, OpenAI, Gemini or LlamaIndex shape, or text (a
    ``repr`` string read by :func:`~.reprs.repr_message`). ``role`` overrides the one it names."""
    if isinstance(obj, str):
        return _text_message(obj, role or "user")
    if not isinstance(obj, Mapping):
        return None
    if role is None:
        named = str(obj.get("role") or obj.get("type") or "user")
        role = "assistant" if named == "model" else named  # Gemini's name for the assistant
    content = obj.get("parts")
    if content is None:
        content = obj.get("content")
    if content is None:
        content = obj.get("blocks")  # LlamaIndex ChatMessage
    text = _text_of(content)
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


def _text_message(text: str, role: Role) -> Message:
    parsed = repr_message(text)
    return Message(*parsed) if parsed is not None else Message(role, text)


def _messages(value: Any) -> list[Message]:
    value = decoded(value)
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            value = value["messages"]
        elif "chat_history" in value or "user_msg" in value:  # LlamaIndex chat_with_tools(...) arguments
            history, user = value.get("chat_history"), value.get("user_msg")
            value = [*(history if isinstance(history, list) else ()), *((user,) if user else ())]
    if isinstance(value, list):
        return [m for m in (_message(v) for v in value) if m is not None]
    if isinstance(value, str) and value:
        return [_text_message(value, "user")]
    return []


def _answer(value: Any) -> list[Message]:
    """The answer a span's output value gives: a message object (or one under ``message``,
    as LlamaIndex's ``ChatResponse`` has it), else its text."""
    value = decoded(value)
    if isinstance(value, Mapping):
        inner = value.get("message")
        m = _message(inner) if isinstance(inner, Mapping) else _message(value) if "role" in value else None
        if m is not None:
            return [m]
    return [Message("assistant", _text_of(value))]


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


# ---- span events ----------------------------------------------------------------------------
def _details(events: Sequence[SpanEvent]) -> dict[str, Any]:
    """The attributes of a span's ``gen_ai.client.inference.operation.details`` events, read as
    one (Strands adds one for the system instructions, one for the input, one for the output)."""
    out: dict[str, Any] = {}
    for ev in events:
        if ev.name == DETAILS_EVENT:
            out.update(ev.attributes)
    return out


def _event_body(ev: SpanEvent) -> dict[str, Any]:
    body = dict(ev.attributes)
    inner = decoded(body.pop(EVENT_CONTENT, None))
    if isinstance(inner, Mapping):
        body.update(inner)
    return body


def _event_messages(events: Sequence[SpanEvent]) -> tuple[list[Message], list[Message]] | None:
    """Input and output of the per-message events (the role from the event's name;
    ``gen_ai.choice`` is output); None when the span has none."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    found = False
    for ev in events:
        role = MESSAGE_EVENTS.get(ev.name)
        if role is None and ev.name != CHOICE_EVENT:
            continue
        found = True
        body = _event_body(ev)
        if role is not None:
            m = _message({"content": decoded(body.get("content")), "tool_calls": body.get("tool_calls")}, role)
            if m is not None:
                inputs.append(m)
            continue
        said = decoded(body["message"] if "message" in body else body.get("content"))
        if isinstance(said, Mapping) and not said.keys().isdisjoint(("role", "content", "parts", "tool_calls")):
            m = _message(said, str(said.get("role") or "assistant"))
            if m is not None:
                outputs.append(m)
        else:
            outputs.append(Message("assistant", _text_of(said)))
    return (inputs, outputs) if found else None


def _content_events(events: Sequence[SpanEvent]) -> tuple[Any, Any] | None:
    """(prompt, completion) of the ``gen_ai.content.prompt`` / ``.completion`` events."""
    prompt = completion = None
    for ev in events:
        if ev.name == PROMPT_EVENT:
            prompt = ev.attributes.get("gen_ai.prompt")
        elif ev.name == COMPLETION_EVENT:
            completion = ev.attributes.get("gen_ai.completion")
    return None if prompt is None and completion is None else (prompt, completion)


# ---- reading a span -------------------------------------------------------------------------
class _Read(msgspec.Struct, frozen=True):
    source: Source
    messages: list[Message]
    output: list[Message]
    system: list[str] = []
    tools: list[ToolDef] = []


def _system(value: Any) -> list[str]:
    value = decoded(value)
    text = _text_of(value) if value else ""
    return [text] if text else []


def _outputs(value: Any) -> list[Message]:
    return _messages(value) or (_answer(value) if value is not None else [])


def _adk(attrs: Mapping[str, Any]) -> _Read | None:
    """Google ADK's ``call_llm`` span: the request (Gemini ``contents``, the config's
    ``system_instruction`` and function declarations) and the response, as JSON
    (``google/adk/telemetry/tracing.py`` ``trace_call_llm``; ``{}`` when content is not captured)."""
    request, response = decoded(attrs.get(ADK_REQUEST)), decoded(attrs.get(ADK_RESPONSE))
    request = request if isinstance(request, Mapping) else {}
    response = response if isinstance(response, Mapping) else {}
    if not request and not response:
        return None
    config = request.get("config")
    config = config if isinstance(config, Mapping) else {}
    contents = request.get("contents")
    said = response.get("content")
    tools: list[ToolDef] = []
    for tool in config.get("tools") or ():
        declared = tool.get("function_declarations") if isinstance(tool, Mapping) else None
        if isinstance(declared, list):
            tools.extend(tool_defs(declared))
    return _Read(
        "gcp.vertex.agent.llm_request",
        _messages(contents if isinstance(contents, list) else []),
        [m for m in (_message(said),) if m is not None],
        _system(config.get("system_instruction")),
        tools,
    )


def _read(attrs: Mapping[str, Any], details: Mapping[str, Any], events: Sequence[SpanEvent]) -> _Read | None:
    """The messages of the first source that has them, most specific first."""
    if s.INPUT_MESSAGES in attrs or s.OUTPUT_MESSAGES in attrs:
        return _Read(
            "gen_ai.input.messages", _messages(attrs.get(s.INPUT_MESSAGES)), _messages(attrs.get(s.OUTPUT_MESSAGES))
        )
    if s.INPUT_MESSAGES in details or s.OUTPUT_MESSAGES in details:
        return _Read(DETAILS_EVENT, _messages(details.get(s.INPUT_MESSAGES)), _messages(details.get(s.OUTPUT_MESSAGES)))
    said = _event_messages(events)
    if said is not None:
        return _Read("gen_ai.{role}.message", *said)
    oi_in = _indexed(attrs, "llm.input_messages")
    oi_out = _indexed(attrs, "llm.output_messages")
    if oi_in or oi_out:
        return _Read("llm.input_messages", _openinference(oi_in), _openinference(oi_out))
    tl_in = _indexed(attrs, "gen_ai.prompt")
    tl_out = _indexed(attrs, "gen_ai.completion")
    if tl_in or tl_out:
        return _Read("gen_ai.prompt", _openllmetry(tl_in), _openllmetry(tl_out))
    lf_in = attrs.get("langfuse.observation.input")
    lf_out = attrs.get("langfuse.observation.output")
    if lf_in is not None or lf_out is not None:
        return _Read("langfuse.observation.input", _messages(lf_in), _outputs(lf_out))
    prompted = _content_events(events)
    if prompted is not None:
        return _Read("gen_ai.content.prompt", _messages(prompted[0]), _outputs(prompted[1]))
    adk = _adk(attrs)
    if adk is not None:
        return adk
    value_in = attrs.get(s.INPUT_VALUE)
    value_out = attrs.get(s.OUTPUT_VALUE)
    if value_in is not None or value_out is not None:
        return _Read("input.value", _messages(value_in), _answer(value_out) if value_out is not None else [])
    return None


def _tools(attrs: Mapping[str, Any], details: Mapping[str, Any]) -> list[ToolDef]:
    """The tool definitions: ``gen_ai.tool.definitions`` (an attribute, else in the details
    event), else OpenInference ``llm.tools.N.tool.json_schema``, else OpenLLMetry
    ``llm.request.functions.N.*``."""
    for value in (attrs.get(TOOL_DEFINITIONS), details.get(TOOL_DEFINITIONS)):
        found = tool_list(value) if value is not None else []
        if found:
            return found
    oi = _indexed(attrs, "llm.tools")
    if oi:
        return tool_defs(t.get("json_schema", t) if isinstance(t := item.get("tool", item), dict) else t for item in oi)
    return tool_defs(_indexed(attrs, "llm.request.functions"))


def messages_of(*layers: Mapping[str, Any], events: Iterable[SpanEvent] = ()) -> Reconstructed:
    """The system instructions, input messages, output and tool definitions a model-call span
    carries, from its attributes (later layers win: pass start, then end) and its events."""
    attrs: dict[str, Any] = {}
    for layer in layers:
        attrs.update(layer)
    evs = events if isinstance(events, Sequence) else list(events)
    details = _details(evs)
    system = _system(attrs.get(s.SYSTEM_INSTRUCTIONS)) or _system(details.get(s.SYSTEM_INSTRUCTIONS))
    tools = _tools(attrs, details)
    read = _read(attrs, details, evs)
    if read is None:
        return Reconstructed(system=system, source="gen_ai.system_instructions" if system else "", tools=tools)
    return _split_system(system or read.system, read.messages, read.output, read.source, tools or read.tools)


def tools_of(*layers: Mapping[str, Any], events: Iterable[SpanEvent] = ()) -> list[ToolDef]:
    """The tool definitions a model-call span carries, in the order sent: what
    :func:`messages_of` puts in ``tools``, without reading the messages (an ADK span's are in its
    request)."""
    attrs: dict[str, Any] = {}
    for layer in layers:
        attrs.update(layer)
    found = _tools(attrs, _details(events if isinstance(events, Sequence) else list(events)))
    if found:
        return found
    adk = _adk(attrs)
    return adk.tools if adk is not None else []


def _split_system(
    system: list[str], messages: list[Message], output: list[Message], source: Source, tools: list[ToolDef]
) -> Reconstructed:
    """System messages found among the inputs join the system instructions."""
    system = list(system)
    rest: list[Message] = []
    for m in messages:
        if m.role in ("system", "developer") and not rest:
            system.append(m.text)
        else:
            rest.append(m)
    output = [m if m.role != "user" else Message("assistant", m.text) for m in output]
    return Reconstructed(system=system, messages=rest, output=output, source=source, tools=tools)

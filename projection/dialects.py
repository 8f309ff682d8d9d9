"""Reading spans written by anyone: our own, GenAI-convention and OpenInference instrumentations.

The fold needs five facts about a span: its kind (agentic / llm / tool / other), the function
name, its input, its output and the session it belongs to. Each dialect stores them under
different attributes; this module is the one place that knows where.
"""

from __future__ import annotations

from typing import Any, Literal

from . import schema as s

Kind = Literal["agentic", "llm", "tool", "other"]

_BY_OPERATION: dict[str, Kind] = {
    s.OP_INVOKE_AGENT: "agentic",
    s.OP_INVOKE_WORKFLOW: "agentic",
    "create_agent": "other",
    s.OP_CHAT: "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    s.OP_EXECUTE_TOOL: "tool",
}

_BY_OPENINFERENCE: dict[str, Kind] = {
    "AGENT": "agentic",
    "CHAIN": "agentic",
    "LLM": "llm",
    "TOOL": "tool",
}

_NAME_PREFIXES = ("invoke_agent ", "invoke_workflow ", "execute_tool ", "chat ")


def classify(name: str, attrs: dict[str, Any]) -> Kind:
    """The span's kind. Our own spans carry both keys; foreign ones carry either."""
    op = attrs.get(s.OPERATION)
    if op is not None:
        kind = _BY_OPERATION.get(op)
        if kind is not None:
            return kind
    oi = attrs.get(s.SPAN_KIND)
    if oi is not None:
        kind = _BY_OPENINFERENCE.get(str(oi).upper())
        if kind is not None:
            return kind
    return "other"


def function_name(name: str, kind: Kind, attrs: dict[str, Any]) -> str:
    """The name shown as ``function`` (or ``tool`` / ``model``) in the tree."""
    if kind == "agentic":
        agent = attrs.get(s.AGENT_NAME)
        if agent:
            return agent if type(agent) is str else str(agent)
    elif kind == "tool":
        tool = attrs.get(s.TOOL_NAME)
        if tool:
            return str(tool)
    elif kind == "llm":
        model = attrs.get(s.REQUEST_MODEL) or attrs.get("llm.model_name")
        if model:
            return str(model)
    if kind != "other" and " " in name:
        for prefix in _NAME_PREFIXES:
            if name.startswith(prefix):
                return name[len(prefix) :]
    return name


def input_of(kind: Kind, attrs: dict[str, Any]) -> tuple[str | None, str | None]:
    """(text, mime type) of what the span received."""
    value = attrs.get(s.INPUT_VALUE)
    if value is not None:
        return str(value), attrs.get(s.INPUT_MIME)
    if kind == "tool":
        args = attrs.get(s.TOOL_ARGUMENTS)
        if args is not None:
            return str(args), s.MIME_JSON
    return None, None


def output_of(kind: Kind, attrs: dict[str, Any]) -> tuple[str | None, str | None]:
    """(text, mime type) of what the span returned."""
    value = attrs.get(s.OUTPUT_VALUE)
    if value is not None:
        return str(value), attrs.get(s.OUTPUT_MIME)
    if kind == "tool":
        result = attrs.get(s.TOOL_RESULT)
        if result is not None:
            return str(result), None
    return None, None

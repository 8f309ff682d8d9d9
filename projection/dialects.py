"""Reading spans written by anyone: our own, the GenAI conventions, OpenInference, Langfuse
and OpenLLMetry (Traceloop), and the frameworks whose spans differ from those.

The fold needs five facts about a span: its kind (agentic / llm / tool / other), the function
name, its input, its output and the session it belongs to. Each dialect stores them under
different attributes; this module is the one place that knows where.

Framework differences read here: an agent span that names its agent only as a graph node
(OpenInference's CrewAI ``_execute_core`` spans carry the agent's role in ``graph.node.id``;
Agno names it in ``graph.node.name``) is named by that node, not by its span name; Google
ADK's ``call_llm`` span, which names no operation, is a model call (``gen_ai.system`` =
``gcp.vertex.agent``, ``google/adk/telemetry/tracing.py`` ``trace_call_llm``).
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

# Langfuse's ``@observe()`` marks user functions as plain "span" observations: they are the
# program's calls, so they fold like agentic calls.
_BY_LANGFUSE: dict[str, Kind] = {
    "agent": "agentic",
    "chain": "agentic",
    "span": "agentic",
    "generation": "llm",
    "tool": "tool",
}
_BY_TRACELOOP: dict[str, Kind] = {"workflow": "agentic", "agent": "agentic", "task": "agentic", "tool": "tool"}

LANGFUSE_TYPE = "langfuse.observation.type"
LANGFUSE_INPUT = "langfuse.observation.input"
LANGFUSE_OUTPUT = "langfuse.observation.output"
OPENINFERENCE_AGENT = "agent.name"
OPENINFERENCE_TOOL = "tool.name"
GRAPH_NODE_NAME = "graph.node.name"
GRAPH_NODE_ID = "graph.node.id"
ADK_SYSTEM = "gcp.vertex.agent"  # the gen_ai.system of every span Google ADK writes
ADK_CALL_LLM = "call_llm"
TRACELOOP_KIND = "traceloop.span.kind"
TRACELOOP_NAME = "traceloop.entity.name"
TRACELOOP_INPUT = "traceloop.entity.input"
TRACELOOP_OUTPUT = "traceloop.entity.output"
SESSION_KEYS = (s.CONVERSATION, "session.id", "traceloop.association.properties.session_id")

_NAME_PREFIXES = ("invoke_agent ", "invoke_workflow ", "execute_tool ", "chat ")
_TRACELOOP_SUFFIXES = (".workflow", ".task", ".agent", ".tool")


def classify(name: str, attrs: dict[str, Any]) -> Kind:
    """The span's kind. Our own spans carry both GenAI and OpenInference keys; foreign ones
    carry one dialect's."""
    op = attrs.get(s.OPERATION)
    if op is not None:
        kind = _BY_OPERATION.get(op) if type(op) is str else None  # a hostile span may send any value
        if kind is not None:
            return kind
    oi = attrs.get(s.SPAN_KIND)
    if oi is not None:
        kind = _BY_OPENINFERENCE.get(str(oi).upper())
        if kind is not None:
            return kind
    lf = attrs.get(LANGFUSE_TYPE)
    if lf is not None:
        return _BY_LANGFUSE.get(str(lf).lower(), "other")
    tl = attrs.get(TRACELOOP_KIND)
    if tl is not None:
        return _BY_TRACELOOP.get(str(tl).lower(), "other")
    if name == ADK_CALL_LLM and attrs.get("gen_ai.system") == ADK_SYSTEM:
        return "llm"
    return "other"


def conversation(attrs: dict[str, Any]) -> str | None:
    """The session a span belongs to, in any dialect."""
    for key in SESSION_KEYS:
        value = attrs.get(key)
        if value:
            return str(value)
    return None


def function_name(name: str, kind: Kind, attrs: dict[str, Any]) -> str:
    """The name shown as ``function`` (or ``tool`` / ``model``) in the tree."""
    if kind == "agentic":
        # OpenLLMetry copies gen_ai.agent.name onto every span under an agent: its own name wins.
        # A graph node names the agent when nothing else does (CrewAI: its role; Agno's node id
        # is an opaque id, its name the agent's).
        agent = (
            attrs.get(TRACELOOP_NAME)
            or attrs.get(s.AGENT_NAME)
            or attrs.get(OPENINFERENCE_AGENT)
            or attrs.get(GRAPH_NODE_NAME)
            or attrs.get(GRAPH_NODE_ID)
        )
        if agent:
            return agent if type(agent) is str else str(agent)
    elif kind == "tool":
        tool = attrs.get(s.TOOL_NAME) or attrs.get(OPENINFERENCE_TOOL) or attrs.get(TRACELOOP_NAME)
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
    if TRACELOOP_KIND in attrs and name.endswith(_TRACELOOP_SUFFIXES):
        return name.rsplit(".", 1)[0]
    return name


def input_of(kind: Kind, attrs: dict[str, Any]) -> tuple[str | None, str | None]:
    """(text, mime type) of what the span received."""
    value = attrs.get(s.INPUT_VALUE)
    if value is not None:
        return str(value), attrs.get(s.INPUT_MIME)
    value = attrs.get(LANGFUSE_INPUT)
    if value is None:
        value = attrs.get(TRACELOOP_INPUT)
    if value is not None:
        return str(value), s.MIME_JSON  # both write {"args": [...], "kwargs": {...}}
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
    value = attrs.get(TRACELOOP_OUTPUT)
    if value is not None:
        return str(value), s.MIME_JSON  # always json.dumps(result): strings arrive quoted
    value = attrs.get(LANGFUSE_OUTPUT)
    if value is not None:
        return str(value), None  # a string raw, anything else JSON
    if kind == "tool":
        result = attrs.get(s.TOOL_RESULT)
        if result is not None:
            return str(result), None
    return None, None

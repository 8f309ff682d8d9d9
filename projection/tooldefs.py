"""The tools a model call was offered, as a span lists them: one :class:`ToolDef` per tool, in
the order sent, so two calls' lists compare entry by entry (which tool was added, removed or
changed between them).

A definition is read from any of the shapes instrumentations write:

* the GenAI conventions' ``gen_ai.tool.definitions`` entries, ``{type, name, description,
  parameters}`` (OpenTelemetry ``gen-ai-tool-definitions.json``; PydanticAI's
  ``_instrumentation.py`` ``build_tool_definitions``);
* Strands' ``{name, description, inputSchema: {json: ...}, outputSchema}``
  (``strands/telemetry/tracer.py`` ``_construct_tool_definitions``);
* OpenInference ``llm.tools.N.tool.json_schema`` texts: the OpenAI envelope ``{type: function,
  function: {name, description, parameters}}`` (the Agents SDK, LangChain, smolagents) or
  Anthropic's ``{name, description, input_schema}``;
* Gemini function declarations ``{name, description, parameters}`` (Google ADK's
  ``gcp.vertex.agent.llm_request`` config).

Values come as JSON text or structured (an OTLP array or kvlist decodes to lists and dicts).
Pure functions: what is not a definition is left out, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

_json = msgspec.json.Decoder()
_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema", "parameters_json_schema", "json_schema")


class ToolDef(msgspec.Struct, frozen=True, omit_defaults=True):
    """One tool offered to the model: its name, its description and its parameters' JSON
    Schema as compact JSON text (keys in the order sent; empty when the span gives none)."""

    name: str
    description: str = ""
    parameters: str = ""


def decoded(value: Any) -> Any:
    """A JSON object or array given as text, decoded; anything else (text that is not JSON
    too) as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _json.decode(value)
        except msgspec.DecodeError:
            return value
    return value


def tool_list(value: Any) -> list[ToolDef]:
    """The definitions of a list of tools (JSON text or structured), in order."""
    value = decoded(value)
    if isinstance(value, Mapping) and isinstance(value.get("tools"), list):
        value = value["tools"]
    if not isinstance(value, list):
        return []
    return [t for t in (tool_def(v) for v in value) if t is not None]


def tool_defs(values: Iterable[Any]) -> list[ToolDef]:
    """The definitions among ``values`` (one tool each), in order."""
    return [t for t in (tool_def(v) for v in values) if t is not None]


def tool_def(value: Any) -> ToolDef | None:
    """One tool's definition in any of the shapes above; None when it names no tool."""
    obj = decoded(value)
    if not isinstance(obj, Mapping):
        return None
    inner = obj.get("function")
    if isinstance(inner, Mapping) and inner.get("name"):
        obj = inner  # the OpenAI envelope
    name = obj.get("name")
    if not name:
        kind = obj.get("type")
        name = kind if kind != "function" else None  # a provider's own tool names only its type
    if not isinstance(name, str) or not name:
        return None
    description = obj.get("description")
    schema = next((obj[k] for k in _SCHEMA_KEYS if obj.get(k) is not None), None)
    if isinstance(schema, Mapping) and len(schema) == 1 and "json" in schema:
        schema = schema["json"]  # Strands wraps the schema: inputSchema = {"json": {...}}
    return ToolDef(name, description if isinstance(description, str) else "", _json_text(schema))


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    value = decoded(value)
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return str(value)

"""Span attribute names: the contract between the writer (``tracing``) and the reader (the fold).

The names follow the OpenTelemetry GenAI semantic conventions and OpenInference where one
exists, so that Jaeger, Phoenix and other backends show our spans without any plugin; the
``callctx.*`` names carry what no convention covers (how a call is rendered for the model).
"""

from __future__ import annotations

from typing import Final

# --- GenAI semantic conventions -------------------------------------------------------------
OPERATION: Final = "gen_ai.operation.name"
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
CONVERSATION: Final = "gen_ai.conversation.id"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
USAGE_INPUT: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE: Final = "gen_ai.usage.cache_creation.input_tokens"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"

OP_INVOKE_AGENT: Final = "invoke_agent"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"

# --- OpenInference ----------------------------------------------------------------------------
SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME: Final = "output.mime_type"

MIME_JSON: Final = "application/json"
MIME_TEXT: Final = "text/plain"

# --- ours -------------------------------------------------------------------------------------
DOC: Final = "callctx.doc"
EXPOSE: Final = "callctx.expose"
RENDER_RANGE: Final = "callctx.render_range"
POSITION: Final = "callctx.position"
OUTPUT_CONTRACT: Final = "callctx.output_contract"
SUMMARY: Final = "callctx.summary"
AGENT: Final = "callctx.agent"
TURN: Final = "callctx.turn"  # an implicit call wrapping a model call made outside any agentic call
# on chat spans: the recorded context (a manifest of content hashes) and where the call was made
CONTEXT: Final = "callctx.context"
FUNCTION: Final = "callctx.function"
CALL_PATH: Final = "callctx.call_path"
MODEL_CHOICE: Final = "callctx.model_choice"  # who chose the call's model: runtime, agent or exec (MODEL_CHOICES)
MODEL_CHOICES: Final = ("runtime", "agent", "exec")
# a text a model call was sent, riding on its chat span as an event (attributes ``hash``, ``text``)
BLOB_EVENT: Final = "callctx.blob"
# on a span exported from a log where it never ended: it reads as interrupted again once imported
INTERRUPTED: Final = "callctx.interrupted"

EXPOSE_LEVELS: Final = ("io", "llm", "full", "hidden")

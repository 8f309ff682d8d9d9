"""callctx: build what each LLM call of an agent sees from the agent's own OpenTelemetry trace.

The public API is the names below; everything else is reached through the subpackages
``callctx.projection`` (events, the event log, the fold, rendering) and
``callctx.components`` (context components, assembly, wire formats, the cache simulator).

* Instrumenting an agent: :func:`agentic`, :class:`Agent`, :func:`setup` (returns the
  :class:`Runtime`), :func:`carry` (the current call into a thread).
* Models: :func:`model` (a client from ``provider:model``; its keyword arguments go to the
  client), :class:`ScriptedModel` (the offline default), :func:`tool_call`. The provider
  clients (``OpenAIChat``, ``OpenAIResponses``, ``AnthropicMessages``, ``Gemini``) are in
  :mod:`callctx.models`.
* Errors: :class:`CallctxError` (the base of all), :class:`ModelError`,
  :class:`OutputValidationError`; a reader's ``NotFound`` and ``BadInput`` are in
  :mod:`callctx.errors`.
* Reading a trace: :class:`Projection` (live, or replayed from a log).
* Context components: :class:`ContextComponent`, :class:`Registry`, :func:`default_registry`,
  :class:`Ctx`, :class:`FileMemory`.
"""

from callctx.components import ContextComponent, Ctx, FileMemory, Registry, default_registry
from callctx.engine.runtime import Runtime, setup
from callctx.errors import CallctxError, ModelError, OutputValidationError
from callctx.instrument.agent import Agent
from callctx.instrument.decorator import agentic
from callctx.instrument.threads import carry
from callctx.projection import Projection

from .models import ScriptedModel, tool_call
from .models import resolve as model

__all__ = [
    "Agent",
    "CallctxError",
    "ContextComponent",
    "Ctx",
    "FileMemory",
    "ModelError",
    "OutputValidationError",
    "Projection",
    "Registry",
    "Runtime",
    "ScriptedModel",
    "agentic",
    "carry",
    "default_registry",
    "model",
    "setup",
    "tool_call",
]

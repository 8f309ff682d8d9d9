"""callctx tracing: ``@agentic`` calls as OpenTelemetry spans, folded into a live call tree."""

from .agent import Agent
from .decorator import agentic
from .runtime import Runtime, setup
from .threads import carry

__all__ = ["Agent", "Runtime", "agentic", "carry", "setup"]

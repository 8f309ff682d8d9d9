"""What a runtime builds every context from, besides the call tree and the turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from callctx.components import Registry, default_registry
from callctx.components.inputs import Ctx
from callctx.engine.tools import Tool
from callctx.models import Model


@dataclass
class Config:
    """The runtime's configuration: the model, the registry, and ``base``, the :class:`Ctx`
    every call starts from (agent, channel, skills, memory, workspace, cwd, session, clock...).
    ``Runtime.exec`` fills in the per-call fields: provider and model, tools, the call tree
    and the turn."""

    model: Model
    base: Ctx = field(default_factory=Ctx)
    registry: Registry = field(default_factory=default_registry)
    max_tool_rounds: int = 8
    capture_content: bool = False  # GenAI content attributes on chat spans
    tools: tuple[Callable[..., Any] | Tool, ...] = ()  # offered on every call (an Agent adds its own)
    tree_budget: int | None = None  # tokens; over it, the oldest finished calls collapse
    deferred: tuple[Any, ...] = ()  # runnable deferred tools (Tool), listed by name only
    mcp: tuple[Any, ...] = ()  # MCP servers whose tools are offered on every call

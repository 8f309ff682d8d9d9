"""``Agent``: a base class whose ``@agentic`` methods ask the model as this agent.

Methods keep their own names as the call tree's ``function`` (the tree is a program's call
stack); the agent's name, id, role (the class docstring) and ``instructions`` (its inline
prompt) feed the identity block of every context its methods assemble.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Unpack

from callctx.instrument import active
from callctx.instrument.active import ActiveRuntime, AgentOptions


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


class Agent:
    """Subclass it and decorate methods with ``@agentic``; ``self`` never enters the trace."""

    __callctx_agent__: ClassVar[bool] = True
    name: str = ""
    agent_id: str = "main"
    instructions: str | None = None
    tools: ClassVar[Sequence[Callable[..., Any]]] = ()  # offered on every call this agent makes
    mcp: ClassVar[Sequence[Any]] = ()  # MCP servers (callctx.engine.mcp.McpServer) whose tools it offers
    model: Any = None  # a model client or ``provider:model`` its calls ask (None: the runtime's)

    def __init__(
        self,
        name: str | None = None,
        *,
        agent_id: str | None = None,
        runtime: ActiveRuntime | None = None,
        model: Any = None,
    ):
        if model is not None:
            self.model = model
        if name:
            self.name = name
        elif not self.name:
            self.name = _kebab(type(self).__name__)
        if agent_id:
            self.agent_id = agent_id
        self._runtime = runtime

    @property
    def runtime(self) -> ActiveRuntime:
        rt = self._runtime or active.current()
        if rt is None:
            raise RuntimeError("no callctx runtime: call callctx.setup() first or pass runtime=")
        return rt

    def exec(self, prompt: str, **options: Unpack[AgentOptions]) -> Any:
        """``Runtime.exec`` as this agent (the same options: ``schema``, ``tools``,
        ``position``, ``output``, ``attachments``, ``stream``, ``model``), asking the agent's
        model unless ``model`` names another."""
        return self.runtime.exec(prompt, agent=self, **options)

    async def aexec(self, prompt: str, **options: Unpack[AgentOptions]) -> Any:
        """``Runtime.aexec`` as this agent."""
        return await self.runtime.aexec(prompt, agent=self, **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

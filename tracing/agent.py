"""``Agent``: a base class whose ``@agentic`` methods report under the agent's name.

Methods keep their own names as the call tree's ``function`` (the tree is a program's call
stack); the agent's name rides along as ``callctx.agent`` and later feeds the identity block.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar

from . import active

if TYPE_CHECKING:
    from .runtime import Runtime


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


class Agent:
    """Subclass it and decorate methods with ``@agentic``; ``self`` never enters the trace."""

    __callctx_agent__: ClassVar[bool] = True
    name: str = ""
    agent_id: str = "main"

    def __init__(self, name: str | None = None, *, agent_id: str | None = None, runtime: Runtime | None = None):
        if name:
            self.name = name
        elif not self.name:
            self.name = _snake(type(self).__name__)
        if agent_id:
            self.agent_id = agent_id
        self._runtime = runtime

    @property
    def runtime(self) -> Runtime:
        rt = self._runtime or active.runtime
        if rt is None:
            raise RuntimeError("no callctx runtime: call tracing.setup() first or pass runtime=")
        return rt

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

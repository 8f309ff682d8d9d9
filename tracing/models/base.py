"""What the runtime needs from a model client, whatever the provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from callctx.components.context import Context
from callctx.components.wire.exchange import ToolCall
from callctx.components.wire.params import Params


@dataclass(frozen=True)
class Usage:
    """Tokens of one call. ``input`` counts every input token, cached ones included."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class Reply:
    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str | None = None  # the model that answered, if the provider says
    finish: str | None = None


@dataclass(frozen=True)
class ModelRequest:
    """One call: the wire body (exactly what is sent), and for offline models, what it came from."""

    body: dict[str, Any]
    function: str | None
    context: Context


class ModelError(RuntimeError):
    """The provider refused or failed. ``status`` is the HTTP status when there was one."""

    def __init__(self, provider: str, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.status = status
        self.retryable = retryable


@runtime_checkable
class Model(Protocol):
    """A model client: the wire format it speaks, the GenAI provider name, the model name."""

    wire: str
    provider: str
    params: Params

    def complete(self, request: ModelRequest) -> Reply: ...

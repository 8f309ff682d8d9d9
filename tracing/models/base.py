"""What the runtime needs from a model client, whatever the provider.

:class:`Model` is what every client implements (``complete``); :class:`StreamingModel`,
:class:`AsyncModel` and :class:`AsyncStreamingModel` are what a client may add (``stream``,
``acomplete``, ``astream``). They are runtime-checkable: the engine asks ``isinstance`` which
of them a model implements and falls back to the ones it has (a model that cannot stream
delivers its whole text at once; a blocking one runs in a thread under ``aexec``). The
clients name the protocols they implement among their bases.

Errors: a client raises :class:`ModelError` for a provider's refusal or failure, with the
HTTP status and whether a retry may help.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from callctx.components.context import Context
from callctx.components.wire.exchange import ToolCall
from callctx.components.wire.params import Params
from callctx.projection.calls import Usage  # what a reply reports: input counts cached tokens too
from callctx.projection.errors import CallctxError


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


class ModelError(CallctxError, RuntimeError):
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


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model whose reply's text can be handed over as it arrives."""

    def stream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        """The reply, its text handed to ``on_text`` piece by piece as it arrives."""
        ...


@runtime_checkable
class AsyncModel(Model, Protocol):
    """A model with a call of its own for an event loop."""

    async def acomplete(self, request: ModelRequest) -> Reply: ...


@runtime_checkable
class AsyncStreamingModel(Model, Protocol):
    """A model that streams on an event loop: ``on_text`` may return an awaitable, which is awaited."""

    async def astream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply: ...


def retryable(status: int | None) -> bool:
    """Is a failed call worth retrying? No HTTP status (the request never got an answer), a
    timeout, a conflict, rate limiting or a server error are; other client errors are not."""
    return status is None or status in (408, 409, 429) or status >= 500


def import_sdk(module: str, extra: str) -> ModuleType:
    """A provider's official SDK, or an ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"the {extra} client needs its SDK: pip install 'callctx[{extra}]'") from e


class SdkModel(AsyncModel):
    """What the clients of the providers' official SDKs share: the request parameters and the
    SDK client (the one given, else one built by :meth:`connect` from the key, the base URL,
    the timeout and the retry count). Threading: the SDK clients are thread-safe, so one
    model serves every thread."""

    wire: str
    provider: str

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        async_client: Any = None,
    ) -> None:
        self.params = Params(model=model, max_tokens=max_tokens, temperature=temperature)
        self._options = (api_key, base_url, timeout, max_retries)
        self._given = client is not None
        self.client = client if client is not None else self.connect(api_key, base_url, timeout, max_retries)
        self._async_client: Any = async_client

    def connect(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        raise TypeError(f"{type(self).__name__} needs client= or a connect() of its own")

    def connect_async(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        """The SDK's async client (None: this provider has none; ``aexec`` then runs the blocking
        client in a thread)."""
        return None

    def async_client(self) -> Any:
        """The async client given, else one built from the same options (not when a blocking
        ``client=`` was given without an ``async_client=``: that one is used in a thread)."""
        if self._async_client is None and not self._given:
            self._async_client = self.connect_async(*self._options)
        return self._async_client

    async def acomplete(self, request: ModelRequest) -> Reply:
        client = self.async_client()
        if client is None:
            return await asyncio.to_thread(self.complete, request)
        return await self.acomplete_with(client, request)

    async def acomplete_with(self, client: Any, request: ModelRequest) -> Reply:
        return await asyncio.to_thread(self.complete, request)

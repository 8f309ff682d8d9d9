"""What the runtime needs from a model client, whatever the provider.

:class:`Model` is what every client implements (``complete``); :class:`StreamingModel`,
:class:`AsyncModel` and :class:`AsyncStreamingModel` are what a client may add (``stream``,
``acomplete``, ``astream``). They are runtime-checkable: the engine asks ``isinstance`` which
of them a model implements and falls back to the ones it has (a model that cannot stream
delivers its whole text at once; a blocking one runs in a thread under ``aexec``). The
clients name the protocols they implement among their bases.

Errors: a client raises :class:`ModelError` for every failure of a provider call, whatever its
shape (a refusal, a transport error, a reply that cannot be read, such as a 200 whose body is
not JSON), naming the provider, the model and the endpoint, with a one-line reason, the HTTP
status when there was one, and whether a retry may help. Only the caller's own callback
(``on_text``) raises through unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    """The provider refused or failed: ``"provider model at endpoint: reason"``. ``status`` is
    the HTTP status when there was one; ``retryable`` whether a retry may help."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        model: str | None = None,
        endpoint: str | None = None,
    ):
        where = (f" {model}" if model else "") + (f" at {endpoint}" if endpoint else "")
        super().__init__(f"{provider}{where}: {message}")
        self.provider = provider
        self.model = model
        self.endpoint = endpoint
        self.status = status
        self.retryable = retryable


REASON_CHARS = 300  # a reason is one line, cut here


def one_line(text: str) -> str:
    """The first non-blank line of ``text``, cut to ``REASON_CHARS``."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


class Unreadable(Exception):
    """The server answered, but not with what the API returns (its message is the reason)."""


def read_reply(parse: Callable[[Any], Reply], answer: Any) -> Reply:
    """``parse(answer)``, or :class:`Unreadable` when the answer is not the API's: the SDKs
    hand over a body that is not JSON as text, and one of the wrong shape as an object that
    lacks what ``parse`` reads."""
    if isinstance(answer, (str, bytes)):
        text = answer if isinstance(answer, str) else answer.decode("utf-8", "replace")
        raise Unreadable(f"the reply is not JSON: {one_line(text)[:80]!r}")
    try:
        return parse(answer)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
        raise Unreadable(f"the reply is not an API answer ({type(e).__name__}: {one_line(str(e))})") from e


RETRY_EVENT = "callctx.retry"  # on a chat span: the SDK sent the request again
_answered: contextvars.ContextVar[str] = contextvars.ContextVar("callctx_last_answer", default="")
# The span current when a provider call began (the call's chat span): an SDK that traces itself
# makes its own span current under it, so the hooks below do not look at the current one.
_calling: contextvars.ContextVar[Any] = contextvars.ContextVar("callctx_calling_span", default=None)


def retry_hooks(asynchronous: bool = False) -> dict[str, list[Callable[[Any], Any]]]:
    """httpx event hooks that put each retry of the SDKs built on one base (OpenAI's and
    Anthropic's, which number their attempts in ``x-stainless-retry-count``) on the current
    span the call began under (its chat span; see :meth:`SdkModel.calling`): a
    ``callctx.retry`` event with the attempt and what the attempt before it got. Never raise
    into the request."""

    def on_request(request: Any) -> None:
        try:
            retry = int(request.headers.get("x-stainless-retry-count") or 0)
            if retry > 0:
                span = _calling.get()
                if span is not None and span.is_recording():
                    cause = _answered.get() or "no answer (a connection error or a timeout)"
                    span.add_event(RETRY_EVENT, {"attempt": retry + 1, "after": cause})
            _answered.set("")
        except Exception:  # noqa: BLE001 - bookkeeping must not cost the request
            pass

    def on_response(response: Any) -> None:
        _answered.set(f"status {response.status_code}")

    if not asynchronous:
        return {"request": [on_request], "response": [on_response]}

    async def aon_request(request: Any) -> None:
        on_request(request)

    async def aon_response(response: Any) -> None:
        on_response(response)

    return {"request": [aon_request], "response": [aon_response]}


class _CallbackFailed(Exception):
    """Carries the caller's own exception out of a provider call unchanged."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


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
    default_endpoint = ""  # where the SDK sends requests when no base_url is given

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

    # ---- failures --------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """The server this model's requests go to."""
        given = self._options[1] or getattr(self.client, "base_url", None)
        return str(given or self.default_endpoint).rstrip("/")

    def api_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's own error classes (a refusal or a transport failure it reports)."""
        return ()

    def status_of(self, error: BaseException) -> int | None:
        """The HTTP status an SDK error carries (``status_code`` for most SDKs)."""
        status = getattr(error, "status_code", None)
        return status if isinstance(status, int) else None

    def failure(self, error: BaseException) -> ModelError:
        """Any exception of a provider call as a :class:`ModelError`."""
        status = self.status_of(error)
        name = type(error).__name__
        if status is not None or isinstance(error, self.api_errors()):
            reason, may_retry = one_line(str(error)) or name, retryable(status)
        elif type(error).__module__.startswith(("httpx", "httpcore")) or isinstance(error, OSError):
            reason, may_retry = f"the server could not be reached ({name}: {one_line(str(error))})", True
        elif isinstance(error, Unreadable):
            reason, may_retry = str(error), False
        else:  # raised inside the SDK (its own checks, a reply it could not parse)
            reason, may_retry = f"{name}: {one_line(str(error)) or 'no message'}", False
        return ModelError(
            self.provider, reason, status=status, retryable=may_retry, model=self.params.model, endpoint=self.endpoint
        )

    @contextmanager
    def calling(self) -> Iterator[None]:
        """Around a provider call and the reading of its reply: any exception but the caller's
        own (from a callback wrapped by :meth:`passing`) leaves as a :class:`ModelError`. The
        span current here is the one each retry is recorded on."""
        from opentelemetry import trace

        token = _calling.set(trace.get_current_span())
        try:
            yield
        except _CallbackFailed as e:
            raise e.error from None
        except ModelError:
            raise
        except Exception as e:
            raise self.failure(e) from e
        finally:
            _calling.reset(token)

    @staticmethod
    def passing(callback: Callable[[str], Any]) -> Callable[[str], Any]:
        """``callback`` whose exceptions :meth:`calling` lets through unchanged."""

        def call(text: str) -> Any:
            try:
                return callback(text)
            except Exception as e:
                raise _CallbackFailed(e) from e

        return call

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

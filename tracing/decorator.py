"""``@agentic``: every call of a decorated function becomes an ``invoke_agent`` span.

Identity and input are set when the span is created, because the span processor's
``on_start`` sees only those and the call tree must hold the call before its body runs.
Output (and the optional one-line summary) is set just before the span ends. The user's
function is the only thing allowed to raise: a failure in the bookkeeping is logged and the
function runs untraced; the function's own exceptions pass through unchanged.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from callctx.projection import schema as s

from . import active
from .payload import Binder, output_attributes, to_json

log = logging.getLogger("callctx.tracing")

F = TypeVar("F", bound=Callable[..., Any])
MAX_ITEMS = 1000  # a generator's recorded output keeps its first items, not an endless stream
Expose = str  # "io" | "llm" | "full" | "hidden"


@dataclass(frozen=True, slots=True)
class CallSpec:
    """Everything about a decorated function that does not change between calls."""

    name: str
    span_name: str
    attributes: dict[str, Any]
    binder: Binder
    capture_io: bool
    summarize: Callable[[Any], str] | None


def _first_paragraph(doc: str | None) -> str | None:
    if not doc:
        return None
    text = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(text.split()) or None


def _spec(
    fn: Callable[..., Any],
    *,
    name: str | None,
    expose: Expose,
    render_range: int | None,
    position: str | None,
    output: str | None,
    summarize: Callable[[Any], str] | None,
    capture_io: bool,
) -> CallSpec:
    if expose not in s.EXPOSE_LEVELS:
        raise ValueError(f"expose must be one of {', '.join(s.EXPOSE_LEVELS)}, not {expose!r}")
    if render_range is not None and (not isinstance(render_range, int) or render_range < 0):
        raise ValueError(f"render_range must be a non-negative number of finished calls, not {render_range!r}")
    if summarize is not None and not callable(summarize):
        raise TypeError("summarize must be a callable taking the output and returning one line")
    fname = name or fn.__name__
    attrs: dict[str, Any] = {
        s.OPERATION: s.OP_INVOKE_AGENT,
        s.AGENT_NAME: fname,
        s.SPAN_KIND: "AGENT",
    }
    doc = _first_paragraph(fn.__doc__)
    if doc:
        attrs[s.DOC] = doc
    if expose != "io":
        attrs[s.EXPOSE] = expose
    if render_range is not None:
        attrs[s.RENDER_RANGE] = render_range
    if position:
        attrs[s.POSITION] = position
    if output:
        attrs[s.OUTPUT_CONTRACT] = output
    return CallSpec(fname, f"{s.OP_INVOKE_AGENT} {fname}", attrs, Binder(fn), capture_io, summarize)


@overload
def agentic(fn: F) -> F: ...
@overload
def agentic(
    fn: None = None,
    *,
    expose: Expose = "io",
    render_range: int | None = None,
    position: str | None = None,
    output: str | None = None,
    summarize: Callable[[Any], str] | None = None,
    name: str | None = None,
    capture_io: bool = True,
) -> Callable[[F], F]: ...
def agentic(
    fn: Callable[..., Any] | None = None,
    *,
    expose: Expose = "io",
    render_range: int | None = None,
    position: str | None = None,
    output: str | None = None,
    summarize: Callable[[Any], str] | None = None,
    name: str | None = None,
    capture_io: bool = True,
) -> Any:
    """Mark a function (sync, async, generator or async generator) as an agentic call.

    Options: ``expose`` (how much of the call others see: ``io`` its input and output, ``llm``
    also its own model exchanges, ``full`` also its tool calls, ``hidden`` no node: its
    children hang under its parent), ``render_range`` (this call sees only the last N finished
    calls at each level of its path), ``position`` (where the call sits in the program, for the
    model), ``output`` (the output contract: how the caller uses the result), ``summarize``
    (output -> one line shown to later calls), ``name`` (defaults to the function's name) and
    ``capture_io`` (False keeps arguments and results out of the trace).
    """

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        spec = _spec(
            f,
            name=name,
            expose=expose,
            render_range=render_range,
            position=position,
            output=output,
            summarize=summarize,
            capture_io=capture_io,
        )
        if inspect.isasyncgenfunction(f):
            wrapper = _wrap_async_gen(f, spec)
        elif inspect.isgeneratorfunction(f):
            wrapper = _wrap_gen(f, spec)
        elif inspect.iscoroutinefunction(f):
            wrapper = _wrap_async(f, spec)
        else:
            wrapper = _wrap_sync(f, spec)
        wrapper.__callctx__ = spec  # type: ignore[attr-defined]
        return wrapper

    if fn is not None:
        return decorate(fn)
    return decorate


# ---- the bookkeeping, each step guarded -------------------------------------------------------
def _start(spec: CallSpec, args: tuple[Any, ...], kwargs: dict[str, Any], parent: Any = None) -> Span | None:
    try:
        attrs = spec.attributes.copy()
        if spec.capture_io:
            attrs[s.INPUT_VALUE] = to_json(spec.binder.bind(args, kwargs))
            attrs[s.INPUT_MIME] = s.MIME_JSON
        if args and getattr(args[0], "__callctx_agent__", False):
            attrs[s.AGENT] = args[0].name
        rt = active.runtime
        if rt is None:
            return active.fallback.start_span(spec.span_name, context=parent, attributes=attrs)
        if rt.session_id is not None:
            attrs[s.CONVERSATION] = rt.session_id
        return rt.tracer.start_span(spec.span_name, context=parent, attributes=attrs)
    except Exception:
        log.exception("callctx: could not start a span for %s; running it untraced", spec.name)
        return None


def _attach(span: Span | None) -> object | None:
    if span is None:
        return None
    try:
        return otel_context.attach(trace.set_span_in_context(span))
    except Exception:
        log.exception("callctx: could not make the span current")
        return None


def _detach(token: object | None) -> None:
    if token is not None:
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
        except Exception:
            log.exception("callctx: could not restore the caller's context")


def _succeed(spec: CallSpec, span: Span | None, result: Any) -> None:
    if span is None:
        return
    try:
        attrs: dict[str, Any] = {}
        if spec.capture_io:
            attrs.update(output_attributes(result))
        if spec.summarize is not None:
            attrs.update(_summary(spec, result))
        if attrs:
            span.set_attributes(attrs)
        span.end()
    except Exception:
        log.exception("callctx: could not end the span of %s", spec.name)


def _summary(spec: CallSpec, result: Any) -> dict[str, str]:
    try:
        line = spec.summarize(result)  # type: ignore[misc]
    except Exception:
        log.exception("callctx: summarize failed for %s", spec.name)
        return {}
    return {s.SUMMARY: " ".join(str(line).split())}


def _fail(spec: CallSpec, span: Span | None, exc: BaseException) -> None:
    if span is None:
        return
    try:
        span.record_exception(exc)
        first = str(exc).strip().splitlines()
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__))
        span.end()
    except Exception:
        log.exception("callctx: could not record the failure of %s", spec.name)


# ---- wrappers ----------------------------------------------------------------------------------
def _wrap_sync(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        span = _start(spec, args, kwargs)
        token = _attach(span)
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:
            _detach(token)
            _fail(spec, span, e)
            raise
        _detach(token)
        _succeed(spec, span, result)
        return result

    return call


def _wrap_async(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        span = _start(spec, args, kwargs)
        token = _attach(span)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as e:
            _detach(token)
            _fail(spec, span, e)
            raise
        _detach(token)
        _succeed(spec, span, result)
        return result

    return call


def _wrap_gen(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    """The span covers the iteration; between items the caller's context is current again."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        parent = otel_context.get_current()
        gen = fn(*args, **kwargs)
        span = None
        items: list[Any] = []
        sent: Any = None
        thrown: BaseException | None = None
        started = False
        while True:
            if not started:
                span = _start(spec, args, kwargs, parent)
                started = True
            token = _attach(span)
            try:
                item = gen.throw(thrown) if thrown is not None else gen.send(sent)
            except StopIteration as stop:
                _detach(token)
                _succeed(spec, span, stop.value if stop.value is not None else _collected(items))
                return stop.value
            except BaseException as e:
                _detach(token)
                _fail(spec, span, e)
                raise
            _detach(token)
            thrown = None
            if spec.capture_io and len(items) < MAX_ITEMS:
                items.append(item)
            try:
                sent = yield item
            except GeneratorExit:
                _close(spec, span, gen.close, items)
                raise
            except BaseException as e:  # noqa: BLE001 - thrown in by the consumer: forwarded into the generator
                thrown = e

    return call


def _wrap_async_gen(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        parent = otel_context.get_current()
        agen = fn(*args, **kwargs)
        span = None
        items: list[Any] = []
        sent: Any = None
        thrown: BaseException | None = None
        started = False
        while True:
            if not started:
                span = _start(spec, args, kwargs, parent)
                started = True
            token = _attach(span)
            try:
                item = await (agen.athrow(thrown) if thrown is not None else agen.asend(sent))
            except StopAsyncIteration:
                _detach(token)
                _succeed(spec, span, _collected(items))
                return
            except BaseException as e:
                _detach(token)
                _fail(spec, span, e)
                raise
            _detach(token)
            thrown = None
            if spec.capture_io and len(items) < MAX_ITEMS:
                items.append(item)
            try:
                sent = yield item
            except GeneratorExit:
                token = _attach(span)
                try:
                    await agen.aclose()
                finally:
                    _detach(token)
                    _succeed(spec, span, _collected(items))
                raise
            except BaseException as e:  # noqa: BLE001 - thrown in by the consumer: forwarded into the generator
                thrown = e

    return call


def _collected(items: list[Any]) -> Any:
    """A generator's output is what it yielded."""
    return items or None


def _close(spec: CallSpec, span: Span | None, close: Callable[[], None], items: list[Any]) -> None:
    """The consumer stopped early (``break``, ``close()``, garbage collection): end the span."""
    token = _attach(span)
    try:
        close()
    except BaseException as e:
        _detach(token)
        _fail(spec, span, e)
        raise
    _detach(token)
    _succeed(spec, span, _collected(items))


class traced_call:
    """An agentic call made by the runtime itself (a top-level turn), as a context manager."""

    def __init__(self, name: str, inputs: dict[str, Any], **attributes: Any) -> None:
        def _stub() -> None:  # the spec only needs a name and a signature
            return None

        spec = _spec(
            _stub,
            name=name,
            expose="io",
            render_range=None,
            position=None,
            output=None,
            summarize=None,
            capture_io=True,
        )
        self.spec = CallSpec(spec.name, spec.span_name, {**spec.attributes, **attributes}, spec.binder, True, None)
        self.inputs = inputs
        self.output: Any = None
        self._span: Span | None = None
        self._token: object | None = None

    def __enter__(self) -> traced_call:
        self._span = _start(self.spec, (), self.inputs)
        self._token = _attach(self._span)
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        _detach(self._token)
        if exc is not None:
            _fail(self.spec, self._span, exc)
        else:
            _succeed(self.spec, self._span, self.output)

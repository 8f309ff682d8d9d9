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
from typing import Any, Literal, TypeVar, get_args, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from callctx.components.doctext import first_paragraph
from callctx.instrument import active
from callctx.instrument.payload import Binder, output_attributes, to_json
from callctx.instrument.processor import put_attributes
from callctx.projection import schema as s
from callctx.projection.events import failure_line

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
MAX_ITEMS = 1000  # a generator's recorded output keeps its first items, not an endless stream
Expose = Literal["io", "llm", "full", "hidden"]
"""What other calls see of a call: ``io`` its input and output, ``llm`` also its own model
exchanges, ``full`` also its tool calls, ``hidden`` no node (its children hang under its parent)."""
assert get_args(Expose) == s.EXPOSE_LEVELS


@dataclass(frozen=True, slots=True)
class CallSpec:
    """Everything about a decorated function that does not change between calls."""

    name: str
    span_name: str
    attributes: dict[str, Any]
    binder: Binder
    capture_io: bool
    summarize: Callable[[Any], str] | None


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
    doc = first_paragraph(fn.__doc__)
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
class _Invocation:
    """One call of a decorated function: its span, made current while the function runs.

    Every step is guarded: a failure in the bookkeeping is logged and the function runs (or
    goes on) untraced. Used as a context manager around the function's body; the function's
    own exception passes through unchanged.
    """

    __slots__ = ("result", "span", "spec", "token")

    def __init__(self, spec: CallSpec, args: tuple[Any, ...], kwargs: dict[str, Any], parent: Any = None) -> None:
        self.spec = spec
        self.span = _start(spec, args, kwargs, parent)
        self.token: object | None = None
        self.result: Any = None

    def enter(self) -> None:
        """Make the span current (again, for each step of a generator)."""
        self.token = _attach(self.span)

    def leave(self) -> None:
        """Restore the caller's context."""
        _detach(self.token)
        self.token = None

    def __enter__(self) -> _Invocation:
        self.enter()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        self.leave()
        if exc is not None:
            _fail(self.spec, self.span, exc)
        else:
            _succeed(self.spec, self.span, self.result)


def _start(spec: CallSpec, args: tuple[Any, ...], kwargs: dict[str, Any], parent: Any = None) -> Span | None:
    try:
        attrs = spec.attributes.copy()
        if spec.capture_io:
            attrs[s.INPUT_VALUE] = to_json(spec.binder.bind(args, kwargs))
            attrs[s.INPUT_MIME] = s.MIME_JSON
        if args and getattr(args[0], "__callctx_agent__", False):
            attrs[s.AGENT] = args[0].name
        rt = active.current()
        if rt is None:
            return active.fallback.start_span(spec.span_name, context=parent, attributes=attrs)
        if rt.session_id is not None:
            attrs[s.CONVERSATION] = rt.session_id
        return rt.start_span(spec.span_name, attrs, parent)
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
            put_attributes(span, attrs)
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
        span.set_status(Status(StatusCode.ERROR, failure_line(exc)))
        span.end()
    except Exception:
        log.exception("callctx: could not record the failure of %s", spec.name)


# ---- wrappers ----------------------------------------------------------------------------------
def _wrap_sync(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with _Invocation(spec, args, kwargs) as inv:
            inv.result = fn(*args, **kwargs)
        return inv.result

    return call


def _wrap_async(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        with _Invocation(spec, args, kwargs) as inv:
            inv.result = await fn(*args, **kwargs)
        return inv.result

    return call


class _Iteration:
    """A generator's span: it covers the whole iteration; between items the caller's context
    is current again. Collects the first ``MAX_ITEMS`` items as the recorded output."""

    __slots__ = ("inv", "items", "parent", "sent", "thrown")

    def __init__(self) -> None:
        self.parent = otel_context.get_current()
        self.inv: _Invocation | None = None
        self.items: list[Any] = []
        self.sent: Any = None
        self.thrown: BaseException | None = None

    def step(self, spec: CallSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Invocation:
        """Before resuming the generator: the span (started on the first step) made current."""
        if self.inv is None:
            self.inv = _Invocation(spec, args, kwargs, self.parent)
        self.inv.enter()
        return self.inv

    def got(self, spec: CallSpec, item: Any) -> None:
        """The generator yielded ``item``."""
        self.inv.leave()  # type: ignore[union-attr]
        self.thrown = None
        if spec.capture_io and len(self.items) < MAX_ITEMS:
            self.items.append(item)

    def finish(self, value: Any = None) -> None:
        """The generator returned (``value``, else what it yielded is the output)."""
        inv = self.inv
        inv.leave()  # type: ignore[union-attr]
        _succeed(inv.spec, inv.span, value if value is not None else (self.items or None))  # type: ignore[union-attr]

    def fail(self, exc: BaseException) -> None:
        inv = self.inv
        inv.leave()  # type: ignore[union-attr]
        _fail(inv.spec, inv.span, exc)  # type: ignore[union-attr]

    def resume(self) -> tuple[str, Any]:
        """How to resume: ("throw", exc) for an exception the consumer threw in, else ("send", value)."""
        return ("throw", self.thrown) if self.thrown is not None else ("send", self.sent)


def _wrap_gen(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        it = _Iteration()
        gen = fn(*args, **kwargs)
        while True:
            it.step(spec, args, kwargs)
            how, value = it.resume()
            try:
                item = gen.throw(value) if how == "throw" else gen.send(value)
            except StopIteration as stop:
                it.finish(stop.value)
                return stop.value
            except BaseException as e:
                it.fail(e)
                raise
            it.got(spec, item)
            try:
                it.sent = yield item
            except GeneratorExit:  # the consumer stopped early (break, close(), garbage collection)
                it.step(spec, args, kwargs)
                try:
                    gen.close()
                except BaseException as e:
                    it.fail(e)
                    raise
                it.finish()
                raise
            except BaseException as e:  # noqa: BLE001 - thrown in by the consumer: forwarded into the generator
                it.thrown = e

    return call


def _wrap_async_gen(fn: Callable[..., Any], spec: CallSpec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        it = _Iteration()
        agen = fn(*args, **kwargs)
        while True:
            it.step(spec, args, kwargs)
            how, value = it.resume()
            try:
                item = await (agen.athrow(value) if how == "throw" else agen.asend(value))
            except StopAsyncIteration:
                it.finish()
                return
            except BaseException as e:
                it.fail(e)
                raise
            it.got(spec, item)
            try:
                it.sent = yield item
            except GeneratorExit:
                it.step(spec, args, kwargs)
                try:
                    await agen.aclose()
                finally:
                    it.finish()
                raise
            except BaseException as e:  # noqa: BLE001 - thrown in by the consumer: forwarded into the generator
                it.thrown = e

    return call


class TracedCall:
    """An agentic call made by the runtime itself (a top-level turn), as a context manager:
    set ``output`` inside the block; it becomes the call's output when the block ends."""

    def __init__(self, name: str, inputs: dict[str, Any], **attributes: Any) -> None:
        def _signature() -> None:  # the spec only needs a name and a signature
            return None

        spec = _spec(
            _signature,
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
        self._inv: _Invocation | None = None

    def __enter__(self) -> TracedCall:
        self._inv = _Invocation(self.spec, (), self.inputs)
        self._inv.enter()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        inv = self._inv
        assert inv is not None
        inv.result = self.output
        inv.__exit__(kind, exc, tb)

"""Export shaping: what leaves the process is redacted and bounded; the local log is not.

:class:`Shaper` holds the rules: secrets redacted (:mod:`callctx.export.redact`) in everything a
span carries (its name; attribute keys and values, nested maps included; event names and
attributes; link attributes; the status message; the resource, ``service.name`` included;
the instrumentation scope; trace state), values under keys that name a secret replaced whole,
long values cut with JSON kept valid, each span capped. The texts a model call was sent
(``callctx.blob`` events, for receivers that rebuild calls) are redacted whole and never cut:
one longer than a value travels in parts, on the span while it has room and then on carrier
spans (:mod:`callctx.projection.texts`). :class:`ShapingExporter` wraps the
exporter callctx adds (and splits batches so no export request passes 4 MiB, gRPC's default
message limit); :class:`ShapingProcessor` wraps the processors of a provider callctx joins, so
the program's own exporters get shaped copies too. Everything works on copies: the projection
and the event log always see full io, since they are fed by their own processor.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, TraceState

from callctx.export.redact import REDACTED, Memo, Redactor, SecretPattern
from callctx.projection.events import Origin, SpanEvent
from callctx.projection.schema import BLOB_EVENT
from callctx.projection.spans import SpanData
from callctx.projection.texts import CARRIER, split

__all__ = ["REDACTED", "Shaper", "ShapingExporter", "ShapingProcessor", "shrink_json", "truncate"]

log = logging.getLogger(__name__)

MAX_REQUEST = 4 * 1024 * 1024 - 64 * 1024  # keep headroom under 4 MiB for the envelope
MAX_TEXTS = 16 * 1024 * 1024  # characters of texts one model call sends to receivers, at most
_too_long_said = False  # a call whose texts pass MAX_TEXTS is named once per process

_T = TypeVar("_T")


class Shaper:
    """The rules for what leaves the process: secrets redacted (:class:`Redactor`, on raw and
    JSON-encoded text alike), values cut to ``max_value`` characters with JSON kept valid, a
    span capped at ``max_span`` bytes.

    ``secrets``: your own patterns, searched for besides the defaults; ``redactor``: a whole
    :class:`Redactor` of your own instead. Immutable once built (it remembers the resources it
    shaped, each always to the same result): share one between threads.
    """

    def __init__(
        self,
        *,
        secrets: Sequence[str | re.Pattern[str] | SecretPattern] = (),
        redactor: Redactor | None = None,
        max_value: int = 16 * 1024,
        max_span: int = 256 * 1024,
    ) -> None:
        self.redactor = redactor if redactor is not None else Redactor(extra=secrets)
        self.max_value = max_value
        self.max_span = max_span
        # a resource is the same on every span of a process: shaped once (by its content)
        self._resources: Memo[bytes, Resource] = Memo(64)
        self._resource_maps: Memo[bytes, dict[str, Any]] = Memo(64)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        return self.redactor.redact(text)

    def value(self, key: str, value: Any, limit: int) -> Any:
        """An attribute value under ``key``, redacted (whole under a key that names a secret) and
        cut to ``limit`` characters; sequences item by item, mappings as :meth:`attributes`."""
        if isinstance(value, str):
            return truncate(self.redactor.redact_value(key, value), limit)
        if isinstance(value, (list, tuple)):
            return tuple(self.value(key, v, limit) for v in value)
        if isinstance(value, Mapping):
            return self.attributes(value, limit)
        return self.redactor.redact_value(key, value)

    def attributes(self, attrs: Mapping[str, Any] | None, limit: int) -> dict[str, Any]:
        """Attributes shaped: keys redacted, values as :meth:`value`, at any depth."""
        return self.redactor.redact_mapping(attrs, lambda k, v: self.value(k, v, limit))

    def span(self, span: ReadableSpan) -> ReadableSpan:
        """A shaped copy of an SDK span (name, attributes, events, links, status, resource,
        instrumentation scope, trace state); the span itself is untouched. Texts it has no
        room for are left out: :meth:`spans` gives them on carrier spans."""
        return self.spans(span)[0]

    def spans(self, span: ReadableSpan) -> list[ReadableSpan]:
        """The shaped copy of an SDK span (see :meth:`span`), then, when the texts it carries do
        not all fit in ``max_span``, the carrier spans that hold the rest."""
        limit = self.max_value
        own = [e for e in span.events if e.name != BLOB_EVENT]
        names = [self.redactor.redact_name(e.name) for e in own]
        while True:
            attrs = self.attributes(span.attributes, limit)
            events = [
                Event(n, self.attributes(e.attributes, limit), e.timestamp) for n, e in zip(names, own, strict=True)
            ]
            size = _size(attrs) + sum(_size(e.attributes) + len(e.name) for e in events)
            if size <= self.max_span or limit <= 256:
                break
            limit //= 2  # too big: cut every value harder until the span fits
        if size > self.max_span:
            events = events[: max(0, len(events) // 4)]  # last resort
            size = _size(attrs) + sum(_size(e.attributes) + len(e.name) for e in events)
        pieces = self._pieces(span, [(e.attributes, e.timestamp) for e in span.events if e.name == BLOB_EVENT])
        placed, rest = _fill(pieces, self.max_span - size)
        events = [Event(BLOB_EVENT, a, ts) for a, ts in placed] + events
        status = span.status
        if status.description:
            status = Status(status.status_code, truncate(self.redact(status.description), self.max_value))
        context = self._context(span.context) if span.context is not None else None
        resource, scope = self._resource(span.resource), self._scope(span.instrumentation_scope)
        shaped = ReadableSpan(
            name=self.redactor.redact_name(span.name),
            context=context,
            parent=span.parent,
            resource=resource,
            attributes=attrs,
            events=events,
            links=[Link(self._context(lk.context), self.attributes(lk.attributes, limit)) for lk in span.links],
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=scope,
        )
        if not rest or context is None:
            return [shaped]
        carriers = [shaped]
        while rest:
            placed, rest = _fill(rest, self.max_span, at_least_one=True)
            carriers.append(ReadableSpan(
                name=CARRIER,
                context=SpanContext(context.trace_id, random.getrandbits(63) + 1, False, context.trace_flags),
                parent=context,
                resource=resource,
                attributes={},
                events=[Event(BLOB_EVENT, a, ts) for a, ts in placed],
                kind=SpanKind.INTERNAL,
                start_time=span.start_time,
                end_time=span.start_time,
                instrumentation_scope=scope,
            ))  # fmt: skip
        return carriers

    def _pieces(self, span: Any, texts: list[tuple[Any, int | None]]) -> list[tuple[dict[str, Any], int | None]]:
        """The events that carry a span's texts: each redacted whole, then split into values."""
        global _too_long_said
        out: list[tuple[dict[str, Any], int | None]] = []
        total = 0
        for attrs, ts in texts:
            h, text = (attrs or {}).get("hash"), (attrs or {}).get("text")
            if not isinstance(h, str) or not isinstance(text, str):
                continue
            total += len(text)
            out.extend((piece, ts) for piece in split(h, self.redact(text), self.max_value))
        if total > MAX_TEXTS:
            if not _too_long_said:
                _too_long_said = True
                log.warning(
                    "callctx: the texts of %r (span %s) take %d characters, more than the %d sent to "
                    "receivers; they are not sent, so a receiver cannot rebuild that call (said once)",
                    span.name, _span_hex(span), total, MAX_TEXTS,
                )  # fmt: skip
            return []
        return out

    def span_data(self, span: SpanData) -> SpanData:
        """A shaped copy of a format-neutral span (export files): name, attributes, events,
        links, error, resource and scope."""
        limit = self.max_value
        name = self.redactor.redact_name
        texts = self._pieces(span, [(e.attributes, e.time_ns) for e in span.events if e.name == BLOB_EVENT])
        return msgspec.structs.replace(
            span,
            name=name(span.name),
            attributes=self.attributes(span.attributes, limit),
            events=[SpanEvent(BLOB_EVENT, ts or 0, a) for a, ts in texts]
            + [
                SpanEvent(name(e.name), e.time_ns, self.attributes(e.attributes, limit), e.dropped_attributes)
                for e in span.events
                if e.name != BLOB_EVENT
            ],
            error=truncate(self.redact(span.error), limit) if span.error else span.error,
            resource=_memo(self._resource_maps, span.resource, lambda: self.attributes(span.resource, limit)),
            scope=name(span.scope) if span.scope else span.scope,
            links=[
                msgspec.structs.replace(
                    lk, attributes=self.attributes(lk.attributes, limit), trace_state=self._state(lk.trace_state)
                )
                for lk in span.links
            ],
            origin=self._origin(span.origin) if span.origin is not None else None,
        )

    def _origin(self, origin: Origin) -> Origin:
        """A span's trace state, scope version and attributes and schema URLs, shaped as the
        SDK span's are (:meth:`_scope`, :meth:`_context`)."""
        name = self.redactor.redact_name
        return msgspec.structs.replace(
            origin,
            trace_state=self._state(origin.trace_state),
            scope_version=name(origin.scope_version) if origin.scope_version else "",
            scope_attributes=self.attributes(origin.scope_attributes, self.max_value),
            scope_schema_url=self.redact(origin.scope_schema_url) if origin.scope_schema_url else "",
            resource_schema_url=self.redact(origin.resource_schema_url) if origin.resource_schema_url else "",
        )

    def _state(self, header: str) -> str:
        """A W3C ``tracestate`` header with its values redacted; an entry whose key is a secret,
        or whose value no longer fits the W3C rules, is dropped."""
        if not header:
            return header
        state = TraceState.from_header([header])
        return self._shaped_state(state).to_header() if state else ""

    def _resource(self, resource: Resource | None) -> Resource | None:
        if resource is None:
            return None

        def shaped() -> Resource:
            attrs = self.attributes(resource.attributes, self.max_value)
            schema_url = self.redact(resource.schema_url)
            if attrs == resource.attributes and schema_url == resource.schema_url:
                return resource
            return Resource(attrs, schema_url)

        return _memo(self._resources, (dict(resource.attributes), resource.schema_url), shaped)

    def _scope(self, scope: InstrumentationScope | None) -> InstrumentationScope | None:
        if scope is None:
            return None
        name = self.redactor.redact_name(scope.name)
        version = self.redactor.redact_name(scope.version) if scope.version else scope.version
        schema_url = self.redact(scope.schema_url) if scope.schema_url else scope.schema_url
        attrs = self.attributes(scope.attributes, self.max_value)
        if (name, version, schema_url, attrs) == (scope.name, scope.version, scope.schema_url, scope.attributes):
            return scope
        return InstrumentationScope(name, version, schema_url, attrs)

    def _context(self, context: SpanContext) -> SpanContext:
        """The context with its trace state's values redacted (an entry whose key is a secret,
        or whose value no longer fits the W3C rules, is dropped)."""
        if not context.trace_state:
            return context
        state = self._shaped_state(context.trace_state)
        if state is context.trace_state:
            return context
        return SpanContext(context.trace_id, context.span_id, context.is_remote, context.trace_flags, state)

    def _shaped_state(self, state: TraceState) -> TraceState:
        """``state`` with its values redacted (itself when nothing changed)."""
        name = self.redactor.redact_name
        shaped = [(k, name(v)) for k, v in state.items() if name(k) == k]
        if shaped == list(state.items()):
            return state
        return TraceState(shaped)


def _fill(
    pieces: list[tuple[dict[str, Any], int | None]], room: int, *, at_least_one: bool = False
) -> tuple[list[tuple[dict[str, Any], int | None]], list[tuple[dict[str, Any], int | None]]]:
    """(the first pieces that fit in ``room`` bytes, the rest); ``at_least_one``: the first is
    taken even when it alone is larger."""
    used = 0
    for i, (attrs, _) in enumerate(pieces):
        used += _size(attrs) + len(BLOB_EVENT)
        if used > room and not (at_least_one and i == 0):
            return pieces[:i], pieces[i:]
    return pieces, []


def _span_hex(span: Any) -> str:
    context = getattr(span, "context", None)
    if context is not None and hasattr(context, "span_id"):
        return format(context.span_id, "016x")
    return str(getattr(span, "span_id", "?"))


def _memo(memo: Memo[bytes, _T], content: object, make: Callable[[], _T]) -> _T:
    """``make()``, remembered in ``memo`` by ``content`` (as MessagePack: types told apart)."""
    try:
        key = msgspec.msgpack.encode(content)
    except (TypeError, ValueError, OverflowError):  # something MessagePack does not hold: not remembered
        return make()
    return memo.get(key, make)


def _size(attrs: Any) -> int:
    total = 0
    for k, v in (attrs or {}).items():
        total += len(k) + 8
        if isinstance(v, str):
            total += len(v.encode("utf-8", errors="replace"))
        elif isinstance(v, (list, tuple)):
            total += sum(len(str(x)) + 4 for x in v)
        elif isinstance(v, Mapping):
            total += _size(v)
        else:
            total += 8
    return total


def estimated_size(span: ReadableSpan) -> int:
    """Bytes the span takes in an OTLP request, roughly (upper-ish bound)."""
    return 200 + len(span.name) + _size(span.attributes) + sum(_size(e.attributes) + 32 for e in span.events)


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` characters; JSON stays valid JSON."""
    if len(text) <= limit:
        return text
    head = text.lstrip()[:1]
    if head in ("{", "[", '"'):
        try:
            value = json.loads(text)
        except ValueError:
            pass
        else:
            return shrink_json(value, limit)
    return text[: max(0, limit - 1)] + "…"


def shrink_json(value: Any, limit: int) -> str:
    """Encode ``value`` in at most ``limit`` characters, cutting its longest strings and then
    its longest lists and objects; the result always parses."""
    out = json.dumps(value, ensure_ascii=False)
    cap = max(8, limit // 2)
    while len(out) > limit and cap >= 8:
        value = _cut_strings(value, cap)
        out = json.dumps(value, ensure_ascii=False)
        cap //= 2
    keep = 64
    while len(out) > limit and keep >= 1:
        value = _cut_items(value, keep)
        out = json.dumps(value, ensure_ascii=False)
        keep //= 2
    if len(out) > limit:
        out = json.dumps(out[: max(0, limit // 2)] + "…", ensure_ascii=False)[:limit]
        if not out.endswith('"'):
            out = json.dumps("…")
    return out


def _cut_strings(v: Any, cap: int) -> Any:
    if isinstance(v, str):
        return v if len(v) <= cap else v[:cap] + "…"
    if isinstance(v, list):
        return [_cut_strings(x, cap) for x in v]
    if isinstance(v, dict):
        return {k: _cut_strings(x, cap) for k, x in v.items()}
    return v


def _cut_items(v: Any, keep: int) -> Any:
    if isinstance(v, list):
        kept = [_cut_items(x, keep) for x in v[:keep]]
        return [*kept, f"… {len(v) - keep} more"] if len(v) > keep else kept
    if isinstance(v, dict):
        items = list(v.items())
        cut = {k: _cut_items(x, keep) for k, x in items[:keep]}
        if len(items) > keep:
            cut["…"] = f"{len(items) - keep} more"
        return cut
    return v


class ShapingExporter(SpanExporter):
    """Wraps an exporter: shapes every span, and keeps each request under ``max_request``."""

    def __init__(self, inner: SpanExporter, shaper: Shaper | None = None, *, max_request: int = MAX_REQUEST) -> None:
        self.inner = inner
        self.shaper = shaper or Shaper()
        self.max_request = max_request

    def batches(self, spans: Iterable[ReadableSpan]) -> list[list[ReadableSpan]]:
        out: list[list[ReadableSpan]] = [[]]
        size = 0
        for sp in spans:
            n = estimated_size(sp)
            if out[-1] and size + n > self.max_request:
                out.append([])
                size = 0
            out[-1].append(sp)
            size += n
        return [b for b in out if b]

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            shaped = [out for sp in spans for out in self.shaper.spans(sp)]
        except Exception:  # a shaping bug must not crash the export thread: drop the batch, loudly
            log.exception("callctx: shaping failed; %d spans not exported", len(spans))
            return SpanExportResult.FAILURE
        result = SpanExportResult.SUCCESS
        for batch in self.batches(shaped):
            if self.inner.export(batch) is not SpanExportResult.SUCCESS:
                result = SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class ShapingProcessor(SpanProcessor):
    """Wraps a span processor of a TracerProvider callctx joined (the program's own exporters:
    Phoenix, Logfire, Langfuse...): it is handed shaped copies of ended spans, never the
    originals. Threading and errors as the processor it wraps; a span that cannot be shaped
    is dropped for it (and logged), never passed on unshaped."""

    def __init__(self, inner: SpanProcessor, shaper: Shaper) -> None:
        self.inner = inner
        self.shaper = shaper

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        try:
            shaped = self.shaper.spans(span)
        except Exception:
            log.exception("callctx: shaping failed; span %r not passed to %s", span.name, type(self.inner).__name__)
            return
        for sp in shaped:  # the span, then the carriers of its texts
            self.inner.on_end(sp)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

"""Export shaping: what leaves the process is redacted and bounded; the local log is not.

A span exporter wrapper. It redacts secrets (API keys, bearer tokens, passwords; patterns are
configurable) in every string attribute and event, truncates long values while keeping JSON
valid, caps each span's size, and splits batches so no export request passes 4 MiB (gRPC's
default message limit). It works on copies: the projection and the event log always see full
io, since they are fed by their own processor.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
MAX_REQUEST = 4 * 1024 * 1024 - 64 * 1024  # keep headroom under 4 MiB for the envelope

DEFAULT_SECRETS: tuple[str, ...] = (
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}",  # OpenAI / Anthropic keys
    r"\bAIza[0-9A-Za-z_\-]{35}\b",  # Google API keys
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",  # GitHub tokens
    r"\bxox[baprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWTs
    r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)",  # bearer tokens
    # key = value / "key": "value" for the usual secret names: only the value goes
    r"(?i)\b(?:password|passwd|pwd|secret|api_key|apikey|api-key|access_token|token)[\"']?\s{0,3}[:=]\s{0,3}[\"']?"
    r"(?P<secret>[^\s\"',;}]{4,})",
)
SECRET_KEYS = re.compile(r"(?i)(authorization|password|passwd|secret|api[_-]?key|cookie|token)$")


class Shaper:
    """The rules: which patterns to redact, and how long values and spans may be."""

    def __init__(
        self,
        *,
        secrets: Sequence[str | re.Pattern[str]] = DEFAULT_SECRETS,
        max_value: int = 16 * 1024,
        max_span: int = 256 * 1024,
    ) -> None:
        self.patterns = [p if isinstance(p, re.Pattern) else re.compile(p) for p in secrets]
        self.max_value = max_value
        self.max_span = max_span

    def redact(self, text: str) -> str:
        """Replace each match (or only its ``secret`` group, when the pattern names one)."""
        for p in self.patterns:
            text = p.sub(_redact_group, text) if "secret" in p.groupindex else p.sub(REDACTED, text)
        return text

    def value(self, key: str, value: Any, limit: int) -> Any:
        if isinstance(value, str):
            if SECRET_KEYS.search(key):
                return REDACTED
            return truncate(self.redact(value), limit)
        if isinstance(value, (list, tuple)):
            return tuple(self.value(key, v, limit) for v in value)
        return value

    def attributes(self, attrs: Any, limit: int) -> dict[str, Any]:
        return {k: self.value(k, v, limit) for k, v in (attrs or {}).items()}

    def span(self, span: ReadableSpan) -> ReadableSpan:
        limit = self.max_value
        while True:
            attrs = self.attributes(span.attributes, limit)
            events = [Event(e.name, self.attributes(e.attributes, limit), e.timestamp) for e in span.events]
            size = _size(attrs) + sum(_size(e.attributes) + len(e.name) for e in events)
            if size <= self.max_span or limit <= 256:
                break
            limit //= 2  # too big: cut every value harder until the span fits
        if size > self.max_span:
            events = events[: max(0, len(events) // 4)]  # last resort: the texts riding on events go first
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=attrs,
            events=events,
            links=span.links,
            kind=span.kind,
            status=span.status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )


def _redact_group(m: re.Match[str]) -> str:
    whole, start = m.group(0), m.start()
    return whole[: m.start("secret") - start] + REDACTED + whole[m.end("secret") - start :]


def _size(attrs: Any) -> int:
    total = 0
    for k, v in (attrs or {}).items():
        total += len(k) + 8
        if isinstance(v, str):
            total += len(v.encode("utf-8", errors="replace"))
        elif isinstance(v, (list, tuple)):
            total += sum(len(str(x)) + 4 for x in v)
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
        cut = [_cut_items(x, keep) for x in v[:keep]]
        return [*cut, f"… {len(v) - keep} more"] if len(v) > keep else cut
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
            shaped = [self.shaper.span(sp) for sp in spans]
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

"""A decoded request: the one shape every decoder of spans gives, and the checks they share.

Every source of complete spans (OTLP protobuf and OTLP/JSON in :mod:`.otlp`, Jaeger JSON in
:mod:`.jaeger`, the trace stores ``callctx import`` pulls from) decodes into a :class:`Batch`:
per span kept, a :class:`Received` holding the records the event log and the fold take (the
texts it carried as :class:`Blob`, and parts of longer ones as :class:`~.texts.BlobPart`, a
:class:`SpanStarted`, a :class:`SpanEnded`) and the few
facts the receiver's index lists besides; and the spans rejected, counted, each with its
reason (OTLP partial success). :func:`received` is the one place a complete span's parts
become its records; :func:`records` lists a batch's records in order.

The checks at the edge, one rule for every decoder: a trace id is 16 bytes and a span id 8,
neither all zeros (:func:`span_ids`; ids written as text are exact hex, either case,
:func:`hex_bytes`); a parent id or a link that fails the same check is dropped (the span is
kept, a root; :func:`link_ids`); times are integers from 0 to 2**64 - 1 nanoseconds
(:func:`time_ns`), and an end before the start is read as the start.

Pure functions of their input, no shared state: any thread may call them. Errors: a check
that fails raises :class:`InvalidSpan`; a decoder catches it, rejects that span and keeps the
rest.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .errors import BadInput
from .events import (
    Blob,
    Dropped,
    Origin,
    Record,
    SpanEnded,
    SpanEvent,
    SpanKind,
    SpanLink,
    SpanStarted,
    SpanStatus,
    error_text,
)
from .schema import BLOB_EVENT, INTERRUPTED
from .texts import Assembler, BlobPart, part_of

ZERO_TRACE = bytes(16)  # not a trace id
ZERO_SPAN = bytes(8)  # not a span id
MAX_TIME = (1 << 63) - 1
"""The latest time a span may name, in ns since the epoch (April 2262): OTLP allows unsigned 64-bit
times, but what the stores hold (SQLite, ClickHouse's DateTime64) is signed; a span past it is
rejected at the edge with the reason, so nothing after the decoder meets a time it cannot hold."""


class InvalidSpan(BadInput):
    """A span that cannot be folded (bad ids, bad times, values nested too deeply): rejected,
    the rest of its request kept."""


class Received(msgspec.Struct, gc=False):
    """One span as received: its records for the log and the fold, and what the index lists."""

    start_ns: int
    span_id: str
    trace_id: str
    blobs: list[Blob]  # the texts it carried, verified (written before its start)
    started: SpanStarted
    ended: SpanEnded | None  # None: it never ended where it was recorded (kept open)
    end_ns: int
    status: SpanStatus  # as sent
    error: str | None  # the status message as sent
    parts: list[BlobPart] = msgspec.field(default_factory=list)  # parts of longer texts (see .texts)


class Batch(msgspec.Struct):
    """The spans of one request (or file, or store answer), and those rejected."""

    spans: list[Received]
    rejected: int = 0
    errors: list[str] = msgspec.field(default_factory=list)

    @property
    def message(self) -> str:
        return rejection_message(self.rejected, self.errors)


def rejection_message(rejected: int, errors: list[str]) -> str:
    """The OTLP partial-success message: how many spans were rejected, and the first reasons."""
    if not rejected:
        return ""
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"{rejected} spans rejected: " + "; ".join(errors[:3]) + more


def records(batch: Batch, texts: Assembler | None = None) -> list[Record]:
    """Every record of a batch, in its order (each span's texts, start, then end). ``texts``
    collects the parts of longer texts: each is listed, as a whole text, with the span its last
    part came on (without it, parts are left out)."""
    out: list[Record] = []
    for r in batch.spans:
        out.extend(r.blobs)
        if texts is not None:
            for p in r.parts:
                whole = texts.add(p)
                if whole is not None:
                    out.append(whole)
        out.append(r.started)
        if r.ended is not None:
            out.append(r.ended)
    return out


def received(
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    start_ns: int,
    end_ns: int,
    attributes: dict[str, Any],
    status: SpanStatus,
    error: str | None,
    kind: SpanKind,
    events: list[SpanEvent],
    resource: dict[str, Any],
    scope: str | None,
    links: list[SpanLink],
    origin: Origin | None = None,
    dropped: Dropped | None = None,
) -> Received:
    """A complete span's records, from its parts as checked: its texts (``callctx.blob``
    events whose text still matches its hash; one altered on the way, redacted or cut, is not
    trusted), its start, and its end (none when the span says it was interrupted where it was
    recorded, so replay reads it as interrupted again)."""
    if end_ns < start_ns:
        end_ns = start_ns
    blobs: list[Blob] = []
    parts: list[BlobPart] = []
    if events:
        kept = []
        for ev in events:
            if ev.name == BLOB_EVENT:
                carried = part_of(ev.attributes)
                if isinstance(carried, Blob):
                    blobs.append(carried)
                elif carried is not None:
                    parts.append(carried)
            else:
                kept.append(ev)
    else:
        kept = events
    started = SpanStarted(trace_id, span_id, parent_id, name, start_ns, attributes, kind, resource, scope, origin)
    if attributes.get(INTERRUPTED) is True:
        ended = None
    else:
        why = error_text(error, ((e.name, e.attributes) for e in events)) if status == "error" else None
        ended = SpanEnded(trace_id, span_id, end_ns, status, why, {}, kept, links, dropped)
    return Received(start_ns, span_id, trace_id, blobs, started, ended, end_ns, status, error, parts)


# ---- the checks at the edge -------------------------------------------------------------------
def span_ids(trace: bytes, span: bytes, parent: bytes) -> tuple[str, str, str | None]:
    """A span's trace, span and parent ids as lowercase hex. :class:`InvalidSpan` when the
    trace id is not 16 bytes or the span id not 8, or either is all zeros; a parent id that
    fails the same check (or is empty) is None: a broken parent link, the span kept as a root."""
    if len(trace) != 16:
        raise InvalidSpan("trace id must be 32 hex characters")
    if trace == ZERO_TRACE:
        raise InvalidSpan("trace id is all zeros")
    if len(span) != 8:
        raise InvalidSpan("span id must be 16 hex characters")
    if span == ZERO_SPAN:
        raise InvalidSpan("span id is all zeros")
    return trace.hex(), span.hex(), parent.hex() if len(parent) == 8 and parent != ZERO_SPAN else None


def link_ids(trace: bytes, span: bytes) -> tuple[str, str] | None:
    """A link's trace and span ids as hex, or None when either fails the check of
    :func:`span_ids` (the link is dropped, its attributes never read; the span is kept)."""
    if len(trace) != 16 or len(span) != 8 or trace == ZERO_TRACE or span == ZERO_SPAN:
        return None
    return trace.hex(), span.hex()


def hex_bytes(text: str) -> bytes | None:
    """The bytes a string of hex digits (either case) spells; None when it is anything else
    (``bytes.fromhex`` alone would skip spaces)."""
    try:
        raw = bytes.fromhex(text)
    except (ValueError, TypeError):
        return None
    return raw if 2 * len(raw) == len(text) else None


def text_bytes(value: object, what: str) -> bytes:
    """The bytes of an id written as hex text (Jaeger, Phoenix): :class:`InvalidSpan` when it
    is not exactly hex; its size is for :func:`span_ids` to check."""
    raw = hex_bytes(value) if isinstance(value, str) else None
    if raw is None:
        raise InvalidSpan(f"{what} id {str(value)[:40]!r} is not hex")
    return raw


def time_ns(value: object, what: str) -> int:
    """A time in nanoseconds: an integer from 0 to ``MAX_TIME``; :class:`InvalidSpan` otherwise."""
    if type(value) is not int or not 0 <= value <= MAX_TIME:
        raise InvalidSpan(f"{what} must be a whole number of ns from 0 to 2**63 - 1 (1970 to 2262)")
    return value


def span_label(raw: bytes) -> str:
    """How a rejection names its span: its id in hex (at most 32 characters), or ``?``."""
    return raw.hex()[:32] or "?"


__all__ = [
    "Batch",
    "InvalidSpan",
    "Received",
    "hex_bytes",
    "link_ids",
    "received",
    "records",
    "rejection_message",
    "span_ids",
    "span_label",
    "text_bytes",
    "time_ns",
]

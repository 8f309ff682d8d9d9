"""The events the fold consumes: one per span start, one per span end.

Every feed (the in-process span processor, the event log, OTLP) speaks these two records, so
the fold never knows where a span came from. They are msgspec Structs in a tagged union: the
log stores them as one JSON object per line, tagged by ``"e"``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Status = Literal["unset", "ok", "error"]


class SpanStarted(msgspec.Struct, tag="start", tag_field="e", omit_defaults=True, frozen=True):
    """A span began. Carries identity and the attributes set at creation (the input)."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    name: str = ""
    start_ns: int = 0
    attributes: dict[str, Any] = {}


class SpanEnded(msgspec.Struct, tag="end", tag_field="e", omit_defaults=True, frozen=True):
    """A span ended. Carries the status and the attributes added or changed since the start."""

    trace_id: str
    span_id: str
    end_ns: int = 0
    status: Status = "unset"
    error: str | None = None
    attributes: dict[str, Any] = {}


class LogHeader(msgspec.Struct, tag="log", tag_field="e", omit_defaults=True, frozen=True):
    """First record of every log file: the format version, so later readers can migrate."""

    version: int = 1
    created_ns: int = 0


class Blob(msgspec.Struct, tag="blob", tag_field="e", frozen=True):
    """A text stored once per log under its sha256 (what model calls were sent is recorded as
    hashes of these)."""

    hash: str
    text: str


class Collapsed(msgspec.Struct, tag="collapse", tag_field="e", frozen=True):
    """The oldest finished calls of one list in the tree, up to and including ``through``, now
    read as a single summary line. Ratcheted: a later record for the same list only ever moves
    ``through`` forward. Written by the runtime when a call's tree went over its token
    budget, so a replay collapses exactly where the live run did."""

    trace_id: str
    tree: str  # the session or trace the list belongs to
    holder: str | None  # the call whose children collapse; None for the tree's top calls
    through_start_ns: int
    through_span_id: str
    summary: str


Event = SpanStarted | SpanEnded | Collapsed
Record = SpanStarted | SpanEnded | Collapsed | LogHeader | Blob

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)


def encode(record: Record) -> bytes:
    """One log line (newline included)."""
    return _encoder.encode(record) + b"\n"


def decode(line: bytes | str) -> Record:
    """Decode one record; raises ``msgspec.DecodeError`` / ``ValidationError`` on bad input."""
    return _decoder.decode(line)


def decode_lines(buf: bytes) -> list[Record]:
    """Decode a buffer of complete newline-terminated records in one call (the replay fast path)."""
    return _decoder.decode_lines(buf)


def complete_span(
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    start_ns: int,
    end_ns: int,
    attributes: dict[str, Any],
    status: Status = "unset",
    error: str | None = None,
) -> tuple[SpanStarted, SpanEnded]:
    """The two events for a span that arrives already finished (OTLP, Jaeger, files)."""
    return (
        SpanStarted(trace_id, span_id, parent_id, name, start_ns, attributes),
        SpanEnded(trace_id, span_id, end_ns, status, error),
    )

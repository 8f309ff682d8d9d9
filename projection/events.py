"""The events the fold consumes: one per span start, one per span end.

Every feed (the in-process span processor, the event log, OTLP) speaks these two records, so
the fold never knows where a span came from. They are msgspec Structs in a tagged union: the
log stores them as one JSON object per line, tagged by ``"e"``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Status = Literal["unset", "ok", "error"]


class SpanEvent(msgspec.Struct, frozen=True, omit_defaults=True):
    """Something that happened during a span (an exception, a log line)."""

    name: str
    time_ns: int = 0
    attributes: dict[str, Any] = {}


class SpanLink(msgspec.Struct, frozen=True, omit_defaults=True):
    """A link from a span to another span, maybe in another trace."""

    trace_id: str
    span_id: str
    attributes: dict[str, Any] = {}


class SpanStarted(msgspec.Struct, tag="start", tag_field="e", omit_defaults=True, frozen=True):
    """A span began. Carries identity and the attributes set at creation (the input).

    ``kind`` is the OTLP span kind (0 unspecified, 1 internal, 2 server, 3 client, 4 producer,
    5 consumer); ``resource`` the attributes of the process that made it (``service.name``...),
    written on the first span of a trace from each process, or on every span that arrived from
    elsewhere (empty: the same as its parent's)."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    name: str = ""
    start_ns: int = 0
    attributes: dict[str, Any] = {}
    kind: int = 0
    resource: dict[str, Any] = {}
    scope: str | None = None

    @property
    def service(self) -> str | None:
        name = self.resource.get("service.name")
        return name if isinstance(name, str) else None


class SpanEnded(msgspec.Struct, tag="end", tag_field="e", omit_defaults=True, frozen=True):
    """A span ended. Carries the status, the attributes added or changed since the start, and
    the span's events and links (texts recorded for model calls travel as ``Blob`` records)."""

    trace_id: str
    span_id: str
    end_ns: int = 0
    status: Status = "unset"
    error: str | None = None
    attributes: dict[str, Any] = {}
    events: list[SpanEvent] = []
    links: list[SpanLink] = []


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


def decode_lines(buf: bytes | bytearray | memoryview) -> list[Record]:
    """Decode a buffer of complete newline-terminated records in one call (the replay fast path)."""
    return _decoder.decode_lines(buf)




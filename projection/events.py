"""The events the fold consumes: one per span start, one per span end; and the two OTLP
vocabularies they carry, a span's status and its kind.

Every feed (the in-process span processor, the event log, OTLP) speaks these two records, so
the fold never knows where a span came from. They are msgspec Structs in a tagged union: the
log stores them as one JSON object per line, tagged by ``"e"``, fields at their default left
out.

Span kind: the six values of OTLP's ``SpanKind`` enum, defaulting to :data:`KIND_INTERNAL`
(what the SDK writes when a span names none) in every struct and codec. Codecs read an
unspecified (0) or unknown kind as internal. Logs written before the kind had this default
left out ``kind: 0``, which only the in-process processor wrote, for its internal spans
(every other writer wrote the kind it read, 1 to 5, explicitly, and every reader took 0 for
internal): the same records read as internal today, so old logs read as they meant. A kind
outside the six values (only a sender breaking OTLP could have had one recorded) no longer
validates: the log reader skips that record as unreadable, with a warning.

Pure data and pure functions: any thread may use them. Errors: :func:`decode` raises
``msgspec.DecodeError`` / ``ValidationError`` on bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

import msgspec

SpanStatus = Literal["unset", "ok", "error"]
"""OTLP's span status code, by name (a reader's run status, running or interrupted, is not this)."""

SpanKind = Literal[0, 1, 2, 3, 4, 5]
"""OTLP's span kind: unspecified, internal, server, client, producer, consumer."""
KIND_UNSPECIFIED: Final = 0
KIND_INTERNAL: Final = 1
KIND_SERVER: Final = 2
KIND_CLIENT: Final = 3
KIND_PRODUCER: Final = 4
KIND_CONSUMER: Final = 5
DEFAULT_KIND: Final = KIND_INTERNAL
KINDS: Final[dict[int, SpanKind]] = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}
"""Every kind a codec keeps as read; any other number (0, unknown) it reads as :data:`DEFAULT_KIND`."""


class SpanEvent(msgspec.Struct, frozen=True, omit_defaults=True):
    """Something that happened during a span (an exception, a log line). ``dropped_attributes``:
    how many attributes its sender dropped (OTLP's count)."""

    name: str
    time_ns: int = 0
    attributes: dict[str, Any] = {}
    dropped_attributes: int = 0


class SpanLink(msgspec.Struct, frozen=True, omit_defaults=True):
    """A link from a span to another span, maybe in another trace, with the linked context's
    W3C ``trace_state`` and OTLP ``flags``, and the attributes its sender dropped."""

    trace_id: str
    span_id: str
    attributes: dict[str, Any] = {}
    trace_state: str = ""
    flags: int = 0
    dropped_attributes: int = 0


class Origin(msgspec.Struct, frozen=True, omit_defaults=True):
    """What OTLP carries about a span's context and provenance beyond what the fold reads
    (its W3C ``trace_state``, its ``flags``, its instrumentation scope's version, attributes and
    schema URL, its resource's schema URL and dropped attributes), kept so that the span
    leaves (``callctx export``) with all it came with."""

    trace_state: str = ""
    flags: int = 0
    scope_version: str = ""
    scope_attributes: dict[str, Any] = {}
    scope_schema_url: str = ""
    resource_schema_url: str = ""
    resource_dropped_attributes: int = 0


class Dropped(msgspec.Struct, frozen=True, omit_defaults=True, array_like=True):
    """How many attributes, events and links a span's sender dropped (OTLP's counts)."""

    attributes: int = 0
    events: int = 0
    links: int = 0


class SpanStarted(msgspec.Struct, tag="start", tag_field="e", omit_defaults=True, frozen=True):
    """A span began. Carries identity and the attributes set at creation (the input).

    ``kind`` is the OTLP span kind (:data:`SpanKind`, internal unless said); ``resource`` the
    attributes of the process that made it (``service.name``...), written on the first span of
    a trace from each process, or on every span that arrived from elsewhere (empty: the same as
    its parent's)."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    name: str = ""
    start_ns: int = 0
    attributes: dict[str, Any] = {}
    kind: SpanKind = DEFAULT_KIND
    resource: dict[str, Any] = {}
    scope: str | None = None
    origin: Origin | None = None

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
    status: SpanStatus = "unset"
    error: str | None = None
    attributes: dict[str, Any] = {}
    events: list[SpanEvent] = []
    links: list[SpanLink] = []
    dropped: Dropped | None = None


def failure_line(error: BaseException) -> str:
    """A failed span's status description: ``Type: first line of the message``, or the type
    alone when the exception says nothing."""
    first = str(error).strip().splitlines()
    return f"{type(error).__name__}: {first[0].strip()}" if first else type(error).__name__


def error_text(description: str | None, events: Iterable[tuple[str, Mapping[str, Any] | None]]) -> str | None:
    """The one-line reason a failed span's :class:`SpanEnded` carries: its status description,
    else its last recorded exception (``type: message``), never with a colon and nothing after
    it. ``events`` are (name, attributes) pairs."""
    text = description.strip() if description else ""
    if text.endswith(":"):  # the SDK's "Type: message" for an exception without a message
        text = text[:-1].rstrip()
    if text:
        return text
    for name, attributes in reversed(list(events)):
        if name == "exception":
            a = attributes or {}
            kind = a.get("exception.type", "")
            msg = a.get("exception.message", "")
            return f"{kind}: {msg}" if kind and msg else str(kind or msg or "exception")
    return None


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

"""The read model: what every reader asks of a trace store, and the records it answers with.

:class:`Store` is the one protocol the command line, ``callctx serve``'s read API and the
debugger page read through. It knows nothing of files or SQL: the local implementation
(:class:`callctx.store.local.LocalStore`: the event log and its SQLite index) is one store;
a shared one (ClickHouse) is another, behind the same methods.

What a store answers:

* sessions and traces (:meth:`Store.trees`), model calls of every dialect
  (:meth:`Store.calls`, :meth:`Store.call`), each filtered (:class:`Filter`), paged and
  totalled (:class:`Page`); calls numbered from 1 in start order
  (:func:`callctx.projection.calls.call_order`), whatever the filter;
* a tree's spans, a level at a time (:meth:`Store.spans`), with what the model calls under
  each cost and the first words of each one's input (:class:`SpanRow`); one span's input,
  output and error whole (:meth:`Store.span_io`);
* the call tree as YAML: a session's or trace's whole tree (:meth:`Store.tree`), and the tree
  as a span saw it when it started or as it stands (:meth:`Store.span_tree`), folded by the
  projection from the trace's records;
* what a model call was sent (:meth:`Store.recorded`): the manifest and the texts it names,
  for callctx's own calls, or the span's attributes and events, for other instrumentations';
  :mod:`callctx.store.contexts` turns them into a verified or reconstructed context;
* a cursor that moves whenever anything new arrived (:meth:`Store.state`), for live readers.

Threading: every method may be called from any thread. Errors: :class:`NotFound` for a call,
tree or span the store does not hold; :class:`BadInput` for a parameter out of range;
:class:`StoreUnavailable` when the store cannot be read at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic, Literal, Protocol, TypeVar

import msgspec

from callctx.components.cache_ledger import Entry as CacheEntry
from callctx.projection.calls import ModelCall, RunStatus, Usage
from callctx.projection.dialects import Kind, input_of, output_of
from callctx.projection.errors import BadInput, CallctxError, NotFound
from callctx.projection.events import SpanEnded, SpanStarted
from callctx.projection.render import View

T = TypeVar("T")

MAX_LIMIT = 1000  # rows per page at most


class StoreUnavailable(CallctxError):
    """The store cannot be read: unreachable, missing, or not what it should be."""


class Filter(msgspec.Struct, frozen=True, kw_only=True):
    """What a listing keeps; every field optional, times in ns since the epoch. ``tree`` (a
    session, or a trace outside any) applies to calls; trees are their own key."""

    service: str | None = None
    session: str | None = None
    tree: str | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    function: str | None = None
    model: str | None = None
    status: RunStatus | None = None
    ours: bool | None = None  # calls only: True, callctx's own; False, other instrumentations'
    agent_in: tuple[str, ...] | None = None  # calls only: made in one of these agentic calls (span ids)


ANY = Filter()  # keeps everything


class Page(msgspec.Struct, Generic[T], kw_only=True):
    """One page of a listing: ``items`` from ``offset``, and how many match in all."""

    total: int
    offset: int
    limit: int
    items: list[T]

    @property
    def next_offset(self) -> int | None:
        end = self.offset + self.limit
        return end if end < self.total else None


def bounds(offset: int, limit: int) -> tuple[int, int]:
    """A page's offset and limit, checked (:class:`BadInput`) and capped at ``MAX_LIMIT``."""
    if offset < 0 or limit < 0:
        raise BadInput("offset and limit must not be negative")
    return offset, min(limit, MAX_LIMIT)


class Spend(msgspec.Struct, frozen=True, array_like=True):
    """Tokens spent on one model of one provider (what a cost is priced from)."""

    provider: str | None
    model: str | None
    usage: Usage


class TreeRow(msgspec.Struct, kw_only=True):
    """A session (root calls sharing a conversation id), or a trace outside any session."""

    key: str
    kind: Literal["session", "trace"]
    services: list[str]
    start_ns: int
    end_ns: int
    status: RunStatus
    spans: int
    calls: int
    usage: Usage
    spend: list[Spend]
    models: list[str]
    functions: list[str]  # the names of its root spans, the first 20, by start


class SpanRow(msgspec.Struct, kw_only=True):
    """One span of a tree, as a level of the tree lists it; ``usage`` and ``spend`` are those
    of the model calls in its subtree, ``call`` its number when it is a model call, ``excerpt``
    the first words of its input on one line (agentic and tool spans; see
    :mod:`callctx.store.excerpts`)."""

    span_id: str
    trace_id: str
    parent_id: str | None
    name: str
    kind: Kind
    function: str
    status: RunStatus
    error: str | None
    start_ns: int
    end_ns: int | None
    children: int
    call: int | None
    ours: bool  # a model call callctx recorded (its context is rebuilt and verified)
    usage: Usage
    spend: list[Spend]
    excerpt: str | None = None


class SpanIO(msgspec.Struct, kw_only=True):
    """One span whole, as a reader opens it: what it received (``input``) and returned
    (``output``), each with its type (``*_mime``), and how it ended (``status``, ``error``);
    ``tree`` is the session or trace it is listed under."""

    span_id: str
    trace_id: str
    tree: str
    parent_id: str | None
    name: str
    kind: Kind
    function: str
    status: RunStatus
    error: str | None
    start_ns: int
    end_ns: int | None
    input: str | None
    input_mime: str | None
    output: str | None
    output_mime: str | None

    @classmethod
    def of(
        cls, start: SpanStarted, end: SpanEnded | None, *, tree: str, kind: Kind, function: str, status: RunStatus
    ) -> SpanIO:
        """A span from its records: its io read as the fold reads it (the end's, else the start's)."""
        layers = [end.attributes, start.attributes] if end is not None else [start.attributes]
        found_in: tuple[str | None, str | None] = (None, None)
        found_out: tuple[str | None, str | None] = (None, None)
        for attrs in layers:
            if found_in[0] is None:
                found_in = input_of(kind, attrs)
            if found_out[0] is None:
                found_out = output_of(kind, attrs)
        return cls(
            span_id=start.span_id, trace_id=start.trace_id, tree=tree, parent_id=start.parent_id, name=start.name,
            kind=kind, function=function, status=status, error=end.error if end is not None else None,
            start_ns=start.start_ns, end_ns=end.end_ns if end is not None else None, input=found_in[0],
            input_mime=_text(found_in[1]), output=found_out[0], output_mime=_text(found_out[1]),
        )  # fmt: skip


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class Facets(msgspec.Struct, kw_only=True):
    """What a reader can filter by: every service, agentic function and model the store holds."""

    services: list[str]
    functions: list[str]
    models: list[str]


SourceKind = Literal["log", "table"]


class StoreState(msgspec.Struct, kw_only=True):
    """Where the store stands: ``cursor`` moves whenever anything new arrived; ``kind`` says
    what ``source`` names: an event log (a path) or a table."""

    cursor: int
    calls: int
    trees: int
    source: str
    spans: int
    exists: bool  # False: nothing to read yet (a log not created yet, an empty table)
    damaged: int  # records that could not be read
    ledger: int = 0  # calls the cache ledger covers (it catches up in the background)
    kind: SourceKind = "log"


class Recorded(msgspec.Struct, kw_only=True):
    """What a model call was sent, as the store holds it: for callctx's own calls the
    manifest's texts by hash (those the store has); for any call, its span's records; for a
    call another instrumentation's wrapper span is above (an agent framework's ``call_llm``
    around the client's request), the wrapper's records too (``around``), which may carry
    the messages the call's own span does not."""

    call: ModelCall
    texts: dict[str, str]
    start: SpanStarted
    end: SpanEnded | None
    around: tuple[SpanStarted, SpanEnded | None] | None = None


class Store(Protocol):
    """The read model (see the module docstring for the contract)."""

    def state(self) -> StoreState: ...

    def facets(self) -> Facets: ...

    def trees(self, f: Filter = ANY, *, offset: int = 0, limit: int = 100) -> Page[TreeRow]: ...

    def calls(self, f: Filter = ANY, *, offset: int = 0, limit: int = 100) -> Page[ModelCall]: ...

    def call(self, n: int) -> ModelCall:
        """Call ``n`` (from 1); :class:`NotFound` saying the range when there is none."""
        ...

    def spans(self, tree: str, parent: str | None = None, *, offset: int = 0, limit: int = 100) -> Page[SpanRow]:
        """The root spans of ``tree`` (``parent`` None), or the children of ``parent``, by start."""
        ...

    def span_io(self, span_id: str) -> SpanIO:
        """Span ``span_id`` whole: its input, output and error (:class:`NotFound` when unknown)."""
        ...

    def ancestors(self, span_id: str) -> list[str]:
        """``span_id``'s ancestors the store holds, the outermost first, then the span itself."""
        ...

    def tree(self, key: str, *, render_range: int | None = None, view: View = "model") -> str:
        """The whole call tree of a session or trace, seen from outside any call (``view``:
        ``model``, the tree a model is shown; ``all``, every span people read, tool calls too)."""
        ...

    def span_tree(self, span_id: str, *, final: bool = False, render_range: int | None = None) -> str:
        """The tree as call ``span_id`` saw it when it started (``final``: as it stands)."""
        ...

    def recorded(self, call: ModelCall) -> Recorded:
        """What ``call`` was sent: its span's records and the texts its manifest names."""
        ...

    def recorded_many(self, calls: Sequence[ModelCall]) -> list[Recorded]:
        """:meth:`recorded` of several calls, read in one go (their texts shared)."""
        ...

    def cache(self, n: int) -> CacheEntry:
        """Call ``n``'s line of the cache ledger: what the provider reported, what its rules
        made possible, and why it read less (:mod:`callctx.components.cache_ledger`)."""
        ...

    def cache_ready(self, n: int) -> CacheEntry | None:
        """:meth:`cache` if the ledger has reached call ``n`` already, else None at once
        (``state().ledger`` says how far it is)."""
        ...

    def cache_many(self, numbers: Sequence[int]) -> list[CacheEntry]:
        """:meth:`cache` of several calls (a tree's, for its chart)."""
        ...

    def texts(self, hashes: Iterable[str]) -> dict[str, str]:
        """The texts the store holds under these hashes (those it has), read in one go."""
        ...

    def close(self) -> None: ...


def check_status(status: str | None) -> RunStatus | None:
    """A status filter as given, checked (:class:`BadInput`)."""
    if status in (None, ""):
        return None
    if status not in ("running", "ok", "error", "interrupted"):
        raise BadInput("status is ok, error, running or interrupted")
    return status  # type: ignore[return-value]


def out_of_range(n: int, total: int) -> NotFound:
    """The error for call ``n`` when the store holds ``total`` calls."""
    held = f"1 to {total}" if total else "no calls yet"
    return NotFound(f"call {n} is out of range ({held})")


__all__ = [
    "ANY",
    "MAX_LIMIT",
    "Facets",
    "Filter",
    "Page",
    "Recorded",
    "SourceKind",
    "SpanIO",
    "SpanRow",
    "Spend",
    "Store",
    "StoreState",
    "StoreUnavailable",
    "TreeRow",
    "bounds",
    "check_status",
    "out_of_range",
]

"""callctx's listings of a traces table, kept beside it in the same ClickHouse: one row per
trace, per model call and per text, derived from the table's rows by the local store's own
rules, and read by SQL.

Why derived: a listing needs facts a single row does not hold (a call's function is its nearest
agentic ancestor; a framework's wrapper span is not a call of its own; a provider SDK's span
under one of our calls is part of it; a session spans traces). Every one of those rules is
trace-local, so a trace is derived whole: its rows read back (bounded by its time range),
indexed by a :class:`~callctx.store.held.HeldStore` (the local store's index: the same rules,
nowhere written twice), and its trace, calls and texts written as rows.

Tables (``T`` the traces table's name), each a ``ReplacingMergeTree`` keyed by what it lists,
with ``version`` the time of the derivation:

* ``T_callctx_traces``: per trace, the rows of ``T`` it was derived from (``rows``), the tree it
  is listed under and every tree it belongs to, times, counts, services, agentic functions
  and root spans.
* ``T_callctx_calls``: per model call, what listings filter by and show (``ModelCall``), and the
  wrapper span above it, if any.
* ``T_callctx_blobs``: per text hash, the span whose ``callctx.blob`` event carries it.

A reader takes, per trace, the latest version only, and only the calls of that version: a
trace derived again (more of its spans arrived) replaces its calls whole. A trace is stale when
``T`` holds another number of its rows than its row says (:meth:`Derived.catch_up` finds and
derives those, oldest first, a bounded batch at a time). Whoever writes ``T`` (the Collector's
exporter, ``callctx serve --store``), any reader brings the listings up to date; two readers
deriving the same trace at once write the same rows.

Threading: :meth:`Derived.catch_up` is serialised by a lock; reads need none. Errors:
:class:`~callctx.store.model.StoreUnavailable` when the tables cannot be made (a user without
``CREATE TABLE`` and ``INSERT`` on the database: the message says so) or read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any, Final

import msgspec

from callctx.projection.calls import ModelCall
from callctx.projection.otel_traces import decode_rows
from callctx.store.model import ANY

from .held import HeldStore
from .index import TraceSummary
from .model import StoreUnavailable
from .otel_table import OtelTable

log = logging.getLogger(__name__)

ROWS_PER_BATCH: Final = 20_000  # rows of the traces table derived at a time
STALE_PER_ROUND: Final = 5_000  # stale traces looked up at a time

_DDL: Final = (
    """CREATE TABLE IF NOT EXISTS {traces} (
    TraceId String, rows UInt64, version UInt64, session Nullable(String), tree String, trees Array(String),
    first Int64, last Int64, spans UInt32, ended UInt32, errors UInt32, services Array(String),
    functions Array(String), roots Array(Tuple(Int64, String, String))
) ENGINE = ReplacingMergeTree(version) ORDER BY TraceId""",
    """CREATE TABLE IF NOT EXISTS {calls} (
    TraceId String, SpanId String, version UInt64, ParentSpanId Nullable(String), start_ns Int64,
    end_ns Nullable(Int64), status LowCardinality(String), error Nullable(String), service Nullable(String),
    session Nullable(String), tree String, model Nullable(String), provider Nullable(String),
    function Nullable(String), path Array(String), manifest Nullable(String), input Nullable(Int64),
    output Nullable(Int64), cache_read Nullable(Int64), cache_write Nullable(Int64), around String
) ENGINE = ReplacingMergeTree(version) ORDER BY (TraceId, SpanId)""",
    """CREATE TABLE IF NOT EXISTS {blobs} (
    hash String, TraceId String, SpanId String, version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY hash""",
)


class Stale(msgspec.Struct, frozen=True, array_like=True):
    """A trace whose listing is behind the table: its rows there, and their first and last start."""

    trace_id: str
    rows: int
    first_ns: int
    last_ns: int


class Derived:
    """The derived tables beside one traces table (see the module docstring)."""

    def __init__(self, table: OtelTable) -> None:
        self.table = table
        db = f"`{table.database}`"
        self.traces = f"{db}.`{table.table}_callctx_traces`"
        self.calls = f"{db}.`{table.table}_callctx_calls`"
        self.blobs = f"{db}.`{table.table}_callctx_blobs`"
        self.rejected = 0  # rows that could not be read as spans, this process
        self.errors: list[str] = []  # the first few of their reasons
        self._lock = threading.Lock()

    # the latest version of each trace, and the calls of that version only
    @property
    def current_traces(self) -> str:
        return f"(SELECT * FROM {self.traces} FINAL)"

    @property
    def current_calls(self) -> str:
        return (
            f"(SELECT * FROM {self.calls} FINAL WHERE (TraceId, version) IN "
            f"(SELECT TraceId, version FROM {self.traces} FINAL))"
        )

    def create(self) -> None:
        try:
            for ddl in _DDL:
                self.table.conn.command(ddl.format(traces=self.traces, calls=self.calls, blobs=self.blobs))
        except StoreUnavailable as e:
            raise StoreUnavailable(
                f"cannot make callctx's listings beside {self.table.database}.{self.table.table} "
                f"(it needs CREATE TABLE and INSERT on {self.table.database}): {e}"
            ) from None

    # ---- catching up ----------------------------------------------------------------------------
    def stale(self, limit: int = STALE_PER_ROUND) -> list[Stale]:
        """Traces whose rows in the table are not the ones their listing was derived from,
        the oldest first."""
        rows = self.table.conn.query(
            "SELECT b.TraceId AS t, b.c AS c, b.lo AS lo, b.hi AS hi FROM (SELECT TraceId, count() AS c, "
            "toUnixTimestamp64Nano(min(Timestamp)) AS lo, toUnixTimestamp64Nano(max(Timestamp)) AS hi "
            f"FROM {self.table.name} WHERE TraceId != '' GROUP BY TraceId) AS b "
            f"LEFT ANY JOIN (SELECT TraceId, argMax(rows, version) AS r FROM {self.traces} GROUP BY TraceId) AS d "
            f"ON b.TraceId = d.TraceId WHERE d.r != b.c ORDER BY lo, t LIMIT {int(limit)}"
        )
        return [Stale(r["t"], int(r["c"]), int(r["lo"]), int(r["hi"])) for r in rows]

    def catch_up(self) -> int:
        """Derive every stale trace; how many were derived."""
        done = 0
        with self._lock:
            while True:
                stale = self.stale()
                if not stale:
                    return done
                for batch in _batches(stale, ROWS_PER_BATCH):
                    self.derive(batch)
                    done += len(batch)
                if len(stale) < STALE_PER_ROUND:
                    return done

    def derive(self, traces: Sequence[Stale]) -> None:
        """Read the rows of ``traces`` and write their listings (calls, texts, then traces:
        a reader never finds a trace's new version without its calls)."""
        ids = [t.trace_id for t in traces]
        table = self.table
        raw = table.conn.query(
            f"{table.select()} FROM {table.name} WHERE TraceId IN {{t:Array(String)}} AND Timestamp BETWEEN "
            "fromUnixTimestamp64Nano({lo:Int64}) AND fromUnixTimestamp64Nano({hi:Int64}) "
            f"ORDER BY Timestamp, SpanId LIMIT {ROWS_PER_BATCH * 4}",
            {"t": ids, "lo": min(t.first_ns for t in traces), "hi": max(t.last_ns for t in traces)},
        )
        read: dict[str, int] = {}
        for r in raw:
            read[r["TraceId"]] = read.get(r["TraceId"], 0) + 1
        batch = decode_rows(table.row(r) for r in raw)
        if batch.rejected:
            self.rejected += batch.rejected
            if len(self.errors) < 5:
                self.errors.extend(batch.errors[: 5 - len(self.errors)])
            log.warning("callctx: %d rows of %s could not be read as spans: %s", batch.rejected, table.name,
                        batch.errors[0] if batch.errors else "")  # fmt: skip
        version = time.time_ns()
        held = HeldStore(table.source)
        try:
            held.add(batch)
            summaries = held.index.trace_summaries()
            total = held.index.count_calls()
            _, calls = held.index.calls(ANY, 0, max(total, 1))
            wrapped = held.index.wrappers([c.parent_id for c in calls if c.parent_id])
        finally:
            held.close()
        blobs = [
            {"hash": b.hash, "TraceId": r.trace_id, "SpanId": r.span_id, "version": version}
            for r in batch.spans for b in r.blobs
        ]  # fmt: skip
        self._insert(self.calls, (_call_row(c, version, c.parent_id in wrapped) for c in calls))
        self._insert(self.blobs, blobs)
        rows_of = {t.trace_id: max(t.rows, read.get(t.trace_id, 0)) for t in traces}
        derived = {s.trace_id for s in summaries}
        trace_rows = [_trace_row(s, rows_of.get(s.trace_id, read.get(s.trace_id, 0)), version) for s in summaries]
        # a trace none of whose rows could be read as spans: listed as empty, so it is not read again
        trace_rows += [_empty_row(t, rows_of[t], version) for t in ids if t not in derived]
        self._insert(self.traces, trace_rows)

    def _insert(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        lines = [msgspec.json.encode(r) for r in rows]
        if lines:
            self.table.conn.insert(table, b"\n".join(lines))


def _batches(stale: Sequence[Stale], rows: int) -> Iterable[list[Stale]]:
    out: list[Stale] = []
    n = 0
    for t in stale:
        if out and n + t.rows > rows:
            yield out
            out, n = [], 0
        out.append(t)
        n += t.rows
    if out:
        yield out


def _call_row(c: ModelCall, version: int, wrapped: bool) -> dict[str, Any]:
    u = c.usage
    return {
        "TraceId": c.trace_id, "SpanId": c.span_id, "version": version, "ParentSpanId": c.parent_id,
        "start_ns": c.start_ns, "end_ns": c.end_ns, "status": c.status, "error": c.error, "service": c.service,
        "session": c.session, "tree": c.tree or c.trace_id, "model": c.model, "provider": c.provider,
        "function": c.function, "path": c.path, "manifest": c.manifest, "input": u.input, "output": u.output,
        "cache_read": u.cache_read, "cache_write": u.cache_write, "around": c.parent_id if wrapped else "",
    }  # fmt: skip


def _trace_row(s: TraceSummary, rows: int, version: int) -> dict[str, Any]:
    return {
        "TraceId": s.trace_id, "rows": rows, "version": version, "session": s.session, "tree": s.tree,
        "trees": s.trees, "first": s.first, "last": s.last, "spans": s.spans, "ended": s.ended, "errors": s.errors,
        "services": s.services, "functions": s.functions, "roots": s.roots,
    }  # fmt: skip


def _empty_row(trace_id: str, rows: int, version: int) -> dict[str, Any]:
    return _trace_row(
        TraceSummary(trace_id=trace_id, session=None, tree=trace_id, first=0, last=0, spans=0, ended=0, errors=0,
                     services=[], trees=[], functions=[], roots=[]),
        rows, version,
    )  # fmt: skip


__all__ = ["ROWS_PER_BATCH", "Derived", "Stale"]

"""callctx's listings of a traces table, kept beside it in the same ClickHouse: one row per
trace, per model call and per text, derived from the table's rows by the local store's own
rules, and read by SQL.

Why derived: a listing needs facts a single row does not hold (a call's function is its nearest
agentic ancestor; a framework's wrapper span is not a call of its own; a provider SDK's span
under one of our calls is part of it; a session spans traces). Every one of those rules is
trace-local, so a trace is derived whole: its rows read back (bounded by its time range),
indexed by a :class:`~callctx.store.held.HeldStore` (the local store's index: the same rules,
nowhere written twice), and its trace, calls and texts written as rows. A writer that hands its
rows to :meth:`Derived.remember` (``callctx serve --store`` does) spares the read: a stale trace
whose every row in the table is one this process remembers is derived from those rows, the
same values the table would answer (Map variant; times within what ``DateTime64(9)`` holds).

Tables (``T`` the traces table's name), each a ``ReplacingMergeTree`` keyed by what it lists,
with ``version`` the time of the derivation:

* ``T_callctx_traces``: per trace, the rows of ``T`` it was derived from (``rows``), the rules
  it was derived by (``rules``, :data:`RULES`), every tree it is listed under (``trees``: those
  of its root calls, or its own id when it has none) and the first of them (``tree``), times,
  counts, services, agentic functions and root spans.
* ``T_callctx_calls``: per model call, what listings filter by and show (``ModelCall``: its
  function, the agentic call it ran in and the first words of that one's input too), and the
  wrapper span above it, if any. A table made before those two columns existed gets them
  (:data:`_ADDED`; a call derived before reads them as unknown until its trace is derived again).
* ``T_callctx_blobs``: per text hash, the span whose ``callctx.blob`` event carries it.
* ``T_callctx_parts``: per part of a longer text (its hash and part number), the span that
  carries that part (see :mod:`callctx.projection.texts`).

A reader takes, per trace, the latest version only, and only the calls of that version: a
trace derived again (more of its spans arrived) replaces its calls whole. A trace is stale when
``T`` holds another number of its rows than its row says (:meth:`Derived.catch_up` finds and
derives those, oldest first, a bounded batch at a time), and so is a trace derived by other
rules than this version's (derived again, as an index of another version is made anew).
Whoever writes ``T`` (the Collector's exporter, ``callctx serve --store``), any reader brings
the listings up to date; two readers deriving the same trace at once write the same rows.

Threading: :meth:`Derived.catch_up` is serialised by a lock; reads need none. Errors:
:class:`~callctx.store.model.StoreUnavailable` when the tables cannot be made (a user without
``CREATE TABLE`` and ``INSERT`` on the database: the message says so) or read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, Final

import msgspec

from callctx.projection.calls import ModelCall
from callctx.projection.otel_traces import TraceRow, decode_rows
from callctx.store.model import ANY

from .held import HeldStore
from .index import TraceSummary
from .model import StoreUnavailable
from .otel_table import MAX_TIME, OtelTable

log = logging.getLogger(__name__)

ROWS_PER_BATCH: Final = 20_000  # rows of the traces table derived at a time
REMEMBERED_ROWS: Final = 200_000  # rows a writer's process keeps for deriving, at most
STALE_PER_ROUND: Final = 5_000  # stale traces looked up at a time
RULES: Final = 1  # the rules a trace's listing is derived by: a trace derived by others is derived again

_DDL: Final = (
    """CREATE TABLE IF NOT EXISTS {traces} (
    TraceId String, rows UInt64, version UInt64, rules UInt32, session Nullable(String), tree String,
    trees Array(String),
    first Int64, last Int64, spans UInt32, ended UInt32, errors UInt32, services Array(String),
    functions Array(String), roots Array(Tuple(Int64, String, String))
) ENGINE = ReplacingMergeTree(version) ORDER BY TraceId""",
    """CREATE TABLE IF NOT EXISTS {calls} (
    TraceId String, SpanId String, version UInt64, ParentSpanId Nullable(String), start_ns Int64,
    end_ns Nullable(Int64), status LowCardinality(String), error Nullable(String), service Nullable(String),
    session Nullable(String), tree String, model Nullable(String), provider Nullable(String),
    function Nullable(String), path Array(String), manifest Nullable(String), input Nullable(Int64),
    output Nullable(Int64), cache_read Nullable(Int64), cache_write Nullable(Int64), around String,
    agent_span Nullable(String), excerpt Nullable(String)
) ENGINE = ReplacingMergeTree(version) ORDER BY (TraceId, SpanId)""",
    """CREATE TABLE IF NOT EXISTS {blobs} (
    hash String, TraceId String, SpanId String, version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY hash""",
    """CREATE TABLE IF NOT EXISTS {parts} (
    hash String, part UInt32, parts UInt32, TraceId String, SpanId String, version UInt64
) ENGINE = ReplacingMergeTree(version) ORDER BY (hash, part)""",
)


_ADDED: Final = (  # columns added since the first version of the tables, for tables made before
    "ALTER TABLE {traces} ADD COLUMN IF NOT EXISTS rules UInt32 DEFAULT 0 AFTER version",
    "ALTER TABLE {calls} ADD COLUMN IF NOT EXISTS agent_span Nullable(String)",
    "ALTER TABLE {calls} ADD COLUMN IF NOT EXISTS excerpt Nullable(String)",
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
        self.parts = f"{db}.`{table.table}_callctx_parts`"
        self.rejected = 0  # rows that could not be read as spans, this process
        self.errors: list[str] = []  # the first few of their reasons
        self._lock = threading.Lock()
        self._remembered: OrderedDict[str, list[TraceRow]] = OrderedDict()  # trace -> rows, oldest first
        self._remembered_rows = 0
        self._written: set[str] = set()  # traces remembered since written_since() last asked
        self._written_rows = 0
        self._memory_lock = threading.Lock()

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
            for ddl in (*_DDL, *_ADDED):
                self.table.conn.command(
                    ddl.format(traces=self.traces, calls=self.calls, blobs=self.blobs, parts=self.parts)
                )
        except StoreUnavailable as e:
            raise StoreUnavailable(
                f"cannot make callctx's listings beside {self.table.database}.{self.table.table} "
                f"(it needs CREATE TABLE and INSERT on {self.table.database}): {e}"
            ) from None

    # ---- a writer's rows ------------------------------------------------------------------------
    def remember(self, rows: Sequence[TraceRow]) -> None:
        """Rows this process has just written to the table (Map variant): kept, the latest
        :data:`REMEMBERED_ROWS` at most, so that deriving their traces needs no read."""
        if self.table.variant != "map":
            return
        with self._memory_lock:
            kept = self._remembered
            self._written_rows += len(rows)
            for r in rows:
                self._written.add(r.trace_id)
                if not _exact(r):  # the table holds it otherwise: its trace is read back
                    self._remembered_rows -= len(kept.pop(r.trace_id, ()))
                    continue
                found = kept.get(r.trace_id)
                if found is None:
                    kept[r.trace_id] = [r]
                else:
                    found.append(r)
                    kept.move_to_end(r.trace_id)
                self._remembered_rows += 1
            while self._remembered_rows > REMEMBERED_ROWS and kept:
                _, gone = kept.popitem(last=False)
                self._remembered_rows -= len(gone)

    def written_since(self) -> tuple[list[str], int]:
        """The traces :meth:`remember` was given rows of since the last call, and how many rows
        (a reader compares them with how much the table grew: when they match, only those
        traces can be stale)."""
        with self._memory_lock:
            traces, rows = sorted(self._written), self._written_rows
            self._written, self._written_rows = set(), 0
        return traces, rows

    def _recalled(self, traces: Sequence[Stale]) -> tuple[list[TraceRow], list[Stale]]:
        """The remembered rows of those ``traces`` that the table holds no others of; and the
        traces to read."""
        rows: list[TraceRow] = []
        to_read: list[Stale] = []
        with self._memory_lock:
            for t in traces:
                found = self._remembered.get(t.trace_id)
                if found is not None and len(found) == t.rows:
                    rows.extend(found)
                else:
                    to_read.append(t)
        return rows, to_read

    # ---- catching up ----------------------------------------------------------------------------
    def stale(self, limit: int = STALE_PER_ROUND, among: Sequence[str] | None = None) -> list[Stale]:
        """Traces whose rows in the table are not the ones their listing was derived from,
        the oldest first (``among``: of those traces only)."""
        where, params = "TraceId != ''", None
        if among is not None:
            where, params = "TraceId IN {among:Array(String)}", {"among": list(among)}
        rows = self.table.conn.query(
            "SELECT b.TraceId AS t, b.c AS c, b.lo AS lo, b.hi AS hi FROM (SELECT TraceId, count() AS c, "
            "toUnixTimestamp64Nano(min(Timestamp)) AS lo, toUnixTimestamp64Nano(max(Timestamp)) AS hi "
            f"FROM {self.table.name} WHERE {where} GROUP BY TraceId) AS b "
            "LEFT ANY JOIN (SELECT TraceId, argMax(rows, version) AS r, argMax(rules, version) AS k "
            f"FROM {self.traces} WHERE {where} GROUP BY TraceId) AS d ON b.TraceId = d.TraceId "
            f"WHERE d.r != b.c OR d.k != {RULES} ORDER BY lo, t LIMIT {int(limit)}",
            params,
        )
        return [Stale(r["t"], int(r["c"]), int(r["lo"]), int(r["hi"])) for r in rows]

    def catch_up(self, among: Sequence[str] | None = None) -> int:
        """Derive every stale trace (``among``: of those traces only); how many were derived."""
        done = 0
        with self._lock:
            for at in range(0, len(among), STALE_PER_ROUND) if among is not None else (0,):
                some = among[at : at + STALE_PER_ROUND] if among is not None else None
                while True:
                    stale = self.stale(among=some)
                    if not stale:
                        break
                    for batch in _batches(stale, ROWS_PER_BATCH):
                        self.derive(batch)
                        done += len(batch)
                    if len(stale) < STALE_PER_ROUND or some is not None:
                        break
        return done

    def derive(self, traces: Sequence[Stale]) -> None:
        """Read the rows of ``traces`` and write their listings (calls, texts, then traces:
        a reader never finds a trace's new version without its calls)."""
        ids = [t.trace_id for t in traces]
        table = self.table
        rows, to_read = self._recalled(traces)
        if to_read:
            raw = table.conn.query(
                f"{table.select()} FROM {table.name} WHERE TraceId IN {{t:Array(String)}} AND Timestamp BETWEEN "
                "fromUnixTimestamp64Nano({lo:Int64}) AND fromUnixTimestamp64Nano({hi:Int64}) "
                f"ORDER BY Timestamp, SpanId LIMIT {ROWS_PER_BATCH * 4}",
                {"t": [t.trace_id for t in to_read], "lo": min(t.first_ns for t in to_read),
                 "hi": max(t.last_ns for t in to_read)},
            )  # fmt: skip
            rows.extend(table.row(r) for r in raw)
        rows.sort(key=_table_order)
        read: dict[str, int] = {}
        for r in rows:
            read[r.trace_id] = read.get(r.trace_id, 0) + 1
        batch = decode_rows(rows)
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
        self._insert(self.parts, (
            {"hash": p.hash, "part": p.part, "parts": p.parts, "TraceId": r.trace_id, "SpanId": r.span_id,
             "version": version}
            for r in batch.spans for p in r.parts
        ))  # fmt: skip
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


def _table_order(r: TraceRow) -> tuple[int, str]:
    return (r.start_ns, r.span_id)  # ORDER BY Timestamp, SpanId


def _exact(r: TraceRow) -> bool:
    """Does the table give back this row's times as they are (none clamped)?"""
    return 0 <= r.start_ns <= MAX_TIME and all(0 <= e.time_ns <= MAX_TIME for e in r.events)


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
        "agent_span": c.agent_span, "excerpt": c.excerpt,
    }  # fmt: skip


def _trace_row(s: TraceSummary, rows: int, version: int) -> dict[str, Any]:
    return {
        "TraceId": s.trace_id, "rows": rows, "version": version, "rules": RULES, "session": s.session, "tree": s.tree,
        "trees": s.trees, "first": s.first, "last": s.last, "spans": s.spans, "ended": s.ended, "errors": s.errors,
        "services": s.services, "functions": s.functions, "roots": s.roots,
    }  # fmt: skip


def _empty_row(trace_id: str, rows: int, version: int) -> dict[str, Any]:
    return _trace_row(
        TraceSummary(trace_id=trace_id, session=None, tree=trace_id, first=0, last=0, spans=0, ended=0, errors=0,
                     services=[], trees=[], functions=[], roots=[]),
        rows, version,
    )  # fmt: skip


__all__ = ["ROWS_PER_BATCH", "RULES", "Derived", "Stale"]

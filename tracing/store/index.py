"""What the read API lists, kept as spans arrive: every model call and every trace, with the
facts a team filters by (service, session, time, function, model, status) and their token
usage, in SQLite beside the receiver's log (in memory without a log). Requests page through
it; nothing re-reads the log to list. A call's context is read from the log by the byte range
of its records, which the index keeps.

Each request's spans go in in one transaction: their rows are made in Python first, inserted
by ``executemany`` with statements SQLite keeps prepared (lookups by lists of ids padded to one
length), and the function and call path of a foreign model call are worked out before its row
goes in (a call whose chain waits for a span not here yet is updated when that span arrives).
The schema's version is SQLite's ``user_version``: an index of another version is emptied, and
the receiver then rebuilds it from its log.

Threading: one connection, used under the index's own lock. Errors: SQLite errors propagate
(the transports answer 500 for a read; the receiver logs an ingest's and carries on, since the
log has the spans).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from callctx.projection import schema as s
from callctx.projection.batch import Received
from callctx.projection.dialects import classify, conversation, function_name
from callctx.projection.llm import _USAGE, LANGFUSE_USAGE, model_of, provider_of, usage_of
from callctx.projection.spans import SpanData

_VERSION = 2  # the schema's, in SQLite's user_version: an index of another version is made anew
_TABLES = ("spans", "calls", "blobs", "meta", "traces")
# spans: what a call's chain is resolved through and the trees' function filter reads (no more)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    span_id TEXT PRIMARY KEY, trace_id TEXT NOT NULL, parent_id TEXT, kind TEXT NOT NULL, function TEXT
);
CREATE TABLE IF NOT EXISTS calls (
    span_id TEXT PRIMARY KEY, trace_id TEXT NOT NULL, parent_id TEXT, start_ns INTEGER NOT NULL,
    end_ns INTEGER, status TEXT, error TEXT, service TEXT, session TEXT, model TEXT, provider TEXT,
    function TEXT, call_path TEXT, resolved INTEGER NOT NULL DEFAULT 0, ours INTEGER NOT NULL,
    input INTEGER, output INTEGER, cache_read INTEGER, cache_write INTEGER,
    log_offset INTEGER, log_length INTEGER
);
CREATE INDEX IF NOT EXISTS calls_order ON calls(start_ns, span_id);
CREATE INDEX IF NOT EXISTS calls_trace ON calls(trace_id);
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, log_offset INTEGER NOT NULL, log_length INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER);
CREATE INDEX IF NOT EXISTS spans_function ON spans(function) WHERE kind = 'agentic';
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, session TEXT, first INTEGER, last INTEGER, spans INTEGER, errors INTEGER,
    running INTEGER, services TEXT, calls INTEGER, input INTEGER, output INTEGER, cache_read INTEGER,
    cache_write INTEGER, models TEXT
);
"""

_COLUMNS = (
    "span_id, trace_id, parent_id, start_ns, end_ns, status, error, service, session, model, provider, "
    "function, call_path, ours, input, output, cache_read, cache_write, log_offset, log_length"
)


@dataclass(frozen=True)
class Filter:
    """What a listing keeps (every field optional; times in ns since the epoch)."""

    service: str | None = None
    session: str | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    function: str | None = None
    model: str | None = None
    status: str | None = None  # ok | error | running


class Index:
    """Model calls and traces, indexed as spans arrive."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self._db = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False)
        if self._db.execute("PRAGMA user_version").fetchone()[0] != _VERSION:  # new, or of an older schema
            self._db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _TABLES))
            self._db.execute(f"PRAGMA user_version = {_VERSION}")
        self._db.executescript(_SCHEMA)
        self._db.execute("PRAGMA journal_mode=WAL" if path is not None else "PRAGMA journal_mode=MEMORY")
        self._db.execute("PRAGMA synchronous=OFF")  # the log is the source of truth; the index is rebuilt from it
        self._lock = threading.Lock()
        self._waiting: dict[str, list[str]] = {}  # a span not here yet -> the calls whose chain stops at it

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def complete_at(self) -> int | None:
        """The log size the index was closed at (None: not closed cleanly, or never)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'complete_at'").fetchone()
        return row[0] if row else None

    def mark_complete(self, log_size: int | None) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM meta WHERE key = 'complete_at'")
            if log_size is not None and log_size >= 0:
                self._db.execute("INSERT INTO meta VALUES ('complete_at', ?)", (log_size,))

    def rebuild(self, log_path: str | os.PathLike[str]) -> None:
        """Index a whole receiver log (each span's start and end records sit together there)."""
        from callctx.projection.events import Blob, SpanEnded, SpanStarted, decode

        starts: dict[str, tuple[SpanStarted, int]] = {}
        batch: list[tuple[SpanData, int | None, int | None]] = []
        blobs: dict[str, tuple[int, int]] = {}
        offset = 0
        with open(log_path, "rb") as f:
            for line in f:
                at, offset = offset, offset + len(line)
                if not line.endswith(b"\n"):
                    break  # a torn last record
                try:
                    rec = decode(line)
                except ValueError:
                    continue
                t = type(rec)
                if t is Blob:
                    blobs[rec.hash] = (at, len(line))
                elif t is SpanStarted:
                    starts[rec.span_id] = (rec, at)
                elif t is SpanEnded and rec.span_id in starts:
                    st, first = starts.pop(rec.span_id)
                    batch.append((_span(st, rec), first, offset - first))
                if len(batch) >= 5000:
                    self.add(batch, blobs)
                    batch, blobs = [], {}
        batch.extend((_span(st, None), first, None) for st, first in starts.values())  # never ended
        self.add(batch, blobs)

    # ---- feeding ------------------------------------------------------------------------------
    def add(
        self, spans: Iterable[tuple[SpanData, int | None, int | None]], blobs: Mapping[str, tuple[int, int]]
    ) -> None:
        """Index one request's spans, each with the byte offset and length of its records in
        the log (None without a log), and the texts it carried by hash -> (offset, length)."""
        self._add(
            (
                (sp.span_id, sp.trace_id, sp.parent_id, sp.name, sp.start_ns, sp.end_ns, sp.attributes, sp.status,
                 sp.error, sp.resource, offset, length, None, None)
                for sp, offset, length in spans
            ),
            blobs,
        )  # fmt: skip

    def add_received(
        self,
        spans: Sequence[tuple[Received, int | None, int | None]],
        blobs: Mapping[str, tuple[int, int]],
        kinds: Sequence[tuple[str | None, str | None]] | None = None,
    ) -> None:
        """:meth:`add` for spans as the receiver decodes them (:class:`Received`); ``kinds``:
        each span's kind and function name when the fold has just worked them out from its
        start record (None, None: worked out here, the same way)."""
        self._add(
            (
                (r.span_id, r.trace_id, st.parent_id, st.name, r.start_ns, r.end_ns, st.attributes, r.status, r.error,
                 st.resource, offset, length, kind, fn)
                for (r, offset, length), (kind, fn) in zip(spans, kinds or repeat(_UNKNOWN), strict=kinds is not None)
                for st in (r.started,)
            ),
            blobs,
        )  # fmt: skip

    def _add(self, spans: Iterable[tuple[Any, ...]], blobs: Mapping[str, tuple[int, int]]) -> None:
        """Index spans given as (span id, trace id, parent id, name, start, end, attributes,
        status, status message, resource, log offset, log length, kind, function): the rows are
        made first, then go in in one transaction, by ``executemany`` with statements SQLite
        keeps prepared."""
        span_rows = []  # what the spans table keeps
        facts = []  # (trace id, start, end, status, service, session) of each span, for its trace's totals
        call_rows = []
        resource: Any = None
        service = None
        for (span_id, trace_id, parent_id, name, start_ns, end_ns, a, status, error, res, offset, length, kind,
             fn) in spans:  # fmt: skip
            if kind is None:
                kind = classify(name, a)
                fn = function_name(name, kind, a)
            if res is not resource:  # the spans of one resource come together
                resource, service = res, _service(res)
            if not -_I64 <= start_ns <= _I64:
                start_ns = _i64(start_ns)
            if not -_I64 <= end_ns <= _I64:
                end_ns = _i64(end_ns)
            session = conversation(a)
            span_rows.append((span_id, trace_id, parent_id, kind, fn))
            facts.append((trace_id, start_ns, end_ns, status, service, session))
            if kind == "llm":
                usage = usage_of(a) if not _USAGE_KEYS.isdisjoint(a) else None
                if usage:
                    get = usage.get
                    tokens = (_i64(get("input")), _i64(get("output")), _i64(get("cache_read")),
                              _i64(get("cache_write")))  # fmt: skip
                else:
                    tokens = _NO_USAGE
                ours = isinstance(a.get(s.CONTEXT), str)
                call_rows.append(
                    (span_id, trace_id, parent_id, start_ns, end_ns, "error" if status == "error" else "ok", error,
                     service, session, model_of(a), provider_of(a), a.get(s.FUNCTION) if ours else None,
                     a.get(s.CALL_PATH) if ours else None, int(ours), int(ours),
                     *tokens, offset, length)
                )  # fmt: skip
        if not span_rows and not blobs:
            return
        with self._lock, self._db:
            fresh = self._insert_spans(span_rows)
            if fresh is None:  # all of them
                new_spans, new_facts, new_calls = span_rows, facts, call_rows
            else:
                new_spans = [r for r in span_rows if r[0] in fresh]
                new_facts = [f for r, f in zip(span_rows, facts, strict=True) if r[0] in fresh]
                new_calls = [c for c in call_rows if c[0] in fresh]
            self._traces(new_facts, new_calls)
            self._resolve(call_rows, new_calls, new_spans)
            if call_rows:
                self._db.executemany(_INSERT_CALL, call_rows)
            if blobs:
                self._db.executemany(_INSERT_BLOB, [(h, o, n) for h, (o, n) in blobs.items()])

    def _insert_spans(self, rows: list[tuple[Any, ...]]) -> set[str] | None:
        """Insert the span rows (the first of a span id wins); the ids that were not indexed
        before, or None when that is all of them (the rows go in first, under a savepoint, and
        are looked up only when some were there already)."""
        db = self._db
        if not db.in_transaction:  # so that releasing the savepoint does not commit: one transaction
            db.execute("BEGIN")
        db.execute("SAVEPOINT spans")
        before = db.total_changes
        db.executemany(_INSERT_SPAN, rows)
        if db.total_changes - before == len(rows):
            db.execute("RELEASE spans")
            return None
        db.execute("ROLLBACK TO spans")
        db.execute("RELEASE spans")
        ids = [r[0] for r in rows]
        fresh = set(ids)
        for chunk in _padded(ids):
            fresh.difference_update(row[0] for row in db.execute(_KNOWN_SPANS, chunk))
        db.executemany(_INSERT_SPAN, rows)
        return fresh

    def _traces(self, facts: list[tuple[Any, ...]], call_rows: list[tuple[Any, ...]]) -> None:
        """Fold new spans (their facts) and calls into their traces' totals."""
        per: dict[str, dict[str, Any]] = {}
        for tid, start, end, status, service, session in facts:
            t = per.get(tid)
            if t is None:
                t = per[tid] = {"session": None, "first": start, "last": end or start, "spans": 0, "errors": 0,
                                "running": 0, "services": set(), "calls": 0, "usage": [0, 0, 0, 0],
                                "models": set()}  # fmt: skip
            t["session"] = t["session"] or session
            if start < t["first"]:
                t["first"] = start
            last = end or start
            if last > t["last"]:
                t["last"] = last
            t["spans"] += 1
            t["errors"] += status == "error"
            t["running"] += end is None
            if service:
                t["services"].add(service)
        for row in call_rows:
            t = per[row[1]]
            t["calls"] += 1
            for i, v in enumerate(row[15:19]):  # input, output, cache read, cache write
                t["usage"][i] += v or 0
            if row[9]:
                t["models"].add(row[9])
        db = self._db
        for tid, t in per.items():
            old = db.execute("SELECT services, models FROM traces WHERE trace_id = ?", (tid,)).fetchone()
            services, models = t["services"], t["models"]
            if old is not None:
                services |= set(filter(None, (old[0] or "").split(",")))
                models |= set(filter(None, (old[1] or "").split(",")))
            db.execute(
                _UPSERT_TRACE,
                (tid, t["session"], t["first"], t["last"], t["spans"], t["errors"], t["running"],
                 ",".join(sorted(services)), t["calls"], *t["usage"], ",".join(sorted(models))),
            )  # fmt: skip

    def _resolve(
        self, call_rows: list[tuple[Any, ...]], new_calls: list[tuple[Any, ...]], new_spans: list[tuple[Any, ...]]
    ) -> None:
        """Name the function and call path of foreign calls whose ancestors have arrived (the
        nearest agentic ancestor; plain spans are transparent): the calls of this request
        (their rows, in ``call_rows``, are filled in before they go in), and calls already in
        whose chain stopped at a span that has just arrived (updated). A chain that stops at a
        span not here yet waits for it (``_waiting``), so each request pays only for what it
        brought. The spans just added are looked up in memory, earlier ones once per request."""
        db = self._db
        waiting = self._waiting
        spans: dict[str, tuple[Any, ...] | None] = {}  # span id -> (parent id, kind, function); None: not here
        for r in new_spans:
            if r[0] not in spans:  # the first of a span id is the one inserted
                spans[r[0]] = (r[2], r[3], r[4])
        first: dict[str, int] = {}  # a new call -> its first row in call_rows (the one inserted)
        if new_calls:
            fresh = {c[0] for c in new_calls}
            for i, c in enumerate(call_rows):
                if c[0] in fresh and c[0] not in first:
                    first[c[0]] = i
        earlier: list[str] = []
        if waiting:
            for r in new_spans:
                earlier.extend(waiting.pop(r[0], ()))
        if not first and not earlier:
            return

        def chain_of(call_id: str, sid: str | None) -> tuple[str | None, str | None, int]:
            chain: list[str] = []
            complete = True
            seen: set[str] = set()
            while sid is not None and sid not in seen and len(seen) < 1000:
                seen.add(sid)
                if sid in spans:
                    up = spans[sid]
                else:
                    up = spans[sid] = db.execute(_SPAN_UP, (sid,)).fetchone()
                if up is None:
                    complete = False
                    waiting.setdefault(sid, []).append(call_id)
                    break
                if up[1] == "agentic":
                    chain.append(up[2])
                sid = up[0]
            return (chain[0] if chain else None), (" → ".join(reversed(chain)) or None), int(complete)

        for call_id, i in first.items():
            row = call_rows[i]
            if not row[13]:  # not resolved (ours are resolved as they come)
                call_rows[i] = (*row[:11], *chain_of(call_id, row[2]), *row[14:])
        if not earlier:
            return
        todo = [c for c in dict.fromkeys(earlier) if c not in first]
        known: dict[str, tuple[Any, Any]] = {}
        for chunk in _padded(todo):  # each call, and the span its chain goes up to first
            for call_id, parent_id, resolved, up_id, *up in db.execute(_CALLS_TO_RESOLVE, chunk):
                known[call_id] = (parent_id, resolved)
                if up_id is not None and up_id not in spans:
                    spans[up_id] = tuple(up)
        updates = []
        for call_id in todo:
            row = known.get(call_id)
            if row is not None and not row[1]:
                updates.append((*chain_of(call_id, row[0]), call_id))
        if updates:
            db.executemany("UPDATE calls SET function = ?, call_path = ?, resolved = ? WHERE span_id = ?", updates)

    # ---- reading ------------------------------------------------------------------------------
    @staticmethod
    def _calls_where(f: Filter) -> tuple[str, list[Any]]:
        status = {"running": ("end_ns IS NULL", True)}.get(f.status or "", ("status = ?", f.status))
        return _where(
            ("service = ?", f.service),
            ("session = ?", f.session),
            ("model = ?", f.model),
            ("start_ns >= ?", f.since_ns),
            ("start_ns < ?", f.until_ns),
            ("function = ?", f.function),
            status,
        )

    def calls(self, f: Filter = Filter(), *, offset: int = 0, limit: int = 100) -> tuple[int, list[dict[str, Any]]]:
        """(how many calls match, one page of them): numbered from 1 in start order over all
        calls, whatever the filter."""
        where, args = self._calls_where(f)
        with self._lock:
            total = self._db.execute(f"SELECT count(*) FROM calls WHERE {where}", args).fetchone()[0]
            rows = self._db.execute(
                f"SELECT (SELECT count(*) FROM calls c2 WHERE (c2.start_ns, c2.span_id) <= (c.start_ns, c.span_id)), "
                f"{_COLUMNS} FROM calls c WHERE {where} ORDER BY start_ns, span_id LIMIT ? OFFSET ?",
                [*args, limit, offset],
            ).fetchall()
        return total, [_call(r) for r in rows]

    def call(self, n: int) -> dict[str, Any] | None:
        """Call ``n`` (from 1, in start order), with where its records are in the log."""
        if n < 1:
            return None
        with self._lock:
            row = self._db.execute(
                f"SELECT ?, {_COLUMNS} FROM calls ORDER BY start_ns, span_id LIMIT 1 OFFSET ?", (n, n - 1)
            ).fetchone()
        return _call(row, internal=True) if row else None

    def count_calls(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM calls").fetchone()[0]

    def blob_ranges(self, hashes: Iterable[str]) -> dict[str, tuple[int, int]]:
        wanted = list(hashes)
        with self._lock:
            rows = [
                self._db.execute("SELECT hash, log_offset, log_length FROM blobs WHERE hash = ?", (h,)).fetchone()
                for h in wanted
            ]
        return {r[0]: (r[1], r[2]) for r in rows if r}

    def trees(self, f: Filter = Filter(), *, offset: int = 0, limit: int = 100) -> tuple[int, list[dict[str, Any]]]:
        """(how many trees match, one page): a tree is a session, or a trace outside any
        session; each with its services, time span, span and call counts, status and token totals."""
        where, args = _where(
            ("session = ?", f.session),
            ("first >= ?", f.since_ns),
            ("first < ?", f.until_ns),
            ("(',' || services || ',') LIKE ?", f"%,{f.service},%" if f.service is not None else None),
            ("(',' || models || ',') LIKE ?", f"%,{f.model},%" if f.model is not None else None),
            ("trace_id IN (SELECT trace_id FROM spans WHERE kind = 'agentic' AND function = ?)", f.function),
        )
        group = (
            "SELECT coalesce(session, trace_id) AS key, min(first), max(last), sum(spans), sum(errors), "
            "sum(running), group_concat(services), sum(calls), sum(input), sum(output), sum(cache_read), "
            f"sum(cache_write), group_concat(models) FROM traces WHERE {where} GROUP BY key"
        )
        status = {"error": " HAVING sum(errors) > 0", "running": " HAVING sum(running) > 0",
                  "ok": " HAVING sum(errors) = 0 AND sum(running) = 0"}.get(f.status or "", "")  # fmt: skip
        group += status
        with self._lock:
            total = self._db.execute(f"SELECT count(*) FROM ({group})", args).fetchone()[0]
            rows = self._db.execute(
                f"SELECT * FROM ({group}) ORDER BY 2, 1 LIMIT ? OFFSET ?", [*args, limit, offset]
            ).fetchall()
        out = []
        for key, first, last, n, errors, running, services, calls, i, o, cr, cw, models in rows:
            out.append(
                {
                    "id": key,
                    "services": sorted(set(filter(None, (services or "").split(",")))),
                    "start_ns": first,
                    "end_ns": last,
                    "spans": n,
                    "status": "error" if errors else ("running" if running else "ok"),
                    "calls": calls,
                    "usage": _usage(i, o, cr, cw),
                    "models": sorted(set(filter(None, (models or "").split(",")))),
                }
            )
        return total, out


def _span(start: Any, end: Any) -> SpanData:
    """A span from its two records (``end`` None: it never ended)."""
    return SpanData(
        trace_id=start.trace_id,
        span_id=start.span_id,
        parent_id=start.parent_id,
        name=start.name,
        start_ns=start.start_ns,
        end_ns=end.end_ns if end is not None else start.start_ns,
        attributes={**start.attributes, **(end.attributes if end is not None else {})},
        status=end.status if end is not None else "unset",
        error=end.error if end is not None else None,
        resource=start.resource,
    )


_I64 = (1 << 63) - 1


def _i64(value: int | None) -> int | None:
    """A number SQLite can hold (OTLP times are unsigned 64-bit; hostile spans use the top bit)."""
    return None if value is None else max(-_I64, min(int(value), _I64))


def _usage(i: int | None, o: int | None, cr: int | None, cw: int | None) -> dict[str, int]:
    return {k: v for k, v in (("input", i), ("output", o), ("cache_read", cr), ("cache_write", cw)) if v}


def _where(*clauses: tuple[str, Any]) -> tuple[str, list[Any]]:
    """A WHERE clause of the conditions whose value is given (a ``?`` in the condition takes
    the value; a condition without one is kept as it is when its value is not None)."""
    sql, args = ["1=1"], []
    for condition, value in clauses:
        if value is None:
            continue
        sql.append(condition)
        if "?" in condition:
            args.append(value)
    return " AND ".join(sql), args


_USAGE_KEYS = frozenset({LANGFUSE_USAGE, *(k for keys in _USAGE.values() for k in keys)})  # what usage_of reads
_UNKNOWN = (None, None)
_NO_USAGE = (None, None, None, None)
_IN = 256  # ids per lookup: shorter lists are padded with NULL, so one prepared statement serves all
_IN_LIST = ",".join("?" * _IN)
_KNOWN_SPANS = f"SELECT span_id FROM spans WHERE span_id IN ({_IN_LIST})"
_CALLS_TO_RESOLVE = (
    "SELECT c.span_id, c.parent_id, c.resolved, p.span_id, p.parent_id, p.kind, p.function "
    f"FROM calls c LEFT JOIN spans p ON p.span_id = c.parent_id WHERE c.span_id IN ({_IN_LIST})"
)
_SPAN_UP = "SELECT parent_id, kind, function FROM spans WHERE span_id = ?"
_INSERT_SPAN = "INSERT OR IGNORE INTO spans VALUES (?,?,?,?,?)"
_INSERT_CALL = (
    f"INSERT OR IGNORE INTO calls ({_COLUMNS.replace('ours', 'resolved, ours')}) VALUES ({','.join('?' * 21)})"
)
_INSERT_BLOB = "INSERT OR IGNORE INTO blobs VALUES (?,?,?)"
_UPSERT_TRACE = (
    "INSERT INTO traces VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(trace_id) DO UPDATE SET "
    "session = coalesce(session, excluded.session), first = min(first, excluded.first), "
    "last = max(last, excluded.last), spans = spans + excluded.spans, errors = errors + excluded.errors, "
    "running = running + excluded.running, services = excluded.services, calls = calls + excluded.calls, "
    "input = input + excluded.input, output = output + excluded.output, "
    "cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write, "
    "models = excluded.models"
)


def _padded(ids: list[str]) -> Iterable[list[str | None]]:
    """``ids`` in lists of exactly ``_IN`` (the last padded with None, which matches nothing)."""
    for i in range(0, len(ids), _IN):
        chunk: list[str | None] = list(ids[i : i + _IN])
        if len(chunk) < _IN:
            chunk += [None] * (_IN - len(chunk))
        yield chunk


def _service(resource: Mapping[str, Any]) -> str | None:
    name = resource.get("service.name")
    return name if isinstance(name, str) else None


def _call(row: tuple[Any, ...], *, internal: bool = False) -> dict[str, Any]:
    (n, span_id, trace_id, parent_id, start, end, status, error, service, session, model, provider, function,
     call_path, ours, i, o, cr, cw, offset, length) = row  # fmt: skip
    out = {
        "index": n,
        "span_id": span_id,
        "trace_id": trace_id,
        "function": function,
        "call_path": call_path,
        "service": service,
        "session": session,
        "model": model,
        "provider": provider,
        "status": "running" if end is None else status,
        "error": error,
        "start_ns": start,
        "latency_ms": (end - start) / 1e6 if end is not None else None,
        "usage": _usage(i, o, cr, cw),
        "reconstructed": not ours,
    }
    if internal:
        out["log_offset"], out["log_length"], out["parent_id"] = offset, length, parent_id
    return out

"""The local store's index: every span, model call, trace and text of an event log, with
where its records are in the log, in SQLite (a file beside the log, or in memory).

The log is the source of truth; the index is what listings and lookups read instead of the
log, and it can always be made again from the log. It is fed a block of located records at a
time (:meth:`Index.add`, from :class:`callctx.projection.log_reader.LogTail`), each block in
one transaction together with where the tail stands (``offset``, ``line``, the log's
``identity``): a process killed at any point leaves an index that covers the log up to some
block boundary, and the next one resumes from there. An index of another schema version, or
of another log, is emptied and made again.

Rows per span (its start and end records' byte ranges; a span's start and end may arrive in
either order, and again: each counts once; a new span whose start and end are in one block is
written once; for agentic and tool spans the first words of their input,
:mod:`callctx.store.excerpts`), per model call (the facts readers filter by, its usage, the
agentic call it ran in, and for callctx's own calls the manifest), per trace (times, counts,
services, its first tree), per root call and per tree a trace is listed under (``tops``,
``memberships``) and per text (``Blob``). A span is of the trace its first start names, and
its ancestors are those of that trace: a parent in another trace counts as missing, for good.
A call runs in its nearest agentic ancestor (:func:`callctx.projection.ancestry.agentic_chain`),
which also names a foreign call's function; when the chain reaches a span not indexed yet, the
call waits for it in ``pending`` and is resolved when it arrives.

The trees listed are the fold's (:mod:`callctx.store.tops`): a call with no agentic call above
it is a root call of the tree keyed by the first conversation id on it or above it, else by its
trace id; so a trace may be listed under several trees (its figures count in each), and one
with no call at all is listed under its own id. A root call whose walk up stopped at a span
not indexed yet waits for it the same way, and is nested, or moves, when it arrives.

Threading: one connection, used under the index's lock; any thread may call any method.
Errors: ``sqlite3.Error`` propagates; numbers SQLite cannot hold (hostile spans) are clamped
to 64 bits, and a record the index cannot take is counted (``refused``) and skipped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import msgspec

from callctx.projection import schema as s
from callctx.projection.ancestry import MAX_DEPTH, Ancestor, Chain, agentic_chain
from callctx.projection.calls import ModelCall, RunStatus, Usage, model_call
from callctx.projection.dialects import Kind, classify, conversation, function_name, input_of
from callctx.projection.events import Blob, Collapsed, Record, SpanEnded, SpanStarted
from callctx.projection.log_reader import Located

from .excerpts import excerpt
from .model import Filter, Spend, StoreUnavailable
from .tops import Tops

log = logging.getLogger(__name__)

VERSION = 7  # the schema's, in SQLite's user_version: an index of another version is made anew
_TABLES = ("spans", "calls", "traces", "memberships", "tops", "blobs", "extras", "pending", "wrapped", "meta")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    span_id TEXT PRIMARY KEY, trace_id TEXT NOT NULL, parent_id TEXT, name TEXT, kind TEXT, function TEXT,
    start_ns INTEGER, end_ns INTEGER, status TEXT, error TEXT, service TEXT, session TEXT,
    start_at INTEGER, start_len INTEGER, end_at INTEGER, end_len INTEGER,
    started INTEGER NOT NULL DEFAULT 0, ended INTEGER NOT NULL DEFAULT 0, ours INTEGER NOT NULL DEFAULT 0,
    excerpt TEXT, conv TEXT, holds INTEGER NOT NULL DEFAULT 0, cut INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS spans_trace ON spans(trace_id, start_ns);
CREATE INDEX IF NOT EXISTS spans_parent ON spans(parent_id, start_ns);
CREATE INDEX IF NOT EXISTS spans_function ON spans(function) WHERE kind = 'agentic';
CREATE TABLE IF NOT EXISTS calls (
    span_id TEXT PRIMARY KEY, trace_id TEXT NOT NULL, parent_id TEXT, start_ns INTEGER NOT NULL,
    end_ns INTEGER, status TEXT NOT NULL, error TEXT, service TEXT, session TEXT, model TEXT, provider TEXT,
    function TEXT, path TEXT NOT NULL DEFAULT '[]', manifest TEXT,
    input INTEGER, output INTEGER, cache_read INTEGER, cache_write INTEGER, agent TEXT
);
CREATE INDEX IF NOT EXISTS calls_order ON calls(start_ns, span_id);
CREATE INDEX IF NOT EXISTS calls_trace ON calls(trace_id);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, session TEXT, tree TEXT NOT NULL, first INTEGER, last INTEGER,
    spans INTEGER NOT NULL DEFAULT 0, ended INTEGER NOT NULL DEFAULT 0, errors INTEGER NOT NULL DEFAULT 0,
    services TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS memberships (
    tree TEXT NOT NULL, trace_id TEXT NOT NULL, tops INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tree, trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memberships_trace ON memberships(trace_id);
CREATE TABLE IF NOT EXISTS tops (
    trace_id TEXT NOT NULL, start_ns INTEGER NOT NULL, span_id TEXT NOT NULL, tree TEXT NOT NULL, conv TEXT,
    missing TEXT, PRIMARY KEY (trace_id, start_ns, span_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tops_missing ON tops(missing) WHERE missing IS NOT NULL;
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, at INTEGER NOT NULL, len INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS extras (trace_id TEXT NOT NULL, at INTEGER NOT NULL, len INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS extras_trace ON extras(trace_id);
CREATE TABLE IF NOT EXISTS pending (missing TEXT NOT NULL, call TEXT NOT NULL, PRIMARY KEY (missing, call));
CREATE TABLE IF NOT EXISTS wrapped (span_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
"""

_I64 = (1 << 63) - 1
_IN = 256  # ids per lookup: shorter lists are padded with NULL, so one prepared statement serves all
_IN_LIST = ",".join("?" * _IN)


MAX_TOKENS = 1 << 48
"""The largest token count a call's usage is indexed with (a span may claim any number; the log
keeps what it claimed): sums of any number of calls then stay within what SQLite holds."""


def _tokens(value: int | None) -> int | None:
    """A token count as the index keeps it: within 0 to ``MAX_TOKENS``."""
    if value is None:
        return None
    return 0 if value < 0 else min(value, MAX_TOKENS)


def _i64(value: int | None) -> int | None:
    """A number SQLite can hold (OTLP times are unsigned 64-bit; hostile spans use the top bit)."""
    if value is None:
        return None
    return value if -_I64 <= value <= _I64 else max(-_I64, min(value, _I64))


def _padded(ids: Sequence[str]) -> Iterator[list[str | None]]:
    """``ids`` in lists of exactly ``_IN`` (the last padded with None, which matches nothing)."""
    for i in range(0, len(ids), _IN):
        chunk: list[str | None] = list(ids[i : i + _IN])
        if len(chunk) < _IN:
            chunk += [None] * (_IN - len(chunk))
        yield chunk


def run_status(started: bool, ended: bool, status: str | None) -> RunStatus:
    if not ended or not started:
        return "running"
    return "error" if status == "error" else "ok"


class TraceSummary(msgspec.Struct, kw_only=True):
    """One trace as the index holds it: every tree it is listed under (``trees``: those of its
    root calls, or its own id when it has none) and the first of them (``tree``, that of its
    first root call), its times and counts, the services and agentic functions in it, and its
    root spans (start, span id, function; the first 20 by start)."""

    trace_id: str
    session: str | None
    tree: str
    first: int
    last: int
    spans: int
    ended: int
    errors: int
    services: list[str]
    trees: list[str]
    functions: list[str]
    roots: list[tuple[int, str, str]]


_KNOWN_COLUMNS = (
    "trace_id, parent_id, kind, function, service, session, started, ended, ours, conv, holds, cut, start_ns, start_at"
)


class _Known:
    """What the index already holds of one span (a row of ``spans``, :data:`_KNOWN_COLUMNS`):
    ``conv``, the conversation id it names itself; ``holds``, an agentic call not hidden (the
    calls under it are listed in it); ``cut``, it closed a loop of parents and counts as having
    none (:mod:`callctx.store.tops`); ``at``, where its start is in the log."""

    __slots__ = ("at", "conv", "cut", "ended", "function", "holds", "kind", "ours", "parent_id", "service",
                 "session", "start_ns", "started", "trace_id", "visible")  # fmt: skip

    def __init__(self, row: tuple[Any, ...]) -> None:
        (self.trace_id, self.parent_id, self.kind, self.function, self.service, self.session,
         started, ended, ours, self.conv, holds, cut, start_ns, at) = row  # fmt: skip
        self.started, self.ended, self.ours = bool(started), bool(ended), bool(ours)
        self.holds, self.cut, self.start_ns, self.at = bool(holds), bool(cut), start_ns or 0, at or 0
        self.visible = self.holds or self.kind == "llm" or self.kind == "tool"


class Index:
    """Spans, model calls, traces and texts of one event log, indexed as its records arrive.

    ``read_back(offset, length)`` gives the record at a place in the log (used when a model
    call's start arrives after its end, to read the end's usage back)."""

    def __init__(self, path: str | os.PathLike[str] | None, *, read_back: Callable[[int, int], Record | None]) -> None:
        self.path = None if path is None else os.fspath(path)
        self._read_back = read_back
        if path is not None:
            _private(os.fspath(path))  # created 0600 here, never through a link...
            for suffix in ("-wal", "-shm"):  # ...nor SQLite's files beside it (they take its mode)
                _private(os.fspath(path) + suffix, create=False)
        self._db = sqlite3.connect(":memory:" if path is None else os.fspath(path), check_same_thread=False)
        db = self._db
        if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:  # new, or of an older schema
            db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _TABLES))
            db.execute(f"PRAGMA user_version = {VERSION}")
        db.executescript(_SCHEMA)
        db.execute("PRAGMA journal_mode=WAL" if path is not None else "PRAGMA journal_mode=MEMORY")
        db.execute("PRAGMA synchronous=OFF")  # the log is the source of truth; the index is made again from it
        if path is not None:
            db.execute("PRAGMA user_version").fetchone()  # opens the WAL and its shared memory
            for suffix in ("-wal", "-shm"):
                _private(os.fspath(path) + suffix, create=False)
        self.lock = threading.RLock()
        self.refused = 0  # records the index could not take

    def close(self) -> None:
        with self.lock:
            self._db.close()

    # ---- where the index stands in the log ---------------------------------------------------
    def position(self) -> tuple[int, int, str | None]:
        """(bytes of the log indexed, lines, the log's identity) as the last block left them."""
        with self.lock:
            rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        return int(rows.get("offset", 0)), int(rows.get("line", 0)), rows.get("identity")

    def reset(self) -> None:
        """Forget everything (the log was replaced)."""
        with self.lock, self._db:
            for table in _TABLES:
                self._db.execute(f"DELETE FROM {table}")

    # ---- feeding ------------------------------------------------------------------------------
    def add(self, block: Sequence[Located], *, offset: int, line: int, identity: str | None) -> None:
        """Index one block of records, and where the tail stands after it, in one transaction."""
        starts: dict[str, Located] = {}
        ends: dict[str, Located] = {}
        blobs: list[tuple[str, int, int]] = []
        extras: list[tuple[str, int, int]] = []
        for item in block:
            rec = item.record
            t = type(rec)
            if t is SpanStarted:
                starts.setdefault(rec.span_id, item)  # type: ignore[union-attr]
            elif t is SpanEnded:
                ends.setdefault(rec.span_id, item)  # type: ignore[union-attr]
            elif t is Blob:
                blobs.append((rec.hash, item.offset, item.length))  # type: ignore[union-attr]
            elif t is Collapsed:
                extras.append((rec.trace_id, item.offset, item.length))  # type: ignore[union-attr]
        with self.lock, self._db:
            if starts or ends:
                _Block(self, starts, ends).apply()
            if blobs:
                self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?,?,?)", blobs)
            if extras:
                self._db.executemany("INSERT INTO extras VALUES (?,?,?)", extras)
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [("offset", offset), ("line", line), ("identity", identity)],
            )

    def known(self, ids: Sequence[str]) -> dict[str, _Known]:
        out: dict[str, _Known] = {}
        for chunk in _padded(ids):
            for row in self._db.execute(
                f"SELECT span_id, {_KNOWN_COLUMNS} FROM spans WHERE span_id IN ({_IN_LIST})",
                chunk,
            ):
                out[row[0]] = _Known(row[1:])
        return out

    # ---- reading: calls -----------------------------------------------------------------------
    # a call's tree: its own as a root call, else that of the agentic call it runs in as one, else
    # its trace's first tree (the one its first root call is in)
    _CALL_COLUMNS = (
        "c.span_id, c.trace_id, c.parent_id, c.start_ns, c.end_ns, c.status, c.error, c.service, c.session, "
        "c.model, c.provider, c.function, c.path, c.manifest, c.input, c.output, c.cache_read, c.cache_write, "
        "coalesce((SELECT o.tree FROM tops o WHERE o.trace_id = c.trace_id AND o.start_ns = c.start_ns AND "
        "o.span_id = c.span_id), (SELECT o.tree FROM spans a JOIN tops o ON o.trace_id = a.trace_id AND "
        "o.start_ns = a.start_ns AND o.span_id = a.span_id WHERE a.span_id = c.agent), "
        "(SELECT t.tree FROM traces t WHERE t.trace_id = c.trace_id)), c.agent, "
        "(SELECT a.excerpt FROM spans a WHERE a.span_id = c.agent)"
    )

    def _call(self, row: tuple[Any, ...], index: int) -> ModelCall:
        (span_id, trace_id, parent_id, start, end, status, error, service, session, model, provider, function,
         path, manifest, i, o, cr, cw, tree, agent, excerpt) = row  # fmt: skip
        return ModelCall(
            index=index, trace_id=trace_id, span_id=span_id, parent_id=parent_id, start_ns=start, end_ns=end,
            provider=provider, model=model, function=function, path=json.loads(path), manifest=manifest,
            status=status, error=error, usage=Usage(i, o, cr, cw), service=service, session=session,
            tree=tree or trace_id, agent_span=agent, excerpt=excerpt,
        )  # fmt: skip

    def _calls_where(self, f: Filter) -> tuple[str, list[Any]]:
        status = {"running": ("c.end_ns IS NULL AND c.status = 'running'", True)}.get(
            f.status or "", ("c.status = ?", f.status)
        )
        agents = f.agent_in
        return _where(
            ("c.service = ?", f.service),
            ("c.session = ?", f.session),
            ("c.trace_id IN (SELECT trace_id FROM memberships WHERE tree = ?)", f.tree),
            ("c.model = ?", f.model),
            ("c.start_ns >= ?", f.since_ns),
            ("c.start_ns < ?", f.until_ns),
            ("c.function = ?", f.function),
            status,
            ("c.manifest IS NOT NULL", True if f.ours is True else None),
            ("c.manifest IS NULL", True if f.ours is False else None),
            ("c.agent IN (SELECT value FROM json_each(?))", json.dumps(list(agents)) if agents is not None else None),
        )

    def calls(self, f: Filter, offset: int, limit: int) -> tuple[int, list[ModelCall]]:
        """(how many calls match, one page of them), numbered in start order over all calls."""
        where, args = self._calls_where(f)
        with self.lock:
            db = self._db
            total = db.execute(f"SELECT count(*) FROM calls c WHERE {where}", args).fetchone()[0]
            if where == "1=1":
                rows = db.execute(
                    f"SELECT {self._CALL_COLUMNS} FROM calls c ORDER BY c.start_ns, c.span_id LIMIT ? OFFSET ?",
                    [limit, offset],
                ).fetchall()
                numbers = list(range(offset + 1, offset + 1 + len(rows)))
            else:  # numbered over all calls, whatever the filter: the rank of each in start order
                found = db.execute(
                    f"SELECT r.n, {self._CALL_COLUMNS} FROM calls c JOIN (SELECT span_id, row_number() OVER "
                    f"(ORDER BY start_ns, span_id) AS n FROM calls) r USING (span_id) WHERE {where} ORDER BY r.n "
                    "LIMIT ? OFFSET ?",
                    [*args, limit, offset],
                ).fetchall()
                numbers, rows = [r[0] for r in found], [r[1:] for r in found]
            return total, [self._call(r, n) for r, n in zip(rows, numbers, strict=True)]

    def _number(self, start_ns: int, span_id: str) -> int:
        return self._db.execute(
            "SELECT count(*) FROM calls WHERE (start_ns, span_id) <= (?, ?)", (start_ns, span_id)
        ).fetchone()[0]

    def call(self, n: int) -> ModelCall | None:
        """Call ``n`` (from 1, in start order)."""
        if n < 1:
            return None
        with self.lock:
            row = self._db.execute(
                f"SELECT {self._CALL_COLUMNS} FROM calls c ORDER BY c.start_ns, c.span_id LIMIT 1 OFFSET ?",
                (n - 1,),
            ).fetchone()
        return self._call(row, n) if row else None

    def count_calls(self) -> int:
        with self.lock:
            return self._db.execute("SELECT count(*) FROM calls").fetchone()[0]

    def call_numbers(self, span_ids: Sequence[str]) -> dict[str, int]:
        """The numbers of the model calls among ``span_ids``."""
        out: dict[str, int] = {}
        with self.lock:
            for chunk in _padded(span_ids):
                for sid, start in self._db.execute(
                    f"SELECT span_id, start_ns FROM calls WHERE span_id IN ({_IN_LIST})", chunk
                ).fetchall():
                    out[sid] = self._number(start, sid)
        return out

    # ---- reading: trees -----------------------------------------------------------------------
    def trees(self, f: Filter, offset: int, limit: int) -> tuple[int, list[tuple[Any, ...]]]:
        """(how many trees match, one page: key, kind, first, last, spans, ended, errors, services)."""
        where, args = _where(
            ("t.session = ?", f.session),
            ("t.first >= ?", f.since_ns),
            ("t.first < ?", f.until_ns),
            ("EXISTS (SELECT 1 FROM json_each(t.services) WHERE value = ?)", f.service),
            ("t.trace_id IN (SELECT trace_id FROM calls WHERE model = ?)", f.model),
            ("t.trace_id IN (SELECT trace_id FROM spans WHERE kind = 'agentic' AND function = ?)", f.function),
        )
        group = (
            "SELECT m.tree AS key, max(m.tree != t.trace_id), min(t.first), max(t.last), sum(t.spans), sum(t.ended), "
            "sum(t.errors), group_concat(t.services, '\x1f') FROM memberships m JOIN traces t USING (trace_id) "
            f"WHERE {where} GROUP BY key"
        )
        having = {
            "error": " HAVING sum(errors) > 0",
            "running": " HAVING sum(errors) = 0 AND sum(spans) > sum(ended)",
            "interrupted": " HAVING 0",
            "ok": " HAVING sum(errors) = 0 AND sum(spans) <= sum(ended)",
        }.get(f.status or "", "")
        group += having
        with self.lock:
            total = self._db.execute(f"SELECT count(*) FROM ({group})", args).fetchone()[0]
            rows = self._db.execute(
                f"SELECT * FROM ({group}) ORDER BY 3, 1 LIMIT ? OFFSET ?", [*args, limit, offset]
            ).fetchall()
        return total, rows

    def span_count(self) -> int:
        with self.lock:
            return self._db.execute("SELECT count(*) FROM spans WHERE started").fetchone()[0]

    def tree_count(self) -> int:
        with self.lock:
            return self._db.execute("SELECT count(DISTINCT tree) FROM memberships").fetchone()[0]

    def tree_calls(self, keys: Sequence[str]) -> dict[str, tuple[int, list[Spend], list[str]]]:
        """Per tree: (its model calls, usage per provider and model, its models)."""
        out: dict[str, tuple[int, list[Spend], list[str]]] = {}
        if not keys:
            return out
        marks = ",".join("?" * len(keys))
        with self.lock:
            rows = self._db.execute(
                f"SELECT m.tree AS key, c.provider, c.model, count(*), {_total('c.input')}, {_total('c.output')}, "
                f"{_total('c.cache_read')}, {_total('c.cache_write')} FROM calls c JOIN memberships m USING (trace_id) "
                f"WHERE m.tree IN ({marks}) GROUP BY key, c.provider, c.model "
                "ORDER BY key, c.provider, c.model",
                list(keys),
            ).fetchall()
        for key, provider, model, n, i, o, cr, cw in rows:
            count, spend, models = out.setdefault(key, (0, [], []))
            spend.append(Spend(provider, model, Usage(i, o, cr, cw)))
            if model and model not in models:
                models.append(model)
            out[key] = (count + n, spend, models)
        return out

    def roots(self, key: str, offset: int = 0, limit: int = 20) -> tuple[int, list[tuple[Any, ...]]]:
        """(how many, a page of) the spans of tree ``key`` with no parent the index holds (in their
        trace: one of another trace is none)."""
        where = f"s.trace_id IN (SELECT trace_id FROM memberships WHERE tree = ?) AND s.started = 1 AND {_ROOT}"
        with self.lock:
            total = self._db.execute(f"SELECT count(*) FROM spans s WHERE {where}", (key,)).fetchone()[0]
            rows = self._db.execute(
                f"SELECT {_SPAN_COLUMNS}, s.excerpt FROM spans s WHERE {where} ORDER BY s.start_ns, s.span_id "
                "LIMIT ? OFFSET ?",
                (key, limit, offset),
            ).fetchall()
        return total, rows

    def children(self, parent: str, offset: int, limit: int) -> tuple[int, list[tuple[Any, ...]]]:
        """(how many, a page of) the spans under ``parent`` (of its trace: one of another trace
        names a parent it never has)."""
        where = (
            "s.parent_id = ? AND s.started = 1 AND s.trace_id = (SELECT p.trace_id FROM spans p WHERE p.span_id = ?)"
        )
        with self.lock:
            total = self._db.execute(f"SELECT count(*) FROM spans s WHERE {where}", (parent, parent)).fetchone()[0]
            rows = self._db.execute(
                f"SELECT {_SPAN_COLUMNS}, s.excerpt FROM spans s WHERE {where} ORDER BY s.start_ns, s.span_id "
                "LIMIT ? OFFSET ?",
                (parent, parent, limit, offset),
            ).fetchall()
        return total, rows

    def tree_exists(self, key: str) -> bool:
        with self.lock:
            return self._db.execute("SELECT 1 FROM memberships WHERE tree = ? LIMIT 1", (key,)).fetchone() is not None

    def span(self, span_id: str) -> tuple[Any, ...] | None:
        with self.lock:
            return self._db.execute(
                f"SELECT {_SPAN_COLUMNS}, s.start_at, s.start_len, s.end_at, s.end_len FROM spans s "
                "WHERE s.span_id = ?",
                (span_id,),
            ).fetchone()

    def wrappers(self, span_ids: Sequence[str]) -> set[str]:
        """Those of ``span_ids`` that are wrappers of a model call (LLM spans above the one that
        carries the usage)."""
        found: set[str] = set()
        with self.lock:
            for chunk in _padded(list(span_ids)):
                rows = self._db.execute(f"SELECT span_id FROM wrapped WHERE span_id IN ({_IN_LIST})", chunk)
                found.update(r[0] for r in rows)
        return found

    def tree_of(self, trace_id: str) -> str:
        with self.lock:
            row = self._db.execute("SELECT tree FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        return row[0] if row else trace_id

    def members(self, key: str) -> list[str]:
        """The traces whose records make tree ``key``."""
        with self.lock:
            return [r[0] for r in self._db.execute("SELECT trace_id FROM memberships WHERE tree = ?", (key,))]

    def trees_of(self, trace_id: str) -> list[str]:
        with self.lock:
            return [r[0] for r in self._db.execute("SELECT tree FROM memberships WHERE trace_id = ?", (trace_id,))]

    def ranges(self, traces: Sequence[str]) -> tuple[list[tuple[int, int]], set[str]]:
        """The byte ranges of the records of ``traces`` that count (each span's first start and
        first end, whichever trace that end names; collapses), and the ids of their spans (a
        span is of the trace its first start names)."""
        out: list[tuple[int, int]] = []
        spans: set[str] = set()
        with self.lock:
            for chunk in _padded(traces):
                for sid, a, n, b, m in self._db.execute(
                    f"SELECT span_id, start_at, start_len, end_at, end_len FROM spans WHERE trace_id IN ({_IN_LIST})",
                    chunk,
                ):
                    spans.add(sid)
                    if a is not None:
                        out.append((a, a + n))
                    if b is not None:
                        out.append((b, b + m))
                out.extend(
                    (a, a + n)
                    for a, n in self._db.execute(f"SELECT at, len FROM extras WHERE trace_id IN ({_IN_LIST})", chunk)
                )
        return out, spans

    def version(self, traces: Sequence[str]) -> tuple[int, int]:
        """What changes when any record of ``traces`` arrives: (spans started, spans ended)."""
        with self.lock:
            n = e = 0
            for chunk in _padded(traces):
                a, b = self._db.execute(
                    f"SELECT coalesce(sum(spans), 0), coalesce(sum(ended), 0) FROM traces "
                    f"WHERE trace_id IN ({_IN_LIST})",
                    chunk,
                ).fetchone()
                n, e = n + a, e + b
            return n, e

    def tree_spans(self, key: str) -> list[tuple[str, str | None]]:
        """(span id, parent id) of every span of tree ``key`` (its parent None when that is of
        another trace)."""
        with self.lock:
            return self._db.execute(
                "SELECT s.span_id, p.span_id FROM spans s LEFT JOIN spans p ON p.span_id = s.parent_id AND "
                "p.trace_id = s.trace_id WHERE s.trace_id IN (SELECT trace_id FROM memberships WHERE tree = ?)",
                (key,),
            ).fetchall()

    def tree_call_usage(self, key: str) -> list[tuple[str, str | None, str | None, Usage]]:
        """(span id, provider, model, usage) of every model call of tree ``key``."""
        with self.lock:
            rows = self._db.execute(
                "SELECT span_id, provider, model, input, output, cache_read, cache_write FROM calls WHERE trace_id "
                "IN (SELECT trace_id FROM memberships WHERE tree = ?)",
                (key,),
            ).fetchall()
        return [(r[0], r[1], r[2], Usage(*r[3:])) for r in rows]

    def parent_of(self, span_id: str) -> str | None:
        with self.lock:
            row = self._db.execute("SELECT parent_id FROM spans WHERE span_id = ?", (span_id,)).fetchone()
        return row[0] if row else None

    def blob_ranges(self, hashes: Iterable[str]) -> dict[str, tuple[int, int]]:
        wanted = list(dict.fromkeys(hashes))
        out: dict[str, tuple[int, int]] = {}
        with self.lock:
            for chunk in _padded(wanted):
                for h, at, n in self._db.execute(f"SELECT hash, at, len FROM blobs WHERE hash IN ({_IN_LIST})", chunk):
                    out[h] = (at, n)
        return out

    def trace_summaries(self) -> list[TraceSummary]:
        """Every trace the index holds, as a shared store lists it (see :class:`TraceSummary`)."""
        with self.lock:
            db = self._db
            trees: dict[str, list[str]] = {}
            for tree, tid in db.execute("SELECT tree, trace_id FROM memberships ORDER BY tree"):
                trees.setdefault(tid, []).append(tree)
            functions: dict[str, list[str]] = {}
            for tid, fn in db.execute(
                "SELECT DISTINCT trace_id, function FROM spans WHERE kind = 'agentic' AND function IS NOT NULL "
                "ORDER BY 1, 2"
            ):
                functions.setdefault(tid, []).append(fn)
            roots: dict[str, list[tuple[int, str, str]]] = {}
            for tid, start, sid, fn in db.execute(
                "SELECT s.trace_id, s.start_ns, s.span_id, coalesce(s.function, '') FROM spans s WHERE s.started = 1 "
                f"AND {_ROOT} ORDER BY 1, 2, 3"
            ):
                roots.setdefault(tid, []).append((start, sid, fn))
            rows = db.execute(
                "SELECT trace_id, session, tree, first, last, spans, ended, errors, services FROM traces"
            ).fetchall()
        out = []
        for tid, session, tree, first, last, spans, ended, errors, services in rows:
            out.append(TraceSummary(
                trace_id=tid, session=session, tree=tree, first=first or 0, last=last or first or 0, spans=spans,
                ended=ended, errors=errors, services=json.loads(services), trees=trees.get(tid, [tid]),
                functions=functions.get(tid, []), roots=roots.get(tid, [])[:20],
            ))  # fmt: skip
        return out

    def facets(self) -> tuple[list[str], list[str], list[str]]:
        with self.lock:
            db = self._db
            services = [r[0] for r in db.execute(
                "SELECT DISTINCT value FROM traces, json_each(traces.services) ORDER BY 1")]  # fmt: skip
            functions = [r[0] for r in db.execute(
                "SELECT DISTINCT function FROM spans WHERE kind = 'agentic' AND function IS NOT NULL ORDER BY 1"
            )]  # fmt: skip
            models = [r[0] for r in db.execute("SELECT DISTINCT model FROM calls WHERE model IS NOT NULL ORDER BY 1")]
        return services, functions, models


_SPAN_COLUMNS = (
    "s.span_id, s.trace_id, s.parent_id, s.name, s.kind, s.function, s.status, s.error, s.start_ns, s.end_ns, "
    "s.started, s.ended, (SELECT count(*) FROM spans k WHERE k.parent_id = s.span_id AND k.started "
    "AND k.trace_id = s.trace_id), "
    "s.kind = 'llm' AND EXISTS (SELECT 1 FROM calls c WHERE c.span_id = s.span_id AND c.manifest IS NOT NULL)"
)


_ROOT = (  # a span (``s``) with no parent the index holds in its trace
    "(s.parent_id IS NULL OR NOT EXISTS (SELECT 1 FROM spans p WHERE p.span_id = s.parent_id AND p.started "
    "AND p.trace_id = s.trace_id))"
)


def _total(column: str) -> str:
    """SQL for the sum of a column that never overflows (``total`` sums in floating point) and is
    NULL when no row has a value, as ``sum`` is."""
    return f"CASE WHEN count({column}) THEN CAST(total({column}) AS INTEGER) END"


def _where(*clauses: tuple[str, Any]) -> tuple[str, list[Any]]:
    """A WHERE clause of the conditions whose value is given (a ``?`` in the condition takes
    the value; a condition without one is kept as it is when its value is not None)."""
    sql, args = [], []
    for condition, value in clauses:
        if value is None:
            continue
        sql.append(condition)
        if "?" in condition:
            args.append(value)
    return (" AND ".join(sql) or "1=1"), args


class _Block:
    """One block of span records on its way into the index (see :meth:`Index.add`)."""

    def __init__(self, index: Index, starts: dict[str, Located], ends: dict[str, Located]) -> None:
        self.index = index
        self.db = index._db
        self.starts = starts
        self.ends = ends
        self.known = index.known(list(starts.keys() | ends.keys()))
        self.placed: dict[str, _Known] = {}  # spans this block starts: what later spans look up
        self.absent: set[str] = set()  # spans looked up in the index and not there
        self.whole: set[str] = set()  # new spans whose start and end are both in this block: one row each
        self.traces: dict[str, dict[str, Any]] = {}  # trace -> what this block adds to its row
        self.orphaned: set[str] = set()  # parents of this block's spans not started when they were placed
        self.awaited: set[str] = set()  # spans of this block that a span indexed before names as its parent

    def apply(self) -> None:
        db = self.db
        span_rows, whole_rows, call_rows, arrived = self._starts()
        if span_rows:
            db.executemany(_UPSERT_START, span_rows)
        if whole_rows:
            db.executemany(_INSERT_WHOLE, whole_rows)
        if call_rows:
            db.executemany(_INSERT_CALL, call_rows)
        end_rows, call_ends = self._ends()
        if end_rows:
            db.executemany(_UPSERT_END, end_rows)
        if call_ends:
            db.executemany(_UPDATE_CALL_END, call_ends)
        resolved = self._resolve_waiting(arrived)
        self._unwrap(call_rows, call_ends, resolved)
        self._traces(self._tops())

    # -- starts ---------------------------------------------------------------------------------
    def _starts(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]], list[str]]:
        span_rows: list[tuple[Any, ...]] = []
        whole_rows: list[tuple[Any, ...]] = []  # spans new to the index that end in this block too
        call_rows: list[tuple[Any, ...]] = []
        ends = self.ends
        arrived: list[str] = []
        known = self.known
        # parents first, so that a block's own spans are found by the spans under them
        items = sorted(self.starts.values(), key=lambda item: item.record.start_ns)  # type: ignore[union-attr]
        for item in items:
            st: SpanStarted = item.record  # type: ignore[assignment]
            sid = st.span_id
            was = known.get(sid)
            if was is not None and was.started:
                continue
            attrs = st.attributes
            kind = classify(st.name, attrs)
            fn = function_name(st.name, kind, attrs)
            up = self._up(st.parent_id)
            if up is None:
                if st.parent_id is not None:
                    self.orphaned.add(st.parent_id)
            elif up.trace_id != st.trace_id:  # another trace's span: never this one's parent
                up = None
            service = st.service or (up.service if up is not None else None) or self._trace_service(st.trace_id)
            conv = conversation(attrs)
            session = conv or (up.session if up is not None else None)
            start_ns = _i64(st.start_ns) or 0
            ours = kind == "llm" and isinstance(attrs.get(s.CONTEXT), str)
            holds = kind == "agentic" and attrs.get(s.EXPOSE) != "hidden"  # as the fold: hidden holds nothing
            placed = _Known((st.trace_id, st.parent_id, kind, fn, service, session, 1, 0, ours, conv, holds, 0,
                             start_ns, item.offset))  # fmt: skip
            self.placed[sid] = placed
            arrived.append(sid)
            end_item = ends.get(sid) if was is None else None
            if end_item is None:
                span_rows.append((sid, st.trace_id, st.parent_id, st.name, kind, fn, start_ns, service, session,
                                  item.offset, item.length, int(ours), _excerpt(kind, attrs), conv,
                                  int(holds)))  # fmt: skip
            else:
                end: SpanEnded = end_item.record  # type: ignore[assignment]
                self.whole.add(sid)
                said = _excerpt(kind, attrs) or _excerpt(kind, end.attributes)  # or an input only the end carries
                whole_rows.append((sid, st.trace_id, st.parent_id, st.name, kind, fn, start_ns, service, session,
                                   item.offset, item.length, int(ours), said, conv, int(holds), _i64(end.end_ns),
                                   end.status, end.error, end_item.offset, end_item.length))  # fmt: skip
            t = self._trace(st.trace_id)
            t["spans"] += 1
            t["first"] = start_ns if t["first"] is None else min(t["first"], start_ns)
            t["last"] = max(t["last"] or 0, start_ns)
            if service:
                t["services"].add(service)
            if session and t["session"] is None:
                t["session"] = session
            if was is not None and was.ended:  # its end came first: count it now
                placed.ended = True
                t["ended"] += 1
            if kind == "llm":
                row = self._call_row(st, item, was, service, session)
                if row is not None:
                    call_rows.append(row)
        return span_rows, whole_rows, call_rows, arrived

    def _call_row(
        self, st: SpanStarted, item: Located, was: _Known | None, service: str | None, session: str | None
    ) -> tuple[Any, ...] | None:
        """The row of a model call, or None for a span that is part of one of our calls."""
        end: SpanEnded | None = None
        end_item = self.ends.get(st.span_id)
        if end_item is not None:
            end = end_item.record  # type: ignore[assignment]
        elif was is not None and was.ended:  # ended in an earlier block, before this start: read it back
            row = self.db.execute("SELECT end_at, end_len FROM spans WHERE span_id = ?", (st.span_id,)).fetchone()
            back = self.index._read_back(row[0], row[1]) if row and row[0] is not None else None
            end = back if type(back) is SpanEnded else None
        call = model_call(
            trace_id=st.trace_id, span_id=st.span_id, parent_id=st.parent_id, start_ns=_i64(st.start_ns) or 0,
            start=st.attributes, end=end.attributes if end is not None else None,
            end_ns=_i64(end.end_ns) if end is not None else None,
            status=run_status(True, end is not None, end.status if end is not None else None),
            error=end.error if end is not None else None, service=service, session=session,
        )  # fmt: skip
        chain = self._chain(st.parent_id, st.trace_id)
        if call.manifest is None:  # ours name their function and path themselves
            if chain.in_our_call:
                return None
            if self._wrapped(st, call.usage, end is not None):
                return None
            call.path, call.function = chain.path, chain.function
        if not chain.complete and chain.missing is not None:
            self.db.execute("INSERT OR IGNORE INTO pending VALUES (?, ?)", (chain.missing, st.span_id))
        u = call.usage
        return (call.span_id, call.trace_id, call.parent_id, call.start_ns, call.end_ns, call.status, call.error,
                service, session, call.model, call.provider, call.function, _json_text(call.path), call.manifest,
                _tokens(u.input), _tokens(u.output), _tokens(u.cache_read), _tokens(u.cache_write),
                chain.agent)  # fmt: skip

    def _wrapped(self, st: SpanStarted, usage: Usage, ended: bool) -> bool:
        """Is this LLM span a wrapper already found, or a preparation under one (ended, no usage)?"""
        bare = ended and usage.input is None and usage.output is None
        parent_id = st.parent_id if bare and self._parent(st.parent_id, st.trace_id) is not None else None
        ids = (st.span_id, parent_id)
        return self.db.execute("SELECT 1 FROM wrapped WHERE span_id IN (?, ?)", ids).fetchone() is not None

    def _up(self, parent_id: str | None) -> _Known | None:
        if parent_id is None:
            return None
        found = self.placed.get(parent_id) or self.known.get(parent_id)
        if found is None and parent_id not in self.absent:
            row = self.db.execute(f"SELECT {_KNOWN_COLUMNS} FROM spans WHERE span_id = ?", (parent_id,)).fetchone()
            found = _Known(row) if row is not None else None
            if found is not None:
                self.known[parent_id] = found
            else:
                self.absent.add(parent_id)  # rows are written after the block is read: still absent after
        return found if found is not None and found.started else None

    def _parent(self, parent_id: str | None, trace_id: str) -> _Known | None:
        """The parent of a span of ``trace_id``, if it has started (one of another trace is none)."""
        up = self._up(parent_id)
        return up if up is not None and up.trace_id == trace_id else None

    def _chain(self, parent_id: str | None, trace_id: str) -> Chain:
        def lookup(sid: str) -> Ancestor | None:
            k = self._up(sid)
            return Ancestor(k.parent_id, k.kind, k.function, k.ours, k.trace_id) if k is not None else None

        return agentic_chain(parent_id, lookup, trace_id)

    def _trace_service(self, trace_id: str) -> str | None:
        t = self.traces.get(trace_id)
        if t is not None and t["services"]:
            return min(t["services"])
        row = self.db.execute("SELECT services FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        services = json.loads(row[0]) if row else []
        return services[0] if services else None

    def _trace(self, trace_id: str) -> dict[str, Any]:
        t = self.traces.get(trace_id)
        if t is None:
            t = self.traces[trace_id] = {"session": None, "first": None, "last": None, "spans": 0, "ended": 0,
                                         "errors": 0, "services": set()}  # fmt: skip
        return t

    # -- ends -----------------------------------------------------------------------------------
    def _ends(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        end_rows: list[tuple[Any, ...]] = []
        call_ends: list[tuple[Any, ...]] = []
        for sid, item in self.ends.items():
            end: SpanEnded = item.record  # type: ignore[assignment]
            was = self.known.get(sid)
            if was is not None and was.ended:
                continue
            placed = self.placed.get(sid)
            now = placed or was
            end_ns = _i64(end.end_ns)
            if sid not in self.whole:
                # an input that only the end carries (some instrumentations set it late): its excerpt
                known_kind = now.kind if now is not None else None
                late = _excerpt(known_kind, end.attributes)
                end_rows.append((sid, end.trace_id, end_ns, end.status, end.error, item.offset, item.length, late))
            t = self._trace(end.trace_id)
            t["last"] = max(t["last"] or 0, end_ns or 0)
            if end.status == "error":
                t["errors"] += 1
            if now is None or not now.started:
                continue  # its start has not arrived: counted (and its call made) when it does
            if placed is None or not placed.ended:
                t["ended"] += 1
            if now.kind == "llm" and placed is None:  # a call started earlier: its end fills the row in
                u = Usage.of(end.attributes)
                call_ends.append((end_ns, "error" if end.status == "error" else "ok", end.error,
                                  _tokens(u.input), _tokens(u.output), _tokens(u.cache_read), _tokens(u.cache_write),
                                  _end_model(end.attributes), sid))  # fmt: skip
        return end_rows, call_ends

    # -- the rest -------------------------------------------------------------------------------
    def _resolve_waiting(self, arrived: list[str]) -> list[str]:
        """Calls whose chain stopped at a span this block brought: walk them again (returns them).
        Notes the spans of this block that were waited for (``awaited``)."""
        db = self.db
        waiting: list[str] = []
        for chunk in _padded(arrived):
            rows = db.execute(f"SELECT missing, call FROM pending WHERE missing IN ({_IN_LIST})", chunk).fetchall()
            if rows:
                db.executemany("DELETE FROM pending WHERE missing = ? AND call = ?", rows)
                waiting.extend(r[1] for r in rows if r[1])  # no call: a span waited for its parent
                self.awaited.update(r[0] for r in rows)
        updates = []
        agents = []
        calls = list(dict.fromkeys(waiting))
        parents: dict[str, tuple[str | None, str | None, str]] = {}  # call -> (its parent, its manifest, its trace)
        for chunk in _padded(calls):  # their parents, and what the index holds of them, a chunk at a time
            parents.update(
                (sid, (parent, manifest, trace_id))
                for sid, parent, manifest, trace_id in db.execute(
                    f"SELECT span_id, parent_id, manifest, trace_id FROM calls WHERE span_id IN ({_IN_LIST})", chunk
                )
            )
        unknown = {p for p, _, _ in parents.values() if p is not None} - self.placed.keys() - self.known.keys()
        self.known.update(self.index.known(list(unknown)))
        self.absent.update(unknown - self.known.keys())
        for call_id in calls:
            if call_id not in parents:
                continue
            parent, manifest, trace_id = parents[call_id]
            chain = self._chain(parent, trace_id)
            if manifest is None and chain.in_our_call:  # the provider SDK's own span of one of our calls
                db.execute("DELETE FROM calls WHERE span_id = ?", (call_id,))
                continue
            if chain.missing is not None:
                db.execute("INSERT OR IGNORE INTO pending VALUES (?, ?)", (chain.missing, call_id))
            if manifest is not None:  # ours name their function and path: only the agentic call it ran in waited
                agents.append((chain.agent, call_id))
                continue
            updates.append((chain.function, _json_text(chain.path), chain.agent, call_id))
        if updates:
            db.executemany("UPDATE calls SET function = ?, path = ?, agent = ? WHERE span_id = ?", updates)
        if agents:
            db.executemany("UPDATE calls SET agent = ? WHERE span_id = ?", agents)
        return [u[-1] for u in updates]

    def _unwrap(self, call_rows: list[tuple[Any, ...]], call_ends: list[tuple[Any, ...]], resolved: list[str]) -> None:
        """One model call per request: an LLM span of another instrumentation above one that
        carries the usage is a wrapper (a framework's ``predict_and_call`` around the client's
        ``chat``), not a call; nor is an LLM span under a wrapper that carries none (its
        preparation, once it ended without). Found whichever of them arrives first: when the
        usage arrives, or when the spans above a call that carries it do."""
        db = self.db
        carriers = [(r[1], r[2]) for r in call_rows if r[13] is None and (r[14] is not None or r[15] is not None)]
        bare = [r[-1] for r in call_ends if r[3] is None and r[4] is None]
        carried = [r[-1] for r in call_ends if r[3] is not None or r[4] is not None] + resolved
        for chunk in _padded(list(dict.fromkeys(carried))):
            carriers += db.execute(
                f"SELECT trace_id, parent_id FROM calls WHERE span_id IN ({_IN_LIST}) AND manifest IS NULL "
                "AND (input IS NOT NULL OR output IS NOT NULL)",
                chunk,
            ).fetchall()
        wrappers: dict[str, None] = {}
        for trace_id, parent in carriers:
            found: list[str] = []
            seen = 0
            agentic = False
            while parent is not None and seen < MAX_DEPTH:
                up = self._parent(parent, trace_id)
                if up is None:
                    break
                if up.ours and not agentic:  # inside one of our model calls: part of it, no call of its own
                    found = []
                    break
                if up.kind == "llm" and not up.ours:
                    found.append(parent)
                agentic = agentic or up.kind == "agentic"
                parent = up.parent_id
                seen += 1
            wrappers.update(dict.fromkeys(found))
        if wrappers:
            ids = list(wrappers)
            db.executemany("INSERT OR IGNORE INTO wrapped VALUES (?)", [(w,) for w in ids])
            for chunk in _padded(ids):
                db.execute(f"DELETE FROM calls WHERE span_id IN ({_IN_LIST})", chunk)
                db.execute(
                    f"DELETE FROM calls WHERE parent_id IN ({_IN_LIST}) AND manifest IS NULL AND input IS NULL "
                    "AND output IS NULL AND end_ns IS NOT NULL "
                    "AND trace_id = (SELECT p.trace_id FROM spans p WHERE p.span_id = calls.parent_id)",
                    chunk,
                )  # fmt: skip
        for chunk in _padded(bare):  # a call that ended with no usage under a wrapper (of its trace): its preparation
            db.execute(
                f"DELETE FROM calls WHERE span_id IN ({_IN_LIST}) AND manifest IS NULL AND input IS NULL "
                "AND output IS NULL AND parent_id IN (SELECT w.span_id FROM wrapped w JOIN spans p USING (span_id) "
                "WHERE p.trace_id = calls.trace_id)",
                chunk,
            )  # fmt: skip

    def _tops(self) -> dict[str, str]:
        """Root calls and memberships after this block (:mod:`callctx.store.tops`); the primary
        tree of each trace whose trees may have changed. The spans a span of this block names as
        its parent and that have not started are noted in ``pending`` (with no call): a span
        found there when it arrives had a child indexed before it."""
        db = self.db
        tops = Tops(db, self._up, self.placed, self.awaited)
        cut = tops.cut_loops()
        if cut:
            db.executemany("UPDATE spans SET cut = 1 WHERE span_id = ?", [(sid,) for sid in cut])
        tops.place()
        tops.resume()
        orphaned = [(p, "") for p in self.orphaned if p not in self.placed]
        if orphaned:
            db.executemany("INSERT OR IGNORE INTO pending VALUES (?, ?)", orphaned)
        return tops.settle()

    def _traces(self, primary: dict[str, str]) -> None:
        db = self.db
        for tid in primary.keys() - self.traces.keys():
            self._trace(tid)  # a trace whose root calls moved: its tree is written
        for tid, t in self.traces.items():
            old = db.execute("SELECT services FROM traces WHERE trace_id = ?", (tid,)).fetchone()
            services = set(t["services"])
            if old is not None:
                services.update(json.loads(old[0]))
            tree = primary.get(tid)
            db.execute(
                _UPSERT_TRACE,
                (tid, t["session"], tree or tid, t["first"], t["last"], t["spans"], t["ended"], t["errors"],
                 json.dumps(sorted(services)), tree is not None),
            )  # fmt: skip


_EXCERPTED = ("agentic", "tool")  # the spans whose input a listing shows the first words of


def _excerpt(kind: Kind | None, attrs: dict[str, Any]) -> str | None:
    """The first words of an agentic or tool span's input (see :mod:`callctx.store.excerpts`)."""
    if kind not in _EXCERPTED:
        return None
    text, mime = input_of(kind, attrs)
    return excerpt(text, mime if isinstance(mime, str) else None)


def _json_text(value: Any) -> str:
    """JSON text of a value (a call's path), as the index keeps it."""
    return _json_encode(value).decode()


_json_encode = msgspec.json.Encoder().encode


def _end_model(attrs: dict[str, Any]) -> str | None:
    """The model an end record names (the response model), for a call whose start named none."""
    for key in (s.REQUEST_MODEL, s.RESPONSE_MODEL, "gen_ai.response.model", "llm.model_name"):
        value = attrs.get(key)
        if value:
            return str(value)
    return None


_UPSERT_START = (
    "INSERT INTO spans (span_id, trace_id, parent_id, name, kind, function, start_ns, service, session, start_at, "
    "start_len, ours, excerpt, conv, holds, started) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1) "
    "ON CONFLICT(span_id) DO UPDATE SET "
    "trace_id = excluded.trace_id, parent_id = excluded.parent_id, name = excluded.name, kind = excluded.kind, "
    "function = excluded.function, start_ns = excluded.start_ns, service = excluded.service, "
    "session = excluded.session, start_at = excluded.start_at, start_len = excluded.start_len, ours = excluded.ours, "
    "excerpt = coalesce(excluded.excerpt, excerpt), conv = excluded.conv, holds = excluded.holds, started = 1 "
    "WHERE started = 0"
)
_INSERT_WHOLE = (
    "INSERT INTO spans (span_id, trace_id, parent_id, name, kind, function, start_ns, service, session, start_at, "
    "start_len, ours, excerpt, conv, holds, end_ns, status, error, end_at, end_len, started, ended) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1,1)"
)  # a span the index did not hold, start and end at once
_UPSERT_END = (
    "INSERT INTO spans (span_id, trace_id, end_ns, status, error, end_at, end_len, excerpt, ended) "
    "VALUES (?,?,?,?,?,?,?,?,1) "
    "ON CONFLICT(span_id) DO UPDATE SET end_ns = excluded.end_ns, status = excluded.status, error = excluded.error, "
    "end_at = excluded.end_at, end_len = excluded.end_len, excerpt = coalesce(excluded.excerpt, excerpt), ended = 1 "
    "WHERE ended = 0"
)
_INSERT_CALL = (
    "INSERT OR IGNORE INTO calls (span_id, trace_id, parent_id, start_ns, end_ns, status, error, service, session, "
    "model, provider, function, path, manifest, input, output, cache_read, cache_write, agent) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_UPDATE_CALL_END = (
    "UPDATE calls SET end_ns = ?, status = ?, error = ?, input = coalesce(?, input), output = coalesce(?, output), "
    "cache_read = coalesce(?, cache_read), cache_write = coalesce(?, cache_write), model = coalesce(model, ?) "
    "WHERE span_id = ?"
)
_UPSERT_TRACE = (
    "INSERT INTO traces VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(trace_id) DO UPDATE SET "
    "session = coalesce(session, excluded.session), tree = CASE WHEN ? THEN excluded.tree ELSE tree END, "
    "first = min(coalesce(first, excluded.first), "
    "coalesce(excluded.first, first)), last = max(coalesce(last, 0), coalesce(excluded.last, 0)), "
    "spans = spans + excluded.spans, ended = ended + excluded.ended, errors = errors + excluded.errors, "
    "services = excluded.services"
)


def _private(path: str, *, create: bool = True) -> None:
    """Make sure ``path`` is a regular file only its owner may read (creating it, empty, when
    ``create``); a symbolic link there is refused (:class:`StoreUnavailable`), never followed.

    A file that exists is never opened here, only looked at and its mode changed: closing any
    descriptor of a file lets go of every POSIX lock this process holds on it, SQLite's
    included, and another process opening the index would then take its shared memory for
    unused and reset it under this one (which dies of ``SIGBUS``)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            os.close(os.open(path, flags, 0o600))  # new: nobody holds a lock on it yet
            return
        except FileExistsError:  # made meanwhile: look at it as it is
            st = os.lstat(path)
        except OSError as e:
            raise StoreUnavailable(f"cannot open the index {path}: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise StoreUnavailable(f"{path} is a symbolic link; the index is never opened through one")
    if not stat.S_ISREG(st.st_mode):
        raise StoreUnavailable(f"cannot open the index {path}: not a regular file")
    if st.st_mode & 0o077:
        try:
            os.chmod(path, 0o600)
        except OSError as e:
            raise StoreUnavailable(f"cannot open the index {path}: {e.strerror}") from None


def remove(path: str) -> None:
    """Delete an index file and SQLite's ``-wal`` and ``-shm`` beside it."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)

"""The receiver behind ``callctx serve``: OTLP trace requests folded with the same projection
as in-process, appended to the receiver's own event log, and read back through a small API.

Ingest, one request at a time: a protobuf body is decoded straight into the records the log
and the fold take (:mod:`callctx.projection.otlp_events`; OTLP/JSON goes through ``SpanData``
first); the request's spans are sorted by start, their records encoded once and appended to
the log in one write, then folded in the same order, then listed in the index in one SQLite
transaction. The cyclic garbage collector pauses while a request is decoded and while it is
ingested (its many objects are short-lived and free of cycles), and runs again after.

Threading: every method is safe to call from the HTTP and gRPC worker threads at once;
ingest holds the projection's lock around the log write, the fold and the index, so the log's
order is the fold's order. Errors: a malformed body raises ``ValueError`` (the transports
answer 400 and keep serving; nothing of it is kept); a log the disk refuses keeps the
request's records in memory and writes them, in order, before the next write or at close
(``callctx.projection.log``); an ``OSError`` out of ingest is answered 503; rows the index
cannot take are logged as an error (the log has the spans, only the listing lacks them).

Memory: finished traces leave memory, the log keeps them
-------------------------------------------------------
The receiver keeps at most ``max_traces`` call trees in memory, and at most ``max_traces``
traces with spans in memory. Past either, it evicts the least recently updated traces (a trace
is updated when a request brings spans of it) whose spans have all ended, each together with
every tree its calls are listed in and every trace listed in those trees (a session tree goes
whole, with all its traces). A trace with a running span stays, unless memory passes a hard
cap of ``HARD_CAP_FACTOR`` x ``max_traces`` (trees or traces): then the least recently updated
go, running or not, until it is back under the cap.

What an evicted tree leaves in memory is one small index entry: the byte ranges of the log
that hold its records (ranges less than ``MERGE_GAP`` apart merge), its span count, and what
``/api/traces`` lists (the number of top calls, their function names as an id into a table of
interned name lists, the first start time). A trace of its own whose records sit in one range
costs a 52-byte record in a packed table; a session tree, or a trace in several ranges, a
msgpack entry in a dict (a few hundred bytes, and each of its traces a pointer to it). Every
span id also costs ``BLOOM_BITS`` bits in a Bloom filter per stretch of ``SEGMENT_SPANS``
spans, which names the stretch of log to scan when an evicted span's tree is asked for.

Reading an evicted tree (``/api/traces/{id}/tree``, ``/api/spans/{id}/tree``) folds it back
from the log: the records in its ranges that belong to its traces, into a fresh projection,
rendered the same way; the fold does not depend on what else it has seen, so the text equals
what the live tree rendered. Spans that arrive for an evicted trace (or into an evicted
session tree) first bring the tree back into memory from the log, then fold as usual.
``/api/traces`` lists every tree, in memory or not. Without a log, evicted trees are listed
but cannot be read back.
"""

from __future__ import annotations

import contextlib
import gc
import hmac
import logging
import os
import re
import sqlite3
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

import msgspec

from callctx.export.shaping import Shaper
from callctx.projection.asof import tree_as_seen_by
from callctx.projection.batch import Batch, Received
from callctx.projection.calls import ModelCall, read_calls
from callctx.projection.events import Blob, Collapsed, Record, SpanEnded, SpanStarted, decode, decode_lines, encode
from callctx.projection.fold import Projection
from callctx.projection.llm import messages_of
from callctx.projection.log import EventLog, FsyncPolicy
from callctx.projection.manifest import ManifestError
from callctx.projection.manifest import decode as manifest_decode
from callctx.projection.node import ENDED, STARTED, Node
from callctx.projection.otlp import decode_json, decode_protobuf
from callctx.projection.schema import CONTEXT as s_CONTEXT
from callctx.store.index import Index
from callctx.store.recorded import Unrebuildable, as_json, rebuild

from .body import BodyError

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 16 << 20  # bytes, after decompression
DEFAULT_MAX_TRACES = 1000
HARD_CAP_FACTOR = 4  # past this many times max_traces, even trees with running spans leave memory
MERGE_GAP = 4 << 20  # a tree's log ranges closer than this many bytes merge into one
SEGMENT_SPANS = 1 << 16  # spans per stretch of log with its own Bloom filter
BLOOM_BITS = 10  # bits per span (4 probes: about 1% false positives)
PROTOBUF = "application/x-protobuf"
JSON = "application/json"

_RUNNING = STARTED | ENDED
_CHUNK = 1 << 22
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError)
_START_ORDER = attrgetter("start_ns", "span_id")
_UNKNOWN = (None, None)
_line_encoder = msgspec.json.Encoder()  # writes what callctx.projection.events.encode writes
_encode_lines = _line_encoder.encode_lines  # records, one line each


@dataclass
class Stats:
    """Counters and the time spent per stage (for ``/health`` and the ingest benchmark)."""

    requests: int = 0
    spans: int = 0
    rejected: int = 0
    malformed: int = 0
    seconds_total: float = 0.0  # handling export requests, end to end
    seconds_decode: float = 0.0
    seconds_fold: float = 0.0  # applying events to the projection
    seconds_log: float = 0.0
    seconds_index: float = 0.0  # the read API's SQLite index
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **amounts: float) -> None:
        with self.lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)


class Receiver:
    """Folds OTLP trace requests into one projection and one event log, keeping at most
    ``max_traces`` trees in memory (see the module docstring for the eviction policy)."""

    def __init__(
        self,
        log_path: str | os.PathLike[str] | None,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        token: str | None = None,
        fsync: FsyncPolicy = "never",
        max_traces: int = DEFAULT_MAX_TRACES,
        shaper: Shaper | None = None,
    ) -> None:
        if max_traces < 1:
            raise ValueError(f"max_traces must be at least 1, not {max_traces}")
        self.projection = Projection()
        self.log = EventLog(log_path, fsync=fsync) if log_path else None
        self.max_body = max_body
        self.token = token
        self.max_traces = max_traces
        self.stats = Stats()
        self.evictions = 0  # trees evicted so far (one tree may leave and come back many times)
        self._live: OrderedDict[str, _Live] = OrderedDict()  # traces in memory, least recently updated first
        self._index = _Index()  # trees out of memory
        self._home: dict[str, str] = {}  # trace -> its evicted entry, when not keyed by the trace itself
        self._listings: dict[tuple[str, ...], int] = {}  # the function names of a tree's top calls, interned
        self._listing_names: list[tuple[str, ...]] = []
        self._spans = _SpanFilter(self._log_size())
        self._log_failed = False  # a write was refused once: offsets past it are not exact
        self.shaper = shaper if shaper is not None else Shaper()  # what the read API serves is shaped
        self.index = open_index(self.log.path) if self.log is not None else Index(None)

    # ---- ingest ---------------------------------------------------------------------------
    def decode(self, body: bytes, content_type: str) -> Batch:
        """The spans of one OTLP/HTTP body; raises :class:`BodyError` (415) for a content type
        that is not OTLP and ``ValueError`` for a body that is not a trace request. Either
        encoding is read straight into the records the log and the fold take."""
        t0 = time.perf_counter()
        kind = content_type.split(";")[0].strip().lower()
        if kind == PROTOBUF:
            with collector_paused():
                decoded = decode_protobuf(body)
        elif kind == JSON:
            try:
                with collector_paused():
                    decoded = decode_json(body)
            except UnicodeDecodeError:
                raise ValueError("OTLP/JSON body is not valid UTF-8") from None
        else:
            raise BodyError(415, f"unsupported content type {content_type!r}; use {PROTOBUF} or {JSON}")
        spent = time.perf_counter() - t0
        self.stats.add(seconds_decode=spent, seconds_total=spent)
        return decoded

    def ingest(self, decoded: Batch) -> Batch:
        """Append and fold the spans of one request (in start order, so parents come first
        when the sender batched children ahead of them); then bring back from the log the
        evicted trees these spans belong to, and evict what is over the limit.

        The request's records go to the log in one write, then to the fold in the same order;
        the index gets its rows in one transaction."""
        t0 = time.perf_counter()
        batch = decoded
        proj = self.projection
        spans = sorted(batch.spans, key=_START_ORDER)
        with proj.lock, collector_paused():
            event_log = self.log
            mark = self._newest_tree()
            base = pos = self._log_size()
            self._spans.begin(base)
            touched: dict[str, list[int]] = {}  # trace -> [first byte, end] of its records here
            refused = False
            indexed: list[tuple[Received, int | None, int | None]] = []
            blobs: dict[str, tuple[int, int]] = {}
            lives = self._live
            self._spans.add_all([r.span_id for r in spans])
            lines: list[bytes] = []
            for r in spans:
                tid = r.trace_id
                if tid not in lives:
                    lives[tid] = _Live()
                first = pos
                if event_log is not None:
                    for b in r.blobs:
                        line = encode(b)
                        lines.append(line)
                        blobs[b.hash] = (pos, len(line))
                        pos += len(line)
                    chunk = _encode_lines((r.started, r.ended) if r.ended is not None else (r.started,))
                    lines.append(chunk)
                    indexed.append((r, pos, len(chunk)))
                    pos += len(chunk)
                else:
                    indexed.append((r, None, None))
                here = touched.get(tid)
                if here is None:
                    touched[tid] = [first, pos]
                else:
                    here[1] = pos
            a = time.perf_counter()
            if event_log is not None and lines:
                refused = not event_log.write(b"".join(lines))
            log_time = time.perf_counter() - a
            kinds = self._fold(spans)
            fold = time.perf_counter() - a - log_time
            if event_log is not None:
                end = self._log_size()
                if refused or end != pos:  # held back, or bytes we did not count: cover them all
                    self._log_failed |= refused
                    for here in touched.values():
                        here[0], here[1] = max(base, 0), -1 if refused or base < 0 else end
            for tid, (start, stop) in touched.items():
                live = lives[tid]
                if event_log is not None:
                    live.add_range(start, stop)
                lives.move_to_end(tid)
            self._bring_back_locked(touched, mark)
            self._evict_locked()
            if refused or (event_log is not None and self._log_size() != pos):  # offsets not exact: keep none
                indexed = [(r, None, None) for r, _, _ in indexed]
                blobs = {}
            a = time.perf_counter()
            try:
                self.index.add_received(indexed, blobs, kinds)
            except (sqlite3.Error, OverflowError, ValueError) as e:  # the log has them: only the listing lacks them
                log.error("callctx: %d spans could not be indexed for the read API: %s", len(indexed), e)
            index_time = time.perf_counter() - a
        self.stats.add(
            requests=1,
            spans=len(spans),
            rejected=batch.rejected,
            seconds_fold=fold,
            seconds_log=log_time,
            seconds_index=index_time,
            seconds_total=time.perf_counter() - t0,
        )
        return decoded

    def _fold(self, spans: list[Received]) -> list[tuple[str | None, str | None]]:
        """Fold the records of ``spans`` (texts are the log's alone), keeping each trace's span
        list and running count; returns each span's (kind, function name) as the fold worked
        them out from its start record (None, None: it had started before). The caller holds
        the projection's lock."""
        apply = self.projection.apply_locked
        nodes = self.projection.nodes
        lives = self._live
        out: list[tuple[str | None, str | None]] = []
        for r in spans:
            sid = r.span_id
            n = nodes.get(sid)
            if n is None:
                lives[r.trace_id].spans.append(sid)
                before = 0
            else:
                before = n.state
            apply(r.started)
            if r.ended is not None:
                apply(r.ended)
            n = nodes[sid]
            after = n.state
            out.append((n.kind, n.function) if not before & STARTED else _UNKNOWN)
            if (after & _RUNNING == STARTED) != (before & _RUNNING == STARTED):
                lives[r.trace_id].open += 1 if after & _RUNNING == STARTED else -1
        return out

    def _apply(self, rec: Record, live: _Live) -> None:
        """Fold one record of ``live``'s trace, keeping its span list and running count."""
        t = type(rec)
        proj = self.projection
        if t is SpanStarted or t is SpanEnded:
            nodes = proj.nodes
            sid = rec.span_id  # type: ignore[union-attr]
            n = nodes.get(sid)
            if n is None:
                live.spans.append(sid)
                before = 0
            else:
                before = n.state
            proj.apply_locked(rec)
            after = nodes[sid].state
            live.open += ((after & _RUNNING) == STARTED) - ((before & _RUNNING) == STARTED)
        else:
            proj.apply_locked(rec)

    def authorized(self, header: str | None) -> bool:
        """Does an ``Authorization`` header carry the token (always, when none is set)?"""
        if self.token is None:
            return True
        expected = f"Bearer {self.token}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    def close(self) -> None:
        with self.projection.lock:
            if self.log is not None:
                self.log.close()
                self.index.mark_complete(self._log_size())
            self.index.close()

    def _log_size(self) -> int:
        if self.log is None:
            return 0
        try:
            return os.stat(self.log.path).st_size
        except OSError:
            return -1  # never equal to a count of bytes: the ranges of this request widen to the end

    # ---- eviction -------------------------------------------------------------------------
    def _evict_locked(self) -> None:
        """Evict least recently updated finished traces (with their trees) down to the limit;
        past the hard cap, running ones too. The caller holds the projection's lock."""
        proj = self.projection
        limit = self.max_traces
        trees, live = len(proj.trees), len(self._live)
        if trees <= limit and live <= limit:
            return
        chosen: set[str] = set()
        clashes: set[str] = set()
        keys_out: list[str] = []
        spans_out: list[str] = []
        entries: list[_Entry] = []
        for cap, running_too in ((limit, False), (limit * HARD_CAP_FACTOR, True)):
            if trees <= cap and live <= cap:
                continue
            for tid in list(self._live):
                if trees <= cap and live <= cap:
                    break
                if tid in chosen or (self._live[tid].open and not running_too):
                    continue
                traces, keys, running = self._component(tid)
                clash = [k for k in keys if k in self._index]
                if clash:  # in memory and out of it too (not expected): made whole below, not evicted now
                    clashes.update(clash)
                    continue
                if (running and not running_too) or not traces.isdisjoint(chosen):
                    continue  # running; or reaching a component chosen already: next time, alone
                chosen |= traces
                entries += self._entries(traces, keys)
                keys_out += keys
                for t in traces:
                    spans_out += self._live[t].spans
                trees -= len(keys)
                live -= len(traces)
        if chosen:
            self._evict_chosen(chosen, keys_out, spans_out, entries)
        for key in sorted(clashes):
            self._rehydrate_locked(key)

    def _evict_chosen(self, chosen: set[str], keys_out: list[str], spans_out: list[str], entries: list[_Entry]) -> None:
        self.projection.forget_locked(keys_out, spans_out)
        for tid in chosen:
            del self._live[tid]
        for entry in entries:
            old = self._index.pop(entry.key)
            if old is not None:  # not expected (a tree is in memory or out, not both): lose nothing
                log.debug("callctx serve: tree %r evicted while out of memory already; merged", entry.key)
                members = tuple(sorted({*old.members, *entry.members}))
                entry = entry._replace(ranges=_merge([*old.ranges, *entry.ranges]), members=members,
                                       spans=old.spans + entry.spans)  # fmt: skip
            self._index.put(entry)
            if entry.top_calls >= 0:
                self.evictions += 1
            for tid in entry.members:
                if tid != entry.key:
                    self._home[tid] = entry.key

    def _component(self, tid: str) -> tuple[set[str], list[str], bool]:
        """The traces and trees that must leave memory together with trace ``tid`` (its calls'
        trees, every trace listed in those, and so on), and whether any of them runs."""
        proj = self.projection
        nodes, trees = proj.nodes, proj.trees
        traces = {tid}
        keys: list[str] = []
        seen: set[str] = set()
        todo = [tid]
        running = False

        def add(key: str) -> None:
            seen.add(key)
            tree = trees.get(key)
            if tree is None:
                return
            keys.append(key)
            for n in _calls_in(tree):
                if n.trace_id not in traces:
                    traces.add(n.trace_id)
                    todo.append(n.trace_id)

        while todo:
            t = todo.pop()
            live = self._live.get(t)
            if live is None:
                continue
            if live.open:
                running = True
            if t in trees and t not in seen:
                add(t)
            for sid in live.spans:
                n = nodes.get(sid)
                if n is None:
                    continue
                key = _tree_key(n)
                if key is not None and key not in seen:
                    add(key)
                conv = n.conv if n.extra else None
                if conv is not None and conv not in seen and conv in trees and not trees[conv].top_calls:
                    add(conv)  # an empty tree a read of this span made (see Projection.view)
        return traces, keys, running

    def _entries(self, traces: set[str], keys: list[str]) -> list[_Entry]:
        """The index entries of one evicted component (computed before it is forgotten)."""
        ranges = _merge(r for t in traces for r in self._live[t].ranges)
        count = sum(len(self._live[t].spans) for t in traces)
        members = tuple(sorted(traces))
        out = []
        for key in keys:
            tops = self.projection.trees[key].top_calls
            listing = self._listing_id(tuple(n.function for n in tops[:20]))
            out.append(_Entry(key, ranges, count, len(tops), tops[0].start_ns if tops else 0, listing, members))
        if not keys:  # spans that list no call: kept so that late spans of the trace bring them back
            out.append(_Entry(members[0], ranges, count, -1, 0, -1, members))
        return out

    def _listing_id(self, names: tuple[str, ...]) -> int:
        """Trees listing the same functions at the top (one code path) share one tuple."""
        i = self._listings.get(names)
        if i is None:
            i = self._listings[names] = len(self._listing_names)
            self._listing_names.append(names)
        return i

    def _bring_back_locked(self, touched: Iterable[str], mark: tuple[str, Any] | None) -> None:
        """Fold back into memory the evicted trees this request's spans belong to: those of
        the traces it touched, and any tree it made anew (a call lands in a tree, or a late
        parent moves its waiting calls into one) that is out of memory. ``mark``: the newest
        tree before the request."""
        index = self._index
        if not len(index):
            return
        wanted = {key for key in (self._home.get(tid, tid) for tid in touched) if key in index}
        wanted.update(key for key in self._trees_since(mark) if key in index)
        while wanted:
            mark = self._newest_tree()
            for key in sorted(wanted):
                self._rehydrate_locked(key)
            wanted = {key for key in self._trees_since(mark) if key in index}

    def _newest_tree(self) -> tuple[str, Any] | None:
        trees = self.projection.trees
        key = next(reversed(trees), None)
        return None if key is None else (key, trees[key])

    def _trees_since(self, mark: tuple[str, Any] | None) -> list[str]:
        """The keys of the trees made after ``mark`` (a dict keeps insertion order); all of
        them when the mark itself went (a provisional tree whose calls moved under a parent)."""
        trees = self.projection.trees
        if mark is not None and trees.get(mark[0]) is not mark[1]:
            return list(trees)
        out = []
        for key in reversed(trees):
            if mark is not None and key == mark[0]:
                break
            out.append(key)
        return out

    def _rehydrate_locked(self, key: str) -> None:
        """Apply the records of an evicted tree (and of every tree evicted with it) to the live
        projection again; the fold does not depend on order, so this is as if they never left."""
        proj = self.projection
        nodes = proj.nodes
        restored: set[str] = set()
        todo = [key]
        while todo:
            entry = self._index.pop(todo.pop())
            if entry is None:
                continue
            fresh = [t for t in entry.members if t not in restored]
            restored.update(fresh)
            for tid in entry.members:
                if self._home.get(tid) == entry.key:
                    del self._home[tid]
            if not fresh:
                continue
            lives = {}
            for tid in fresh:
                live = self._live.get(tid)
                if live is None:
                    live = self._live[tid] = _Live()
                live.ranges[:0] = [[s, e] for s, e in entry.ranges]
                self._live.move_to_end(tid)
                lives[tid] = live
            applied = 0
            if self.log is not None:
                for rec in self._records(entry.ranges, lives):
                    t = type(rec)
                    if t is SpanStarted or t is SpanEnded or t is Collapsed:
                        live = lives.get(rec.trace_id)  # type: ignore[union-attr]
                        if live is not None:
                            self._apply(rec, live)
                            applied += 1
            proj.events -= applied  # these were counted when they first arrived
            for tid in fresh:  # trees evicted together with this one are back too
                for sid in lives[tid].spans:
                    n = nodes.get(sid)
                    other = _tree_key(n) if n is not None else None
                    if other is not None and other in self._index:
                        todo.append(other)
                if tid in self._index:
                    todo.append(tid)

    # ---- reading back ---------------------------------------------------------------------
    def _records(self, ranges: Iterable[tuple[int, int]], members: Iterable[str]) -> Iterator[Record]:
        """The records in ``ranges`` of the log, those of ``members`` among them (and maybe a few
        others: callers check). Lines are picked by a byte search for the trace ids before any
        is decoded, so a range wide with other traces' records costs little more than reading."""
        assert self.log is not None
        members = list(members)
        patterns = [b'"trace_id":"' + t.encode() + b'"' for t in members] if len(members) <= 16 else None
        for block in _blocks(self.log.path, ranges):
            if patterns is None:
                yield from _decode_block(block)
                continue
            starts = set()
            for pattern in patterns:
                i = block.find(pattern)
                while i >= 0:
                    starts.add(block.rfind(b"\n", 0, i) + 1)
                    end = block.find(b"\n", i)
                    i = block.find(pattern, end) if end >= 0 else -1
            for start in sorted(starts):
                end = block.find(b"\n", start)
                try:
                    yield decode(block[start : end if end >= 0 else len(block)])
                except _DECODE_ERRORS:
                    continue  # a torn or damaged line: the log's readers skip it too

    def _fold_back(self, entry: _Entry, scratch: Projection | None = None) -> Projection:
        """A fresh projection of an evicted tree's traces, from the log (or ``scratch`` with
        them added)."""
        if self.log is None:
            raise KeyError(f"{entry.key!r} left memory and there is no event log to read it back from")
        if scratch is None:
            scratch = Projection(output_limit=self.projection.output_limit)
        members = frozenset(entry.members)
        with scratch.lock:
            for rec in self._records(entry.ranges, members):
                t = type(rec)
                if (t is SpanStarted or t is SpanEnded or t is Collapsed) and rec.trace_id in members:  # type: ignore[union-attr]
                    scratch.apply_locked(rec)
        if self.projection.recovered:
            scratch.mark_recovered()
        return scratch

    def session_tree(self, key: str, *, render_range: int | None = None) -> str:
        """The whole tree of a session or trace, in memory or folded back from the log."""
        proj = self.projection
        for _ in range(3):
            with proj.lock:
                live = key in proj.trees
                entry = None if live else self._index.get(key)
            if live:
                try:
                    return proj.session_tree(key, render_range=render_range)
                except KeyError:
                    continue  # evicted in between: look again
            if entry is None or entry.top_calls < 0:
                break
            scratch = self._fold_back(entry)
            if key not in scratch.trees:  # a tree with no call in it (made by a read): as it rendered
                return ""
            return scratch.session_tree(key, render_range=render_range)
        raise KeyError(f"no session or trace {key!r}")

    def span_tree(self, span_id: str, *, render_range: int | None = None) -> str:
        """The tree as the call ``span_id`` sees it, in memory or folded back from the log."""
        proj = self.projection
        for _ in range(3):
            with proj.lock:
                n = proj.nodes.get(span_id)
                live = n is not None
                if live and len(self._index):
                    # a span no call holds is shown in the tree its session or trace names, which
                    # may be out of memory (its calls left without it): bring that tree back first
                    wanted = set()
                    while n is not None:
                        for key in (n.conv if n.extra else None, n.trace_id):
                            if key is not None and key in self._index:
                                wanted.add(key)
                        n = n.parent
                    for key in sorted(wanted):
                        self._rehydrate_locked(key)
            if live:
                try:
                    return proj.view(span_id, render_range=render_range).text
                except KeyError:
                    continue
            entry = self._evicted_entry_of(span_id)
            if entry is None:
                break
            if entry is _AGAIN:
                continue
            scratch = self._fold_back(entry)
            n = scratch.nodes.get(span_id)
            if n is not None and scratch.call_of(span_id) is None:
                # no call holds it: it sees the whole tree its session or trace names, which is
                # not among what came back when the calls of that tree are not its trace's
                key = _host_key(n)
                if key is not None and key not in scratch.trees:
                    try:
                        return self.session_tree(key, render_range=render_range)
                    except KeyError:
                        return ""  # no such tree anywhere: an empty one, as Projection.view renders
            return scratch.view(span_id, render_range=render_range).text
        raise KeyError(f"unknown span {span_id!r}")

    def span_tree_as_seen(self, span_id: str, *, render_range: int | None = None) -> str:
        """The tree as span ``span_id`` saw it when it started: its tree's records folded up to
        that moment (:mod:`callctx.projection.asof`), read from the log by their byte ranges."""
        if self.log is None:
            raise KeyError("the tree as a span saw it is folded from the event log; this receiver keeps none")
        proj = self.projection
        with proj.lock:
            n = proj.nodes.get(span_id)
            if n is not None:
                key = _tree_key(n) or _host_key(n)
                members = {n.trace_id}
                tree = proj.trees.get(key) if key is not None else None
                if tree is not None:
                    members.update(c.trace_id for c in _calls_in(tree))
                ranges = [tuple(r) for tid in members if tid in self._live for r in self._live[tid].ranges]
            else:
                ranges, members = [], set()
        if n is None:
            entry = self._evicted_entry_of(span_id)
            if entry is None or entry is _AGAIN:
                if entry is _AGAIN:
                    return self.span_tree_as_seen(span_id, render_range=render_range)
                raise KeyError(f"unknown span {span_id!r}")
            ranges, members = list(entry.ranges), set(entry.members)
        records = [
            r for r in self._records(sorted(ranges), members)
            if type(r) in (SpanStarted, SpanEnded, Collapsed) and r.trace_id in members  # type: ignore[union-attr]
        ]  # fmt: skip
        return tree_as_seen_by(records, span_id, render_range=render_range)

    def _evicted_entry_of(self, span_id: str) -> Any:
        """The index entry of an evicted span's tree: the Bloom filters name the stretches of
        log that may hold it, a scan finds its record and so its trace. ``_AGAIN``: it came back
        into memory meanwhile."""
        if self.log is None or not _SPAN_ID.fullmatch(span_id):
            return None
        with self.projection.lock:
            stretches = self._spans.stretches(span_id)
            if self._log_failed and stretches:  # records held back were written later than counted
                stretches = [(stretches[0][0], -1)]
        pattern = b'"span_id":"' + span_id.encode() + b'"'
        trace_id = None
        for block in _blocks(self.log.path, stretches):
            i = block.find(pattern)
            while i >= 0 and trace_id is None:
                start = block.rfind(b"\n", 0, i) + 1
                end = block.find(b"\n", i)
                try:
                    rec = decode(block[start : end if end >= 0 else len(block)])
                except _DECODE_ERRORS:
                    rec = None
                if (type(rec) is SpanStarted or type(rec) is SpanEnded) and rec.span_id == span_id:  # type: ignore[union-attr]
                    trace_id = rec.trace_id  # type: ignore[union-attr]
                i = block.find(pattern, i + 1)
            if trace_id is not None:
                break
        if trace_id is None:
            return None
        with self.projection.lock:
            if span_id in self.projection.nodes:
                return _AGAIN
            return self._index.get(self._home.get(trace_id, trace_id))

    # ---- read API -------------------------------------------------------------------------
    def traces(self) -> list[dict[str, Any]]:
        """Every tree received, in memory or evicted, by first start time."""
        p = self.projection
        rows: list[tuple[tuple[int, str], dict[str, Any]]] = []
        with p.lock:
            for key, tree in p.trees.items():
                tops = tree.top_calls
                row = {"id": key, "top_calls": len(tops), "functions": [n.function for n in tops[:20]],
                       "in_memory": True}  # fmt: skip
                rows.append(((tops[0].start_ns if tops else 0, key), row))
            listings = self._listing_names
            for key, start_ns, top_calls, listing in self._index.listed():
                row = {"id": key, "top_calls": top_calls, "functions": list(listings[listing]),
                       "in_memory": False}  # fmt: skip
                rows.append(((start_ns, key), row))
        rows.sort(key=lambda r: r[0])
        return [row for _, row in rows]

    def listing(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """What ``traces()`` says of the trees ``keys`` (a page of the read API), found by key."""
        out: dict[str, dict[str, Any]] = {}
        p = self.projection
        with p.lock:
            for key in keys:
                tree = p.trees.get(key)
                if tree is not None:
                    tops = tree.top_calls
                    out[key] = {"top_calls": len(tops), "functions": [n.function for n in tops[:20]], "in_memory": True}
                    continue
                entry = self._index.get(key)
                if entry is not None and entry.top_calls >= 0:
                    names = list(self._listing_names[entry.listing]) if entry.listing >= 0 else []
                    out[key] = {"top_calls": entry.top_calls, "functions": names, "in_memory": False}
        return out

    def health(self, *, detail: bool = True) -> dict[str, Any]:
        """Liveness, and with ``detail`` the counters."""
        if not detail:
            return {"status": "ok"}
        s = self.stats
        p = self.projection
        with p.lock:
            in_memory, evicted, events, nodes = len(p.trees), self._index.listed_count, p.events, len(p.nodes)
        return {"status": "ok", "spans": s.spans, "rejected": s.rejected, "malformed": s.malformed,
                "events": events, "traces": in_memory + evicted, "traces_in_memory": in_memory,
                "traces_evicted": evicted, "spans_in_memory": nodes}  # fmt: skip

    def calls(self) -> tuple[list[ModelCall], dict[str, str]]:
        """Every model call received so far and the texts they were built from, read from the
        log (the read API pages through the index instead)."""
        if self.log is None:
            return [], {}
        return read_calls(self.log.path)

    def context(self, n: int) -> dict[str, Any]:
        """Call ``n``: our own rebuilt from the texts received and verified; another
        instrumentation's reconstructed from its span. ``KeyError`` when it cannot be."""
        row = self.index.call(n)
        if row is None:
            raise KeyError(f"call {n} is out of range (1 to {self.index.count_calls()})")
        if self.log is None or row["log_offset"] is None:
            raise KeyError(f"call {n}: its records are not in a log this receiver can read")
        records = [r for r in _read_range(self.log.path, row["log_offset"], row["log_length"])]
        start = next((r for r in records if type(r) is SpanStarted), None)
        end = next((r for r in records if type(r) is SpanEnded), None)
        if start is None:
            raise KeyError(f"call {n}: its records could not be read back from the log")
        attrs = {**start.attributes, **(end.attributes if end is not None else {})}
        manifest_text = start.attributes.get(s_CONTEXT)
        if not isinstance(manifest_text, str):
            rec = messages_of(attrs)
            return {"index": n, "reconstructed": True, "verified": False, "function": row["function"],
                    "model": row["model"], "usage": row["usage"], **msgspec.to_builtins(rec)}  # fmt: skip
        try:
            hashes = manifest_decode(manifest_text).text_hashes()
        except ManifestError as e:
            raise KeyError(f"call {n}: {e}") from None
        texts: dict[str, str] = {}
        for h, (offset, length) in self.index.blob_ranges(hashes).items():
            for r in _read_range(self.log.path, offset, length):
                if type(r) is Blob and r.hash == h:
                    texts[h] = r.text
        call = ModelCall(index=n, trace_id=start.trace_id, span_id=start.span_id, parent_id=start.parent_id,
                         start_ns=start.start_ns, manifest=manifest_text)  # fmt: skip
        try:
            return {"index": n, "reconstructed": False, **as_json(rebuild(call, texts))}
        except Unrebuildable as e:  # texts that never arrived, or arrived altered
            raise KeyError(str(e)) from None


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a moment: a request's records are many,
    short-lived and free of cycles, and a collection while they live would only move them to an
    older generation and bring on full collections of the whole heap sooner. Enabled again
    after, unless it was off already (as ``Projection.from_log`` does for a replay)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _read_range(path: str | os.PathLike[str], offset: int, length: int) -> list[Record]:
    """The records in ``length`` bytes of the log from ``offset``."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    out = []
    for line in data.splitlines():
        if line.strip():
            try:
                out.append(decode(line))
            except _DECODE_ERRORS:
                continue
    return out


def open_index(log_path: str | os.PathLike[str]) -> Index:
    """The index beside a receiver's log: reused when it covers the whole log, else rebuilt
    from the log (the log is the source of truth)."""
    path = f"{os.fspath(log_path)}.index.sqlite"
    size = os.stat(log_path).st_size if os.path.exists(log_path) else 0
    if os.path.exists(path):
        index = Index(path)
        if index.complete_at() == size:
            index.mark_complete(None)  # in use: not complete until closed again
            return index
        index.close()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path + suffix)
    index = Index(path)
    if size:
        index.rebuild(log_path)
    return index


_AGAIN = object()
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_TRACE_ID = re.compile(r"[0-9a-f]{32}")


class _Live:
    """A trace with spans in memory: the spans received, how many run, where its records are."""

    __slots__ = ("open", "ranges", "spans")

    def __init__(self) -> None:
        self.spans: list[str] = []
        self.open = 0  # spans started and not ended
        self.ranges: list[list[int]] = []  # [first byte, end] in the log; end -1: to the end of the log

    def add_range(self, start: int, end: int) -> None:
        ranges = self.ranges
        if ranges:
            last = ranges[-1]
            if last[1] < 0:
                return
            if start - last[1] <= MERGE_GAP:
                last[1] = end if end < 0 else max(last[1], end)
                return
        ranges.append([start, end])


class _Entry(NamedTuple):
    """One evicted tree (``top_calls`` -1: spans of traces that list no call, not shown)."""

    key: str
    ranges: tuple[tuple[int, int], ...]
    spans: int
    top_calls: int
    start_ns: int
    listing: int  # id of the function names of the first 20 top calls (-1: none listed)
    members: tuple[str, ...]  # the traces whose records make the tree


def _merge(ranges: Iterable[list[int] | tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for s, e in sorted((r[0], r[1]) for r in ranges):
        if out:
            ls, le = out[-1]
            if le < 0:
                continue
            if s - le <= MERGE_GAP:
                out[-1] = (ls, e if e < 0 else max(le, e))
                continue
        out.append((s, e))
    return tuple(out)


_FIXED = struct.Struct("<16sqqIiqi")  # trace id, first byte, end, spans, top calls, start, listing


class _Index:
    """The evicted trees. The common one, a trace of its own with one range of log, is a
    52-byte record in a table of packed buckets (found by ``bytes.find``; the names its top
    calls list are an id into the receiver's interned listings); any other (a session tree,
    several ranges) is a msgpack entry in a dict. Not thread-safe: the receiver holds its lock."""

    def __init__(self) -> None:
        self._buckets: list[bytearray] = [bytearray() for _ in range(256)]
        self._fixed = 0
        self._other: dict[str, bytes] = {}
        self.listed_count = 0

    def __len__(self) -> int:
        return self._fixed + len(self._other)

    def __contains__(self, key: str) -> bool:
        return key in self._other or self._find(key)[1] >= 0

    def _find(self, key: str) -> tuple[bytearray | None, int]:
        if len(key) != 32 or not self._fixed or not _TRACE_ID.fullmatch(key):
            return None, -1
        raw = bytes.fromhex(key)
        bucket = self._buckets[hash(raw) & (len(self._buckets) - 1)]
        size = _FIXED.size
        i = bucket.find(raw)
        while i >= 0 and i % size:
            i = bucket.find(raw, i + 1)
        return bucket, i

    def get(self, key: str) -> _Entry | None:
        packed = self._other.get(key)
        if packed is not None:
            key, ranges, spans, top_calls, start_ns, listing, members = msgspec.msgpack.decode(packed)
            return _Entry(key, tuple(map(tuple, ranges)), spans, top_calls, start_ns, listing, tuple(members))
        bucket, i = self._find(key)
        if bucket is None or i < 0:
            return None
        _, start, end, spans, top_calls, start_ns, listing = _FIXED.unpack_from(bucket, i)
        return _Entry(key, ((start, end),), spans, top_calls, start_ns, listing, (key,))

    def pop(self, key: str) -> _Entry | None:
        entry = self.get(key)
        if entry is None:
            return None
        if self._other.pop(key, None) is None:
            bucket, i = self._find(key)
            assert bucket is not None and i >= 0
            size = _FIXED.size
            if i != len(bucket) - size:
                bucket[i : i + size] = bucket[-size:]
            del bucket[-size:]
            self._fixed -= 1
        if entry.top_calls >= 0:
            self.listed_count -= 1
        return entry

    def put(self, entry: _Entry) -> None:
        key = entry.key
        if entry.members == (key,) and len(entry.ranges) == 1 and _TRACE_ID.fullmatch(key) and key not in self._other:
            start, end = entry.ranges[0]
            raw = bytes.fromhex(key)
            if len(self._buckets) * 128 < self._fixed:
                self._grow()
            self._buckets[hash(raw) & (len(self._buckets) - 1)] += _FIXED.pack(
                raw, start, end, entry.spans, entry.top_calls, entry.start_ns, entry.listing
            )
            self._fixed += 1
        else:
            self._other[key] = msgspec.msgpack.encode(tuple(entry))
        if entry.top_calls >= 0:
            self.listed_count += 1

    def _grow(self) -> None:
        old = self._buckets
        self._buckets = [bytearray() for _ in range(len(old) * 4)]
        mask = len(self._buckets) - 1
        size = _FIXED.size
        for bucket in old:
            for i in range(0, len(bucket), size):
                record = bucket[i : i + size]
                self._buckets[hash(bytes(record[:16])) & mask] += record

    def listed(self) -> Iterator[tuple[str, int, int, int]]:
        """(key, start, top calls, listing id) of every evicted tree that lists calls."""
        for bucket in self._buckets:
            for raw, _, _, _, top_calls, start_ns, listing in _FIXED.iter_unpack(bucket):
                if top_calls >= 0:
                    yield raw.hex(), start_ns, top_calls, listing
        for packed in self._other.values():
            key, _, _, top_calls, start_ns, listing, _ = msgspec.msgpack.decode(packed)
            if top_calls >= 0:
                yield key, start_ns, top_calls, listing


class _Segment:
    __slots__ = ("bits", "count", "end", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.end = -1  # to the end of the log, while it is the last
        self.count = 0
        self.bits = bytearray(SEGMENT_SPANS * BLOOM_BITS // 8)


class _SpanFilter:
    """Which stretches of the log may hold a span's records: a Bloom filter per stretch of
    ``SEGMENT_SPANS`` spans (``BLOOM_BITS`` bits a span, 4 probes)."""

    _M = SEGMENT_SPANS * BLOOM_BITS

    def __init__(self, start: int) -> None:
        self.segments = [_Segment(max(start, 0))]

    def begin(self, offset: int) -> None:
        """A request's records start at ``offset``: a full stretch ends there."""
        last = self.segments[-1]
        if last.count >= SEGMENT_SPANS and offset >= 0:
            last.end = offset
            self.segments.append(_Segment(offset))

    @classmethod
    def _probes(cls, span_id: str) -> tuple[int, int, int, int]:
        x = int(span_id, 16)
        h1, h2, m = x & 0xFFFFFFFF, (x >> 32) | 1, cls._M
        return h1 % m, (h1 + h2) % m, (h1 + 2 * h2) % m, (h1 + 3 * h2) % m

    def add(self, span_id: str) -> None:
        seg = self.segments[-1]
        seg.count += 1
        bits = seg.bits
        for p in self._probes(span_id):
            bits[p >> 3] |= 1 << (p & 7)

    def add_all(self, span_ids: Iterable[str]) -> None:
        """:meth:`add` each of ``span_ids`` (one request's: they go in the same stretch)."""
        seg = self.segments[-1]
        bits = seg.bits
        m = self._M
        count = 0
        for span_id in span_ids:
            x = int(span_id, 16)
            h1, h2 = x & 0xFFFFFFFF, (x >> 32) | 1
            for p in (h1 % m, (h1 + h2) % m, (h1 + 2 * h2) % m, (h1 + 3 * h2) % m):
                bits[p >> 3] |= 1 << (p & 7)
            count += 1
        seg.count += count

    def stretches(self, span_id: str) -> list[tuple[int, int]]:
        probes = self._probes(span_id)
        return [(seg.start, seg.end) for seg in self.segments if all(seg.bits[p >> 3] & (1 << (p & 7)) for p in probes)]


def _tree_key(n: Node | None) -> str | None:
    """The key of the tree a span's call (or its nearest listed ancestor) is listed in."""
    while n is not None:
        t = n.listed_in
        if t is not None:
            while type(t) is Node:
                t = t.listed_in
            return t.key if t is not None else None  # type: ignore[union-attr]
        n = n.parent
    return None


def _host_key(n: Node) -> str | None:
    """The tree a span no call holds is shown in (as ``Projection._host`` finds it), or None
    when a call above it holds it after all."""
    conv = n.conv if n.extra else None
    p = n.parent
    while p is not None:
        if p.holds:
            return None
        if conv is None:
            conv = p.conv if p.extra else None
        p = p.parent
    return conv or n.trace_id


def _calls_in(tree: Any) -> Iterator[Node]:
    stack = list(tree.top_calls)
    while stack:
        n = stack.pop()
        yield n
        if n.children:
            stack.extend(n.children)


def _blocks(path: str | os.PathLike[str], ranges: Iterable[tuple[int, int]]) -> Iterator[bytes]:
    """Whole lines of the log within each byte range (end -1: to the end of the file)."""
    with open(path, "rb") as f:
        for start, end in ranges:
            f.seek(start)
            left = -1 if end < 0 else end - start
            carry = b""
            while left:
                chunk = f.read(_CHUNK if left < 0 else min(_CHUNK, left))
                if not chunk:
                    break
                if left > 0:
                    left -= len(chunk)
                buf = carry + chunk if carry else chunk
                cut = buf.rfind(b"\n") + 1
                if cut:
                    yield buf[:cut]
                carry = buf[cut:]


def _decode_block(block: bytes) -> list[Record]:
    try:
        return decode_lines(block)
    except _DECODE_ERRORS:
        pass
    out = []
    for line in block.split(b"\n"):
        if line.strip():
            try:
                out.append(decode(line))
            except _DECODE_ERRORS:
                continue  # a torn or damaged line: the log's readers skip it too
    return out

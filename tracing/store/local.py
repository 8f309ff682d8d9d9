"""The local store: an event log and its SQLite index, behind the read model.

What ``callctx serve --log``, ``callctx ui LOG`` and the reading commands use. The log is the
source of truth; the index (:mod:`callctx.store.index`) is kept up to date by following the
log as it grows (:class:`callctx.projection.log_reader.LogTail`): every read first indexes what
was appended since the last one (:meth:`LocalStore.refresh`; a serve also refreshes in the
background, a step at a time between its requests: :meth:`LocalStore.follow`), so a reader
always sees every whole record written before it asked. A writer in the same process may hand
the records it is about to append to the index (:meth:`LocalStore.expect`), which then takes
them as they are instead of decoding their lines again.

An index kept in a file beside the log (``index=PATH``) starts again where it stopped: after
a clean stop, after ``SIGKILL``, and from nothing when it is missing, of another version, or of
another log. Trees are folded on read, by the projection, from the records of their traces
(read back by byte range); the last trees folded are kept while nothing new arrives for them,
up to ``max_trees`` trees and ``max_tree_spans`` spans in all.

Threading: any method from any thread; indexing is serialised by a lock, reads share the
index's connection under its lock. Errors: :class:`NotFound`, :class:`BadInput`; a log that
cannot be read is :class:`StoreUnavailable`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from callctx.projection.calls import ModelCall, RunStatus, Usage
from callctx.projection.errors import NotFound
from callctx.projection.events import Collapsed, Record, SpanEnded, SpanStarted
from callctx.projection.fold import Projection
from callctx.projection.log import Damage, LogError, writers_alive
from callctx.projection.log_reader import Known, Located, LogTail, merge_ranges, read_ranges
from callctx.projection.render import View

from .contexts import text_hashes
from .follow import Follower, Traffic
from .index import Index, run_status
from .ledger import LedgerView
from .model import (
    ANY,
    CacheEntry,
    Facets,
    Filter,
    Page,
    Recorded,
    SpanIO,
    SpanRow,
    Spend,
    StoreState,
    StoreUnavailable,
    TreeRow,
    bounds,
    out_of_range,
)

log = logging.getLogger(__name__)

FOLLOW_STEP = 64 << 10  # bytes of the log a following thread indexes at a time, between requests
LEDGER_STEP = 32  # calls it feeds the cache ledger at a time...
LEDGER_IDLE = 0.1  # ...once no request has run for this many seconds
GIVE_WAY = 0.25  # seconds a following thread waits for a server's requests, at most, per round
DEFAULT_MAX_TREES = 1000  # folded trees kept in memory...
DEFAULT_MAX_TREE_SPANS = 200_000  # ...and their spans, in all
RANGE_GAP = 64 << 10  # a tree's records closer than this many bytes are read in one go


class LocalStore:
    """The read model over one event log (see the module docstring).

    ``index``: a file for the index (kept between runs), or None to keep it in memory.
    ``finished``: ``True``, the log is complete (no writer will add to it): spans that never
    ended read as ``interrupted``, in listings and trees; ``False``, they read as ``running``;
    ``None`` (the default), the log is complete once no writer holds it (an open
    :class:`~callctx.projection.log.EventLog`, in any process: see its durability contract),
    asked at each refresh; the cursor moves when the answer changes."""

    def __init__(
        self,
        log_path: str | os.PathLike[str],
        *,
        index: str | os.PathLike[str] | None = None,
        finished: bool | None = None,
        max_trees: int = DEFAULT_MAX_TREES,
        max_tree_spans: int = DEFAULT_MAX_TREE_SPANS,
        ttl: float | None = None,
    ) -> None:
        self.path = Path(log_path)
        self._given_finished = finished
        self.finished = bool(finished)
        self.max_trees = max_trees
        self.max_tree_spans = max_tree_spans
        self.index = Index(index, read_back=self._read_back)
        offset, line, identity = self.index.position()
        self._tail = LogTail(self.path, offset=offset, line=line, identity=identity, known=Known())
        self._refreshing = threading.Lock()
        self._epoch = 0  # bumped when the log is replaced or becomes finished: the cursor moves
        self._folded: OrderedDict[str, tuple[tuple[int, int], Projection, int]] = OrderedDict()
        self._folded_spans = 0
        self._fold_lock = threading.Lock()
        self._totals: dict[str, tuple[tuple[int, int], dict[str, tuple[Usage, list[Spend]]]]] = {}
        self.ledger = LedgerView(self, ttl=ttl)
        self._following = Follower(self._follow_round, name="callctx-store-follow", what=lambda: str(self.path))
        self._traffic: Traffic | None = None
        self._give_way = GIVE_WAY

    # ---- following the log --------------------------------------------------------------------
    def expect(self, data: bytes, records: Sequence[Record]) -> None:
        """A writer in this process is about to append ``data``, the lines of ``records`` (one
        each, in order): the index takes them from here when it finds those lines in the log,
        instead of decoding them again (:class:`~callctx.projection.log_reader.Known`). What it
        indexes is still what the log holds."""
        self._tail.known.add(data, records)

    def refresh(self, limit: int | None = None) -> int:
        """Index what was appended to the log since the last refresh (with ``limit``, about that
        many bytes of it at most: :attr:`behind` then says whether there is more); the cursor
        after it."""
        with self._refreshing:
            tail = self._tail
            blocks = tail.read(limit)
            first = True
            for block in blocks:
                if first and tail.replaced:
                    self._epoch += 1
                    self.index.reset()
                    self._forget_folds()
                first = False
                try:
                    self.index.add(block, offset=tail.offset, line=tail.line, identity=tail.identity)
                except Exception:  # noqa: BLE001 - the log has the records; the index must go on
                    self._add_one_by_one(block)
            if first and tail.replaced:
                self._epoch += 1
                self.index.reset()
                self._forget_folds()
            if self._given_finished is None:
                self._ask_writers()
            return self._cursor()

    def _ask_writers(self) -> None:
        """Is the log finished now (it exists and no writer holds it)? A change moves the cursor
        and drops the folded trees, so every reader sees the new statuses."""
        finished = self.path.exists() and not writers_alive(self.path)
        if finished != self.finished:
            self.finished = finished
            self._epoch += 1
            self._forget_folds()

    def _add_one_by_one(self, block: Sequence[Located]) -> None:
        """A block the index refused: each record again on its own, so that only the ones it
        cannot take are left out (counted, and said once per refresh)."""
        tail = self._tail
        refused: list[str] = []
        for item in block:
            try:
                self.index.add([item], offset=item.offset + item.length, line=tail.line, identity=tail.identity)
            except Exception as e:  # noqa: BLE001
                self.index.refused += 1
                refused.append(f"{type(e).__name__}: {e}")
        self.index.add([], offset=tail.offset, line=tail.line, identity=tail.identity)
        if refused:
            log.error("callctx: %d records of %s could not be indexed (the log keeps them): %s",
                      len(refused), self.path, refused[0])  # fmt: skip

    def _cursor(self) -> int:
        return (self._epoch << 48) + self._tail.offset

    @property
    def behind(self) -> bool:
        """Did the last refresh stop at its limit, before the end of the log?"""
        return self._tail.more

    def follow(self, every: float = 0.25, *, traffic: Traffic | None = None, give_way: float = GIVE_WAY) -> None:
        """Keep the index and the cache ledger up to date in a background thread, looking at
        the log every ``every`` seconds (readers then find the ledger ready), until :meth:`close`.

        With ``traffic`` (the requests of the server writing the log), the thread gives way to
        them: it indexes ``FOLLOW_STEP`` bytes of the log at a time, each when no request is
        running, but waits no more than ``give_way`` seconds in a round (so the index is never
        much more than ``every + give_way`` seconds behind the log, however busy the server);
        the ledger is fed ``LEDGER_STEP`` calls at a time once no request has run for
        ``LEDGER_IDLE`` seconds (while requests keep coming it waits: a reader that asks for an
        entry brings the ledger up to it, as always)."""
        self._traffic = traffic
        self._give_way = give_way
        self._following.start(every)

    def _follow_round(self) -> None:
        traffic = self._traffic
        if traffic is None:
            self.refresh()
            self.ledger.update()
            return
        until = time.monotonic() + self._give_way
        while True:
            traffic.quiet(until - time.monotonic())
            self.refresh(FOLLOW_STEP)
            if not self.behind:
                break
        while traffic.idle(LEDGER_IDLE) and self.ledger.step(LEDGER_STEP):
            pass

    def close(self) -> None:
        self._following.stop()
        self.index.close()

    def __enter__(self) -> LocalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def damage(self) -> list[Damage]:
        """The first damaged records found (their lines and why)."""
        return self._tail.damage

    # ---- listings -----------------------------------------------------------------------------
    def state(self) -> StoreState:
        cursor = self.refresh()
        return StoreState(
            cursor=cursor, calls=self.index.count_calls(), trees=self.index.tree_count(),
            spans=self.index.span_count(), source=str(self.path), exists=self.path.exists(),
            damaged=self._tail.damaged, ledger=self.ledger.fed,
        )  # fmt: skip

    def facets(self) -> Facets:
        self.refresh()
        services, functions, models = self.index.facets()
        return Facets(services=services, functions=functions, models=models)

    def calls(self, f: Filter = ANY, *, offset: int = 0, limit: int = 100) -> Page[ModelCall]:
        offset, limit = bounds(offset, limit)
        self.refresh()
        total, calls = self.index.calls(f, offset, limit)
        for c in calls:
            c.status = self._status_of_call(c)
        return Page(total=total, offset=offset, limit=limit, items=calls)

    def call(self, n: int) -> ModelCall:
        self.refresh()
        call = self.index.call(n)
        if call is None:
            raise out_of_range(n, self.index.count_calls())
        call.status = self._status_of_call(call)
        return call

    def _status_of_call(self, call: ModelCall) -> RunStatus:
        return "interrupted" if call.status == "running" and self.finished else call.status

    def trees(self, f: Filter = ANY, *, offset: int = 0, limit: int = 100) -> Page[TreeRow]:
        offset, limit = bounds(offset, limit)
        self.refresh()
        if f.status == "interrupted" and self.finished:
            f = Filter(**{**_fields(f), "status": "running"})
        elif f.status == "running" and self.finished:
            return Page(total=0, offset=offset, limit=limit, items=[])
        total, rows = self.index.trees(f, offset, limit)
        called = self.index.tree_calls([r[0] for r in rows])
        out = []
        for key, session, first, last, spans, ended, errors, services in rows:
            n, spend, models = called.get(key, (0, [], []))
            usage = Usage()
            for sp in spend:
                usage = usage.plus(sp.usage)
            _, roots = self.index.roots(key, 0, 20)
            status: RunStatus = "error" if errors else ("running" if spans > ended else "ok")
            if status == "running" and self.finished:
                status = "interrupted"
            out.append(TreeRow(
                key=key, kind="session" if session else "trace", services=_services(services),
                start_ns=first or 0, end_ns=last or first or 0, status=status, spans=spans, calls=n, usage=usage,
                spend=spend, models=sorted(models), functions=[r[5] for r in roots],
            ))  # fmt: skip
        return Page(total=total, offset=offset, limit=limit, items=out)

    def spans(self, tree: str, parent: str | None = None, *, offset: int = 0, limit: int = 100) -> Page[SpanRow]:
        offset, limit = bounds(offset, limit)
        self.refresh()
        if not self.index.tree_exists(tree):
            raise NotFound(f"no tree {tree}")
        if parent is None:
            total, rows = self.index.roots(tree, offset, limit)
        else:
            if self.index.span(parent) is None:
                raise NotFound(f"no span {parent}")
            total, rows = self.index.children(parent, offset, limit)
        totals = self._subtree_totals(tree)
        numbers = self.index.call_numbers([r[0] for r in rows if r[4] == "llm"])
        items = []
        for sid, tid, parent_id, name, kind, fn, status, error, start, end, started, ended, kids, ours, said in rows:
            usage, spend = totals.get(sid, (Usage(), []))
            run = run_status(bool(started), bool(ended), status)
            if run == "running" and self.finished:
                run = "interrupted"
            items.append(SpanRow(
                span_id=sid, trace_id=tid, parent_id=parent_id, name=name or "", kind=kind, function=fn or "",
                status=run, error=error, start_ns=start, end_ns=end if ended else None, children=kids,
                call=numbers.get(sid), ours=bool(ours), usage=usage, spend=spend, excerpt=said,
            ))  # fmt: skip
        return Page(total=total, offset=offset, limit=limit, items=items)

    def _subtree_totals(self, key: str) -> dict[str, tuple[Usage, list[Spend]]]:
        """Per span of tree ``key``: the usage of the model calls under it (itself included),
        in all and per provider and model. Worked out once per version of the tree."""
        members = self.index.members(key)
        version = self.index.version(members)
        hit = self._totals.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        parents = dict(self.index.tree_spans(key))
        per: dict[str, dict[tuple[str | None, str | None], Usage]] = {}
        for sid, provider, model, usage in self.index.tree_call_usage(key):
            seen: set[str] = set()
            at: str | None = sid
            while at is not None and at in parents and at not in seen:
                seen.add(at)
                mine = per.setdefault(at, {})
                mine[(provider, model)] = mine.get((provider, model), Usage()).plus(usage)
                at = parents[at]
        out: dict[str, tuple[Usage, list[Spend]]] = {}
        for sid, by_model in per.items():
            total = Usage()
            spend = []
            for (provider, model), usage in sorted(by_model.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
                total = total.plus(usage)
                spend.append(Spend(provider, model, usage))
            out[sid] = (total, spend)
        if len(self._totals) > 64:
            self._totals.clear()
        self._totals[key] = (version, out)
        return out

    def span_io(self, span_id: str) -> SpanIO:
        self.refresh()
        row = self.index.span(span_id)
        if row is None or not row[10] or row[14] is None:  # unknown, or only its end arrived
            raise NotFound(f"unknown span {span_id!r}")
        start_at, start_len, end_at, end_len = row[14], row[15], row[16], row[17]
        ranges = [(start_at, start_at + start_len)]
        if end_at is not None:
            ranges.append((end_at, end_at + end_len))
        start: SpanStarted | None = None
        end: SpanEnded | None = None
        for rec in self._read(ranges):
            if type(rec) is SpanStarted and rec.span_id == span_id:
                start = start or rec
            elif type(rec) is SpanEnded and rec.span_id == span_id:
                end = end or rec
        if start is None:
            raise NotFound(f"span {span_id}: its records could not be read back from {self.path}")
        run = run_status(True, end is not None, end.status if end is not None else None)
        if run == "running" and self.finished:
            run = "interrupted"
        tree = self.index.tree_of(start.trace_id)
        return SpanIO.of(start, end, tree=tree, kind=row[4], function=row[5] or "", status=run)

    def ancestors(self, span_id: str) -> list[str]:
        """The span and the spans above it in its trace, the outermost first."""
        self.refresh()
        chain: list[str] = []
        trace_id: str | None = None
        sid: str | None = span_id
        while sid is not None and sid not in chain and len(chain) < 10_000:
            row = self.index.span(sid)
            if row is None or (trace_id is not None and row[1] != trace_id):
                break
            trace_id = row[1]
            chain.append(sid)
            sid = self.index.parent_of(sid)
        return chain[::-1]

    def tree_of(self, trace_id: str) -> str:
        """The session or trace a trace's spans are listed under."""
        return self.index.tree_of(trace_id)

    # ---- trees, folded on read ----------------------------------------------------------------
    def tree(self, key: str, *, render_range: int | None = None, view: View = "model") -> str:
        self.refresh()
        members = self.index.members(key)
        if not members:
            raise NotFound(f"no session or trace {key!r}")
        proj = self._fold(key, members)
        try:
            return proj.session_tree(key, render_range=render_range, view=view)
        except KeyError:
            return ""  # spans, but no call to list: an empty tree

    def span_tree(self, span_id: str, *, final: bool = False, render_range: int | None = None) -> str:
        self.refresh()
        row = self.index.span(span_id)
        if row is None or not row[10]:  # unknown, or only its end arrived
            raise NotFound(f"unknown span {span_id!r}")
        trace_id = row[1]
        members = sorted({trace_id, *(t for key in self.index.trees_of(trace_id) for t in self.index.members(key))})
        if final:
            proj = self._fold("span:" + ",".join(members), members)
            return proj.view(span_id, render_range=render_range).text
        records = self._records(members)
        seen = Projection.as_seen_by(records, span_id)
        return seen.view(span_id, render_range=render_range).text

    def _records(self, members: Sequence[str]) -> list[Record]:
        """The records of the traces ``members`` as the fold of the whole log counts them: their
        spans' starts and ends (a span id started in another trace first is that trace's; the
        first end of a span ends it, whatever trace it names) and their collapses."""
        wanted = set(members)
        ranges, spans = self.index.ranges(members)
        return [r for r in self._read_around(ranges) if _counted(r, spans, wanted)]

    def _read_around(self, ranges: Sequence[tuple[int, int]]) -> list[Record]:
        """The records in and between ``ranges`` that lie close together (read in one go)."""
        try:
            return list(read_ranges(self.path, merge_ranges(ranges, RANGE_GAP)))
        except LogError as e:
            raise StoreUnavailable(str(e)) from None

    def _fold(self, key: str, members: Sequence[str]) -> Projection:
        version = self.index.version(members)
        with self._fold_lock:
            hit = self._folded.get(key)
            if hit is not None and hit[0] == version:
                self._folded.move_to_end(key)
                return hit[1]
        proj = Projection()
        proj.apply_all(self._records(members))  # type: ignore[arg-type]
        if self.finished:
            proj.mark_recovered()
        size = len(proj.nodes)
        with self._fold_lock:
            old = self._folded.pop(key, None)
            if old is not None:
                self._folded_spans -= old[2]
            if size <= self.max_tree_spans:
                self._folded[key] = (version, proj, size)
                self._folded_spans += size
                while (self._folded_spans > self.max_tree_spans or len(self._folded) > self.max_trees) and self._folded:
                    _, (_, _, n) = self._folded.popitem(last=False)
                    self._folded_spans -= n
        return proj

    def _forget_folds(self) -> None:
        with self._fold_lock:
            self._folded.clear()
            self._folded_spans = 0
        self._totals.clear()

    # ---- what a call was sent -----------------------------------------------------------------
    def recorded(self, call: ModelCall) -> Recorded:
        (found,) = self.recorded_many([call])
        return found

    def recorded_many(self, calls: Sequence[ModelCall]) -> list[Recorded]:
        self.refresh()
        wrapped = self.index.wrappers([c.parent_id for c in calls if c.foreign and c.parent_id])
        ranges: list[tuple[int, int]] = []
        for call in calls:
            for sid in (call.span_id, call.parent_id if call.parent_id in wrapped else None):
                row = self.index.span(sid) if sid is not None else None
                if sid == call.span_id and (row is None or row[14] is None):
                    raise NotFound(f"call {call.index}: its span is not in {self.path}")
                if row is None or row[14] is None:
                    continue
                start_at, start_len, end_at, end_len = row[14], row[15], row[16], row[17]
                ranges.append((start_at, start_at + start_len))
                if end_at is not None:
                    ranges.append((end_at, end_at + end_len))
        wanted = {c.span_id for c in calls} | wrapped
        starts: dict[str, SpanStarted] = {}
        ends: dict[str, SpanEnded] = {}
        for rec in self._read(ranges):
            if type(rec) is SpanStarted and rec.span_id in wanted:
                starts.setdefault(rec.span_id, rec)
            elif type(rec) is SpanEnded and rec.span_id in wanted:
                ends.setdefault(rec.span_id, rec)
        texts = self.texts({h for c in calls for h in text_hashes(c)})
        out = []
        for call in calls:
            start = starts.get(call.span_id)
            if start is None:
                raise NotFound(f"call {call.index}: its records could not be read back from {self.path}")
            up = starts.get(call.parent_id) if call.parent_id in wrapped else None
            around = (up, ends.get(up.span_id)) if up is not None else None
            out.append(Recorded(call=call, texts=texts, start=start, end=ends.get(call.span_id), around=around))
        return out

    def cache(self, n: int) -> CacheEntry:
        return self.ledger.entry(n)

    def cache_ready(self, n: int) -> CacheEntry | None:
        found = self.ledger.ready(n)
        if found is None or found.span_id != self.call(n).span_id:
            return None
        return found

    def cache_many(self, numbers: Sequence[int]) -> list[CacheEntry]:
        return self.ledger.entries_of(numbers)

    def texts(self, hashes: Iterable[str]) -> dict[str, str]:
        self.refresh()
        found = self.index.blob_ranges(hashes)
        out: dict[str, str] = {}
        by_range = sorted((at, at + n, h) for h, (at, n) in found.items())
        for rec in self._read([(a, b) for a, b, _ in by_range]):
            h = getattr(rec, "hash", None)
            if h in found:
                out[h] = rec.text  # type: ignore[union-attr]
        return out

    def _read(self, ranges: Sequence[tuple[int, int]]) -> list[Record]:
        try:
            return list(read_ranges(self.path, merge_ranges(ranges)))
        except LogError as e:
            raise StoreUnavailable(str(e)) from None

    def _read_back(self, offset: int, length: int) -> Record | None:
        found = self._read([(offset, offset + length)])
        return found[0] if found else None


def _counted(r: Record, spans: set[str], traces: set[str]) -> bool:
    """Is ``r`` a record the fold counts for ``spans`` (a start or end of one of them: those
    of another trace come after the one that counts, and change nothing) or for ``traces``?"""
    t = type(r)
    if t is SpanStarted or t is SpanEnded:
        return r.span_id in spans  # type: ignore[union-attr]
    return t is Collapsed and r.trace_id in traces  # type: ignore[union-attr]


def _services(concatenated: str | None) -> list[str]:
    out: set[str] = set()
    for part in (concatenated or "").split("\x1f"):
        if part:
            out.update(json.loads(part))
    return sorted(out)


def _fields(f: Filter) -> dict[str, Any]:
    return msgspec.structs.asdict(f)

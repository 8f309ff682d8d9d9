"""The ClickHouse store: the read model over the Collector's traces table, answered by SQL.

What ``--store chdb:PATH`` and ``--store clickhouse://…`` read through. The table is the one
the Collector's ``clickhouse`` exporter creates and fills (either variant), or that ``callctx
serve --store`` fills the same way; beside it, callctx's listings of it
(:mod:`callctx.store.derived`), brought up to date before every read when the table has grown
(:meth:`ClickHouseStore.refresh`: a row count, then the traces whose rows changed).

How each answer is made:

* sessions, traces and model calls, with filters, pages and totals, and the facets: SQL over
  the listings; calls numbered over every call by ``row_number() OVER (ORDER BY start_ns,
  SpanId)``, whatever the filter.
* a tree (its spans a level at a time, its YAML, a span's view of it, a span's ancestors, one
  span's input and output):
  the rows of its traces, one bounded query, folded on read by the projection
  (a :class:`~callctx.store.held.HeldStore`); the last trees read are kept while their
  traces do not change, up to ``max_trees`` trees and ``max_tree_spans`` spans.
* what a call was sent: its span's row (and its wrapper's), and the texts its manifest names,
  found by hash in the listing of texts and read from the rows whose ``callctx.blob`` events
  carry them, wherever in the table they are.
* the cache ledger: :class:`~callctx.store.ledger.LedgerView`, as for every store.

Nothing is kept but caches: several processes over one ClickHouse (instances of ``callctx
serve --store`` behind a load balancer) answer alike. The table's spans all ended where they
were exported: a span exported as interrupted reads as ``interrupted`` (never ``running``).

Threading: any method from any thread. Errors: :class:`NotFound` for an unknown call, tree or
span; :class:`BadInput` for a parameter out of range; :class:`StoreUnavailable` (one line) for
a server that does not answer, a missing table or one of another schema.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, Final

from callctx.projection.calls import ModelCall, RunStatus, Usage
from callctx.projection.errors import NotFound
from callctx.projection.render import View
from callctx.projection.texts import Assembler

from .connection import DATABASE, Connection, Param, StoreURL, connect
from .contexts import text_hashes
from .derived import Derived
from .follow import Follower
from .held import HeldStore
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
    TreeRow,
    bounds,
    out_of_range,
)
from .otel_table import OtelTable

log = logging.getLogger(__name__)

DEFAULT_MAX_TREES: Final = 64
DEFAULT_MAX_TREE_SPANS: Final = 200_000
MAX_MEMBERS: Final = 10_000  # traces of one tree read at most
MAX_FACETS: Final = 10_000
_CHUNK: Final = 1000  # ids per lookup

_CALL_COLUMNS: Final = (
    "TraceId, SpanId, ParentSpanId, start_ns, end_ns, status, error, service, session, model, provider, "
    "function, path, manifest, input, output, cache_read, cache_write, tree, agent_span, excerpt"
)


class ClickHouseStore:
    """The read model over one traces table (see the module docstring).

    ``create``: make the table (and its lookup) with the exporter's DDL when it is missing,
    as ``callctx serve --store`` does; otherwise a missing table is an error. The connection
    is the caller's to close (:meth:`open` makes one the store closes)."""

    def __init__(
        self,
        conn: Connection,
        *,
        database: str = DATABASE,
        table: str = "otel_traces",
        create: bool = False,
        max_trees: int = DEFAULT_MAX_TREES,
        max_tree_spans: int = DEFAULT_MAX_TREE_SPANS,
        ttl: float | None = None,
    ) -> None:
        self.table = OtelTable(conn, database=database, table=table)
        if create:
            self.table.create()
        else:
            self.table.check()
        self.derived = Derived(self.table)
        self.derived.create()
        self.max_trees, self.max_tree_spans = max_trees, max_tree_spans
        self._seen = -1  # the table's row count when the listings last caught up
        self._refreshing = threading.Lock()
        self._held: OrderedDict[str, tuple[tuple[tuple[str, int], ...], HeldStore, int]] = OrderedDict()
        self._held_spans = 0
        self._held_lock = threading.Lock()
        self.ledger = LedgerView(self, ttl=ttl)
        self._following = Follower(self._follow_round, name="callctx-clickhouse-follow", what=lambda: str(self.source))
        self.owns_connection = False  # closed with the store: when the store made it (``open``)

    @classmethod
    def open(cls, url: StoreURL, **kw: Any) -> ClickHouseStore:
        """The store a URL names (its connection closed with the store)."""
        conn = connect(url)
        try:
            store = cls(conn, database=url.database, table=url.table, **kw)
        except BaseException:
            conn.close()
            raise
        store.owns_connection = True
        return store

    @property
    def source(self) -> str:
        return f"{self.table.source} {self.table.database}.{self.table.table}"

    def _q(self, sql: str, params: dict[str, Param] | None = None) -> list[dict[str, Any]]:
        return self.table.conn.query(sql, params)

    # ---- following the table ------------------------------------------------------------------
    def refresh(self) -> int:
        """Bring the listings up to date with the table; the cursor after it."""
        with self._refreshing:
            n = self.table.count()
            if n != self._seen:
                traces, rows = self.derived.written_since()
                if traces and n - self._seen == rows:  # every new row is one this process wrote
                    self.derived.catch_up(traces)
                else:
                    self.derived.catch_up()
                self._seen = n
            return self._seen

    def follow(self, every: float = 0.25) -> None:
        """Keep the listings and the cache ledger up to date in a background thread, every
        ``every`` seconds, until :meth:`close`."""
        self._following.start(every)

    def _follow_round(self) -> None:
        self.refresh()
        self.ledger.update()

    def close(self) -> None:
        self._following.stop()
        with self._held_lock:
            for _, held, _ in self._held.values():
                held.close()
            self._held.clear()
        if self.owns_connection:
            self.table.close()

    def __enter__(self) -> ClickHouseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- listings -----------------------------------------------------------------------------
    def state(self) -> StoreState:
        cursor = self.refresh()
        d = self.derived
        (calls,) = self._q(f"SELECT count() AS n FROM {d.current_calls}")
        (trees,) = self._q(
            f"SELECT length(groupUniqArrayArray(trees)) AS n, sum(spans) AS n_spans FROM {d.current_traces} "
            "WHERE spans > 0"
        )
        return StoreState(
            cursor=cursor, calls=int(calls["n"]), trees=int(trees["n"]), spans=int(trees["n_spans"] or 0),
            source=self.source, exists=cursor > 0, damaged=d.rejected, ledger=self.ledger.fed, kind="table",
        )  # fmt: skip

    def facets(self) -> Facets:
        self.refresh()
        d = self.derived
        services = self._q(
            f"SELECT DISTINCT arrayJoin(services) AS v FROM {d.current_traces} ORDER BY v LIMIT {MAX_FACETS}"
        )
        functions = self._q(
            f"SELECT DISTINCT arrayJoin(functions) AS v FROM {d.current_traces} ORDER BY v LIMIT {MAX_FACETS}"
        )
        models = self._q(
            f"SELECT DISTINCT model AS v FROM {d.current_calls} WHERE model IS NOT NULL ORDER BY v LIMIT {MAX_FACETS}"
        )
        return Facets(
            services=[r["v"] for r in services], functions=[r["v"] for r in functions], models=[r["v"] for r in models]
        )

    def _calls_where(self, f: Filter) -> tuple[str, dict[str, Param]] | None:
        """The SQL of a calls filter and its parameters; None: nothing can match."""
        conds: list[str] = []
        params: dict[str, Param] = {}

        def add(cond: str, name: str, value: Param | None) -> None:
            if value is not None:
                conds.append(cond)
                params[name] = value

        add("service = {service:String}", "service", f.service)
        add("session = {session:String}", "session", f.session)
        add(
            f"TraceId IN (SELECT TraceId FROM {self.derived.current_traces} WHERE has(trees, {{tree:String}}))",
            "tree",
            f.tree,
        )
        add("model = {model:String}", "model", f.model)
        add("start_ns >= {since:Int64}", "since", f.since_ns)
        add("start_ns < {until:Int64}", "until", f.until_ns)
        add("function = {function:String}", "function", f.function)
        if f.status == "running":
            return None  # every span in the table ended where it was exported
        if f.status == "interrupted":
            conds.append("status = 'running'")
        elif f.status is not None:
            add("status = {status:String}", "status", f.status)
        if f.ours is True:
            conds.append("manifest IS NOT NULL")
        elif f.ours is False:
            conds.append("manifest IS NULL")
        if f.agent_in is not None:
            add("agent_span IN {agents:Array(String)}", "agents", list(f.agent_in))
        return " AND ".join(conds) or "1", params

    def calls(self, f: Filter = ANY, *, offset: int = 0, limit: int = 100) -> Page[ModelCall]:
        offset, limit = bounds(offset, limit)
        self.refresh()
        where = self._calls_where(f)
        if where is None:
            return Page(total=0, offset=offset, limit=limit, items=[])
        sql, params = where
        # numbered over every call on the columns the order and the filter need; the page's
        # calls then read whole by id
        numbered = (
            "(SELECT TraceId, SpanId, start_ns, status, service, session, model, function, manifest, agent_span, "
            f"row_number() OVER (ORDER BY start_ns, SpanId) AS n FROM {self.derived.current_calls})"
        )
        rows = self._q(
            f"SELECT TraceId, SpanId, n, count() OVER () AS total FROM {numbered} WHERE {sql} "
            f"ORDER BY n LIMIT {limit} OFFSET {offset}",
            params,
        )
        if rows:
            total = int(rows[0]["total"])
        else:
            (found,) = self._q(f"SELECT count() AS n FROM {numbered} WHERE {sql}", params)
            total = int(found["n"])
        return Page(total=total, offset=offset, limit=limit, items=self._calls_by_id(rows))

    def _calls_by_id(self, picked: Sequence[dict[str, Any]]) -> list[ModelCall]:
        """The calls of ``picked`` (rows of TraceId, SpanId and number ``n``), in that order."""
        if not picked:
            return []
        rows = self._q(
            f"SELECT {_CALL_COLUMNS} FROM {self.derived.current_calls} WHERE TraceId IN {{t:Array(String)}} "
            "AND SpanId IN {s:Array(String)}",
            {"t": sorted({r["TraceId"] for r in picked}), "s": [r["SpanId"] for r in picked]},
        )
        by_id = {(r["TraceId"], r["SpanId"]): r for r in rows}
        out = []
        for p in picked:
            r = by_id.get((p["TraceId"], p["SpanId"]))
            if r is not None:
                r["n"] = p["n"]
                out.append(_call(r))
        return out

    def call(self, n: int) -> ModelCall:
        self.refresh()
        if n >= 1:
            picked = self._q(
                f"SELECT TraceId, SpanId FROM {self.derived.current_calls} ORDER BY start_ns, SpanId "
                f"LIMIT 1 OFFSET {int(n) - 1}"
            )
            for r in picked:
                r["n"] = n
            found = self._calls_by_id(picked)
            if found:
                return found[0]
        (total,) = self._q(f"SELECT count() AS n FROM {self.derived.current_calls}")
        raise out_of_range(n, int(total["n"]))

    def trees(self, f: Filter = ANY, *, offset: int = 0, limit: int = 100) -> Page[TreeRow]:
        offset, limit = bounds(offset, limit)
        self.refresh()
        if f.status == "running":
            return Page(total=0, offset=offset, limit=limit, items=[])
        d = self.derived
        conds = ["spans > 0"]
        params: dict[str, Param] = {}
        for cond, name, value in (
            ("session = {session:String}", "session", f.session),
            ("first >= {since:Int64}", "since", f.since_ns),
            ("first < {until:Int64}", "until", f.until_ns),
            ("has(services, {service:String})", "service", f.service),
            (f"TraceId IN (SELECT TraceId FROM {d.current_calls} WHERE model = {{model:String}})", "model", f.model),
            ("has(functions, {function:String})", "function", f.function),
        ):
            if value is not None:
                conds.append(cond)
                params[name] = value
        having = {
            "error": " HAVING sum(errors) > 0",
            "interrupted": " HAVING sum(errors) = 0 AND sum(spans) > sum(ended)",
            "ok": " HAVING sum(errors) = 0 AND sum(spans) <= sum(ended)",
        }.get(f.status or "", "")
        group = (
            "SELECT key, max(key != TraceId) AS is_session, min(first) AS first_ns, max(last) AS last_ns, "
            "sum(spans) AS n_spans, sum(ended) AS n_ended, sum(errors) AS n_errors, "
            "arraySort(arrayDistinct(groupArrayArray(services))) AS all_services, "
            "arraySlice(arraySort(groupArrayArray(roots)), 1, 20) AS all_roots "
            f"FROM {d.current_traces} ARRAY JOIN trees AS key WHERE {' AND '.join(conds)} GROUP BY key{having}"
        )
        (total,) = self._q(f"SELECT count() AS n FROM ({group})", params)
        rows = self._q(f"SELECT * FROM ({group}) ORDER BY first_ns, key LIMIT {limit} OFFSET {offset}", params)
        called = self._tree_calls([r["key"] for r in rows])
        out = []
        for r in rows:
            n, spend, models = called.get(r["key"], (0, [], []))
            usage = Usage()
            for sp in spend:
                usage = usage.plus(sp.usage)
            spans, first = int(r["n_spans"]), int(r["first_ns"])
            status: RunStatus = (
                "error" if int(r["n_errors"]) else ("interrupted" if spans > int(r["n_ended"]) else "ok")
            )
            out.append(TreeRow(
                key=r["key"], kind="session" if int(r["is_session"]) else "trace", services=list(r["all_services"]),
                start_ns=first, end_ns=int(r["last_ns"]) or first, status=status, spans=spans, calls=n, usage=usage,
                spend=spend, models=sorted(models), functions=[root[2] for root in r["all_roots"]],
            ))  # fmt: skip
        return Page(total=int(total["n"]), offset=offset, limit=limit, items=out)

    def _tree_calls(self, keys: Sequence[str]) -> dict[str, tuple[int, list[Spend], list[str]]]:
        out: dict[str, tuple[int, list[Spend], list[str]]] = {}
        if not keys:
            return out
        d = self.derived
        rows = self._q(  # a trace's calls count in every tree it is listed under
            "SELECT m.key AS key, c.provider AS provider, c.model AS model, count() AS n, sum(c.input) AS i, "
            "sum(c.output) AS o, sum(c.cache_read) AS cr, sum(c.cache_write) AS cw "
            f"FROM {d.current_calls} AS c INNER JOIN (SELECT TraceId, key FROM {d.current_traces} "
            "ARRAY JOIN trees AS key WHERE key IN {keys:Array(String)}) AS m ON c.TraceId = m.TraceId "
            "GROUP BY key, provider, model ORDER BY key, provider NULLS FIRST, model NULLS FIRST",
            {"keys": list(keys)},
        )
        for r in rows:
            count, spend, models = out.setdefault(r["key"], (0, [], []))
            spend.append(Spend(r["provider"], r["model"], _usage(r["i"], r["o"], r["cr"], r["cw"])))
            if r["model"] and r["model"] not in models:
                models.append(r["model"])
            out[r["key"]] = (count + int(r["n"]), spend, models)
        return out

    # ---- trees, folded on read ----------------------------------------------------------------
    def _members(self, keys: Iterable[str]) -> list[tuple[str, int, int, int]]:
        """(trace id, version, first, last) of the traces of trees ``keys``."""
        rows = self._q(
            f"SELECT TraceId, version, first, last FROM {self.derived.current_traces} "
            f"WHERE hasAny(trees, {{keys:Array(String)}}) AND spans > 0 ORDER BY TraceId LIMIT {MAX_MEMBERS}",
            {"keys": list(keys)},
        )
        return [(r["TraceId"], int(r["version"]), int(r["first"]), int(r["last"])) for r in rows]

    def _held_of(self, members: Sequence[tuple[str, int, int, int]]) -> HeldStore:
        """The traces ``members``, folded: kept while none of them changes."""
        version = tuple((t, v) for t, v, _, _ in members)
        key = ",".join(t for t, _, _, _ in members)
        with self._held_lock:
            hit = self._held.get(key)
            if hit is not None and hit[0] == version:
                self._held.move_to_end(key)
                return hit[1]
        batch = self.table.spans_of(
            [t for t, _, _, _ in members], since_ns=min(m[2] for m in members), until_ns=max(m[3] for m in members)
        )
        held = HeldStore(self.source)
        held.add(batch)
        size = len(batch.spans)
        with self._held_lock:
            old = self._held.pop(key, None)
            if old is not None:
                self._held_spans -= old[2]
            if size <= self.max_tree_spans:
                self._held[key] = (version, held, size)
                self._held_spans += size
                while (self._held_spans > self.max_tree_spans or len(self._held) > self.max_trees) and self._held:
                    _, (_, _, n) = self._held.popitem(last=False)  # a reader may still hold it: no close
                    self._held_spans -= n
        return held

    def _tree_held(self, key: str) -> HeldStore:
        self.refresh()
        members = self._members([key])
        if not members:
            raise NotFound(f"no session or trace {key!r}")
        return self._held_of(members)

    def _span_held(self, span_id: str) -> HeldStore | None:
        """The traces a span's views read: its trace, and every trace of the trees it is in."""
        self.refresh()
        found = self._q(f"SELECT TraceId FROM {self.derived.calls} WHERE SpanId = {{s:String}} LIMIT 1", {"s": span_id})
        trace_id = found[0]["TraceId"] if found else self.table.trace_of(span_id)
        if trace_id is None:
            return None
        trees = self._q(
            f"SELECT trees FROM {self.derived.current_traces} WHERE TraceId = {{t:String}} LIMIT 1", {"t": trace_id}
        )
        keys = list(trees[0]["trees"]) if trees else []
        members = self._members(sorted({trace_id, *keys}))
        return self._held_of(members) if members else None

    def spans(self, tree: str, parent: str | None = None, *, offset: int = 0, limit: int = 100) -> Page[SpanRow]:
        bounds(offset, limit)
        try:
            held = self._tree_held(tree)
        except NotFound:
            raise NotFound(f"no tree {tree}") from None
        page = held.spans(tree, parent, offset=offset, limit=limit)
        called = [r.span_id for r in page.items if r.call is not None]
        if called:  # the held traces number their calls among themselves: the table's numbers
            numbers = self._numbers(called)
            for r in page.items:
                if r.call is not None:
                    r.call = numbers.get(r.span_id, r.call)
        return page

    def _numbers(self, span_ids: Sequence[str]) -> dict[str, int]:
        """The numbers of the calls ``span_ids`` among every call of the table."""
        out: dict[str, int] = {}
        for i in range(0, len(span_ids), _CHUNK):
            rows = self._q(
                "SELECT SpanId, n FROM (SELECT SpanId, row_number() OVER (ORDER BY start_ns, SpanId) AS n "
                f"FROM {self.derived.current_calls}) WHERE SpanId IN {{s:Array(String)}}",
                {"s": list(span_ids[i : i + _CHUNK])},
            )
            out.update({r["SpanId"]: int(r["n"]) for r in rows})
        return out

    def span_io(self, span_id: str) -> SpanIO:
        held = self._span_held(span_id)
        if held is None:
            raise NotFound(f"unknown span {span_id!r}")
        return held.span_io(span_id)

    def ancestors(self, span_id: str) -> list[str]:
        held = self._span_held(span_id)
        return held.ancestors(span_id) if held is not None else []

    def tree(self, key: str, *, render_range: int | None = None, view: View = "model") -> str:
        return self._tree_held(key).tree(key, render_range=render_range, view=view)

    def span_tree(self, span_id: str, *, final: bool = False, render_range: int | None = None) -> str:
        held = self._span_held(span_id)
        if held is None:
            raise NotFound(f"unknown span {span_id!r}")
        return held.span_tree(span_id, final=final, render_range=render_range)

    # ---- what a call was sent -----------------------------------------------------------------
    def recorded(self, call: ModelCall) -> Recorded:
        (found,) = self.recorded_many([call])
        return found

    def recorded_many(self, calls: Sequence[ModelCall]) -> list[Recorded]:
        self.refresh()
        around = self._around(calls)
        keys = [(c.trace_id, c.span_id) for c in calls] + [
            (c.trace_id, a) for c in calls if (a := around.get(c.span_id))
        ]
        spans = {}
        for i in range(0, len(keys), _CHUNK):
            spans.update({r.span_id: r for r in self.table.spans_by_id(keys[i : i + _CHUNK]).spans})
        texts = self.texts({h for c in calls for h in text_hashes(c)})
        out = []
        for call in calls:
            r = spans.get(call.span_id)
            if r is None:
                raise NotFound(f"call {call.index}: its span is not in {self.source}")
            up = spans.get(around.get(call.span_id) or "")
            out.append(Recorded(
                call=call, texts=texts, start=r.started, end=r.ended,
                around=(up.started, up.ended) if up is not None else None,
            ))  # fmt: skip
        return out

    def _around(self, calls: Sequence[ModelCall]) -> dict[str, str]:
        """The wrapper span above each of ``calls`` that has one."""
        foreign = [c.span_id for c in calls if c.foreign and c.parent_id]
        out: dict[str, str] = {}
        for i in range(0, len(foreign), _CHUNK):
            for r in self._q(
                f"SELECT SpanId, around FROM {self.derived.current_calls} WHERE SpanId IN {{s:Array(String)}} "
                "AND around != ''",
                {"s": foreign[i : i + _CHUNK]},
            ):
                out[r["SpanId"]] = r["around"]
        return out

    def texts(self, hashes: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(hashes))
        out: dict[str, str] = {}
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i : i + _CHUNK]
            where = self._q(
                f"SELECT DISTINCT TraceId, SpanId FROM {self.derived.blobs} WHERE hash IN {{h:Array(String)}} "
                f"LIMIT 1 BY hash",
                {"h": chunk},
            )
            keys = [(r["TraceId"], r["SpanId"]) for r in where]
            want = set(chunk)
            for r in self.table.spans_by_id(keys).spans:
                for b in r.blobs:
                    if b.hash in want:
                        out[b.hash] = b.text
            parted = [h for h in chunk if h not in out]
            if parted:  # longer texts: every span that carries a part of one, then joined
                spans = self._q(
                    f"SELECT DISTINCT TraceId, SpanId FROM {self.derived.parts} WHERE hash IN {{h:Array(String)}}",
                    {"h": parted},
                )
                joined = Assembler()
                sought = set(parted)
                for r in self.table.spans_by_id([(s["TraceId"], s["SpanId"]) for s in spans]).spans:
                    for p in r.parts:
                        whole = joined.add(p) if p.hash in sought else None
                        if whole is not None:
                            out[whole.hash] = whole.text
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


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _usage(i: Any, o: Any, cr: Any, cw: Any) -> Usage:
    return Usage(_int(i), _int(o), _int(cr), _int(cw))


def _call(r: dict[str, Any]) -> ModelCall:
    status = r["status"]
    return ModelCall(
        index=int(r["n"]), trace_id=r["TraceId"], span_id=r["SpanId"], parent_id=r["ParentSpanId"],
        start_ns=int(r["start_ns"]), end_ns=_int(r["end_ns"]), provider=r["provider"], model=r["model"],
        function=r["function"], path=list(r["path"]), manifest=r["manifest"],
        status="interrupted" if status == "running" else status, error=r["error"],
        usage=_usage(r["input"], r["output"], r["cache_read"], r["cache_write"]), service=r["service"],
        session=r["session"], tree=r["tree"] or r["TraceId"], agent_span=r["agent_span"], excerpt=r["excerpt"],
    )  # fmt: skip


__all__ = ["ClickHouseStore"]

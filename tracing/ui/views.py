"""What the debugger page shows, as JSON-ready data: the lists, a tree level, a call's context
with its simulated cache use and what changed since the session's previous call, the request
as sent, and a session's cache chart. The shapes are the page's contract (see ``static/``).

Every view reads the :class:`LogStore` (refreshed by the caller) under its lock; derived data
is rebuilt once per store generation. Errors: ``KeyError`` for what does not exist (the
server answers 404), ``ValueError`` for a bad parameter (400).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import msgspec

from callctx.components import cache, record, wire
from callctx.components.cache import exchange_text
from callctx.components.context import Context
from callctx.components.wire.exchange import AssistantTurn, Exchange, ToolResults
from callctx.projection.calls import ModelCall
from callctx.projection.llm import messages_of
from callctx.store.recorded import Unrebuildable, rebuild

from .prices import PROVIDERS, Prices, provider_row
from .simulation import LogSimulation, shares
from .simulation import restore as restore_call
from .store import LogStore, ours, status_of

Usage = dict[str, int]
_USAGE_KEYS = ("input", "output", "cache_read", "cache_write")
MAX_LIMIT = 1000
_TOTALS = ("total", "read", "write", "uncached", "cost", "cost_uncached")
EXCERPT = 60  # bytes shown each side of the first difference


def _usage(u: Mapping[str, int] | None) -> Usage:
    u = u or {}
    return {k: int(u.get(k, 0) or 0) for k in _USAGE_KEYS}


def _page(total: int, offset: int, limit: int) -> dict[str, Any]:
    return {"total": total, "offset": offset, "limit": limit,
            "next_offset": offset + limit if offset + limit < total else None}  # fmt: skip


def _bounds(offset: int, limit: int) -> tuple[int, int]:
    if offset < 0 or limit < 0:
        raise ValueError("offset and limit must not be negative")
    return offset, min(limit, MAX_LIMIT)


class Views:
    """The page's data over one store. Keeps the cache simulations (one per provider) and the
    last restored contexts between requests."""

    def __init__(self, store: LogStore, rules: Mapping[str, Any] | None = None) -> None:
        self.store = store
        self.prices = Prices(rules)
        self._rules = dict(self.prices.rules)
        self._tokenize = cache.Tokenizer()
        self._sims: dict[str, LogSimulation] = {}
        self._restored: OrderedDict[str, tuple[Context, list[Exchange]]] = OrderedDict()

    # ---- lists --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        st = self.store
        with st.lock:
            return {"generation": st.generation, "calls": len(st.calls()), "trees": len(st.trees()),
                    "source": str(st.path), "damaged": st.damaged}  # fmt: skip

    def facets(self) -> dict[str, Any]:
        services, functions = self.store.facets()
        return {"services": services, "functions": functions, "providers": list(PROVIDERS), "wires": list(wire.WIRES)}

    def trees(
        self, *, service: str | None = None, function: str | None = None, status: str | None = None,
        offset: int = 0, limit: int = 100,
    ) -> dict[str, Any]:  # fmt: skip
        if status not in (None, "ok", "error", "running"):
            raise ValueError("status is ok, error or running")
        offset, limit = _bounds(offset, limit)
        rows = [r for r in self._tree_rows() if _keep(r, service, function, status)]
        page = [{k: v for k, v in r.items() if k != "_all_functions"} for r in rows[offset : offset + limit]]
        return {**_page(len(rows), offset, limit), "trees": page}

    def _tree_rows(self) -> list[dict[str, Any]]:
        st = self.store

        def build() -> list[dict[str, Any]]:
            spans = st.ledger.spans
            out = []
            for key, tids in st.trees().items():
                trs = [st.traces[t] for t in tids]
                sids = [sid for tr in trs for sid in tr.spans]
                statuses = {status_of(spans[sid]) for sid in sids}
                calls = st.tree_calls(key)
                usage = _usage(None)
                cost: float | None = None
                for c in calls:
                    for k in _USAGE_KEYS:
                        usage[k] += c.usage.get(k, 0)
                    cc = self.prices.cost(c.usage, c.provider, c.model)
                    if cc is not None:
                        cost = (cost or 0.0) + cc
                roots = st.roots(key)
                out.append({
                    "id": key,
                    "kind": "session" if trs[0].session else "trace",
                    "services": sorted({sv for tr in trs for sv in tr.services}),
                    "start_ns": min(tr.first for tr in trs),
                    "end_ns": max(tr.last for tr in trs),
                    "status": "error" if "error" in statuses else ("running" if "running" in statuses else "ok"),
                    "spans": len(sids),
                    "calls": len(calls),
                    "usage": usage,
                    "cost": cost,
                    "functions": [spans[r].function for r in roots[:20]],
                    "_all_functions": sorted({spans[sid].function for sid in sids if spans[sid].kind == "agentic"}),
                })  # fmt: skip
            return out

        rows: list[dict[str, Any]] = st.memo("tree_rows", build)  # type: ignore[assignment]
        return rows

    def nodes(self, key: str, parent: str | None = None, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        st = self.store
        offset, limit = _bounds(offset, limit)
        with st.lock:
            if key not in st.trees():
                raise KeyError(f"no tree {key}")
            if parent is None:
                ids = st.roots(key)
            else:
                st.span(parent)
                ids = st.kids(parent)
            nodes = [self._node(sid) for sid in ids[offset : offset + limit]]
            return {**_page(len(ids), offset, limit), "nodes": nodes}

    def _node(self, sid: str) -> dict[str, Any]:
        st = self.store
        info = st.ledger.spans[sid]
        start, end = info.start, info.end
        usage, cost = self._totals().get(sid, (None, None))
        return {
            "span_id": sid,
            "parent_id": info.parent_id,
            "name": start.name,
            "kind": info.kind,
            "function": info.function,
            "status": status_of(info),
            "error": end.error if end is not None else None,
            "start_ns": start.start_ns,
            "duration_ms": (end.end_ns - start.start_ns) / 1e6 if end is not None else None,
            "usage": _usage(usage),
            "cost": cost,
            "children": len(st.children.get(sid, ())),
            "call": st.call_numbers().get(sid),
            "reconstructed": info.kind == "llm" and not ours(info),
        }

    def _totals(self) -> dict[str, tuple[Usage, float | None]]:
        """Per span, the usage and cost of the model calls in its subtree."""
        st = self.store

        def build() -> dict[str, tuple[Usage, float | None]]:
            spans = st.ledger.spans
            out: dict[str, tuple[Usage, float | None]] = {}
            for c in st.ledger.calls():
                cost = self.prices.cost(c.usage, c.provider, c.model)
                seen: set[str] = set()
                sid: str | None = c.span_id
                while sid is not None and sid in spans and sid not in seen:
                    seen.add(sid)
                    u, total = out.get(sid) or (_usage(None), None)
                    for k in _USAGE_KEYS:
                        u[k] += c.usage.get(k, 0)
                    if cost is not None:
                        total = (total or 0.0) + cost
                    out[sid] = (u, total)
                    sid = spans[sid].parent_id
            return out

        totals: dict[str, tuple[Usage, float | None]] = st.memo("totals", build)  # type: ignore[assignment]
        return totals

    def calls(self, tree: str | None = None, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        st = self.store
        offset, limit = _bounds(offset, limit)
        with st.lock:
            calls = st.tree_calls(tree) if tree is not None else st.calls()
            if tree is not None and tree not in st.trees():
                raise KeyError(f"no tree {tree}")
            return {**_page(len(calls), offset, limit), "calls": [self._row(c) for c in calls[offset : offset + limit]]}

    def _row(self, c: ModelCall) -> dict[str, Any]:
        cost = self.prices.cost(c.usage, c.provider, c.model)
        return {
            "index": c.index, "span_id": c.span_id, "trace_id": c.trace_id,
            "tree": self.store.tree_of_trace(c.trace_id), "function": c.function, "call_path": c.call_path,
            "model": c.model, "provider": c.provider, "status": c.status, "error": c.error, "start_ns": c.start_ns,
            "latency_ms": c.latency_ms, "usage": _usage(c.usage), "cost": cost,
            "reconstructed": c.foreign,
        }  # fmt: skip

    # ---- one call -----------------------------------------------------------------------------
    def call(self, n: int, provider: str | None = None) -> dict[str, Any]:
        st = self.store
        with st.lock:
            c = st.call(n)
            row = {**self._row(c), "path": st.ancestors(c.span_id)}
            if c.foreign:
                rec = messages_of(c.attributes or {})
                said = [{"role": m.role, "content": m.text} for m in rec.messages]
                answered = [{"role": m.role, "content": m.text} for m in rec.output]
                return {**row, "verified": False, "system": rec.system, "messages": said, "output": answered,
                        "source": rec.source}  # fmt: skip
            try:
                done = rebuild(c, st.ledger.blobs)
            except Unrebuildable as e:
                raise KeyError(str(e)) from None
            context = done.context
            _, exchanges = self._restore(c)
            prov = provider or provider_row(c.provider, c.model) or "anthropic"
            if prov not in PROVIDERS:
                raise ValueError(f"provider is one of {', '.join(PROVIDERS)}")
            sim = self._simulation(prov)
            own = [x for x in st.calls() if not x.foreign]
            at = next(i for i, x in enumerate(own) if x.span_id == c.span_id)
            result = sim.upto(own, at, self._restore)[at]
            ex_tokens = [len(self._tokenize(exchange_text(e))) for e in exchanges]
            split = shares([sg.tokens for sg in context.segments] + ex_tokens, result)
            cacheable = context.cacheable_tokens
            segments = []
            pos = 0
            for i, (sg, share) in enumerate(zip(context.segments, split, strict=False)):
                segments.append({"i": i, "component": sg.component, "layer": sg.layer, "section": sg.section,
                                 "tokens": sg.tokens, "breakpoint": sg.breakpoint,
                                 "cached_prefix": pos + sg.tokens <= cacheable and sg.cacheable, "text": sg.text,
                                 "cache": msgspec.to_builtins(share)})  # fmt: skip
                pos += sg.tokens
            return {
                **row,
                "verified": done.verified,
                "wire": done.manifest.wire,
                "request_sha256": done.manifest.request,
                "tokens": context.tokens,
                "cacheable_tokens": cacheable,
                "encoding": context.encoding,
                "segments": segments,
                "exchanges": [
                    {"kind": _exchange_kind(e), "text": exchange_text(e), "tokens": t, "cache": msgspec.to_builtins(sh)}
                    for e, t, sh in zip(exchanges, ex_tokens, split[len(context.segments) :], strict=False)
                ],
                "simulation": {
                    **dataclasses.asdict(result),
                    "provider": prov,
                    "model": sim.model,
                    "key": sim.sim.key,
                    "warnings": list(sim.sim.warnings),
                },
                "diff": self._diff(c, context),
                "problems": [f"component {p.component} failed: {p.error}" for p in context.problems],
            }

    def request(self, n: int, wire_name: str | None = None) -> dict[str, Any]:
        st = self.store
        with st.lock:
            c = st.call(n)
            if c.foreign:
                raise KeyError(f"call {n} was traced by another instrumentation: its request was not recorded")
            try:
                m = record.manifest(c.manifest or "")
                target = wire.resolve(wire_name) if wire_name else m.wire
                body = record.rebuild(m, st.ledger.blobs, target)
            except (record.RecordError, KeyError) as e:
                raise KeyError(f"call {n}: {e}") from None
            return {"wire": target, "as_sent": target == m.wire, "body": body}

    def chart(self, key: str, provider: str | None = None) -> dict[str, Any]:
        st = self.store
        with st.lock:
            if key not in st.trees():
                raise KeyError(f"no tree {key}")
            mine = [c for c in st.tree_calls(key) if not c.foreign]
            prov = provider or next(filter(None, (provider_row(c.provider, c.model) for c in mine)), "anthropic")
            if prov not in PROVIDERS:
                raise ValueError(f"provider is one of {', '.join(PROVIDERS)}")
            sim = self._simulation(prov)
            rows = []
            if mine:
                own = [x for x in st.calls() if not x.foreign]
                where = {x.span_id: i for i, x in enumerate(own)}
                results = sim.upto(own, where[mine[-1].span_id], self._restore)
                for c in mine:
                    r = results[where[c.span_id]]
                    rows.append({"index": c.index, "label": r.label, "total": r.total, "read": r.read,
                                 "write": r.write, "uncached": r.uncached, "cost": r.cost,
                                 "cost_uncached": r.cost_uncached})  # fmt: skip
            totals = {k: sum(r[k] for r in rows) for k in _TOTALS}
            return {"provider": prov, "model": sim.model, "calls": rows, "totals": totals}

    # ---- helpers ------------------------------------------------------------------------------
    def _simulation(self, provider: str) -> LogSimulation:
        sim = self._sims.get(provider)
        if sim is None:
            # as `callctx cache` does: the model of the log's first call names the rules' row
            model = next((c.model for c in self.store.calls() if c.model), "")
            sim = self._sims[provider] = LogSimulation(provider, model or "", self._rules, self._tokenize)
        return sim

    def _restore(self, c: ModelCall) -> tuple[Context, list[Exchange]]:
        key = c.span_id
        hit = self._restored.get(key)
        if hit is None:
            try:
                hit = restore_call(c, self.store.ledger.blobs)
            except record.RecordError as e:
                raise KeyError(f"cannot rebuild call {c.index}: {e}") from None
            self._restored[key] = hit
            if len(self._restored) > 256:
                self._restored.popitem(last=False)
        return hit

    def _diff(self, c: ModelCall, context: Context) -> dict[str, Any] | None:
        """Where this call's context first differs from the previous own call of its tree."""
        mine = [x for x in self.store.tree_calls(self.store.tree_of_trace(c.trace_id)) if not x.foreign]
        at = next(i for i, x in enumerate(mine) if x.span_id == c.span_id)
        if at == 0:
            return None
        prev = mine[at - 1]
        before, _ = self._restore(prev)
        return first_difference(before, context, prev.index)


def first_difference(before: Context, after: Context, previous: int) -> dict[str, Any]:
    """The first segment, and the first byte in it, where ``after`` differs from ``before``
    (the segment's component and text compared; a segment only one side has differs at byte 0)."""
    a, b = before.segments, after.segments
    offset = 0
    for i in range(max(len(a), len(b))):
        old = a[i] if i < len(a) else None
        new = b[i] if i < len(b) else None
        old_bytes = old.text.encode() if old is not None else b""
        new_bytes = new.text.encode() if new is not None else b""
        if old is not None and new is not None and old.component == new.component and old_bytes == new_bytes:
            offset += len(new_bytes)
            continue
        byte = _common_prefix(old_bytes, new_bytes) if old is not None and new is not None else 0
        if old is not None and new is not None and old.component != new.component:
            byte = 0
        seg = new if new is not None else old
        assert seg is not None
        cached = sum(s.tokens for s in b[:i]) < after.cacheable_tokens
        if new is None:
            what = f"segment {i} ({old.component}) of call {previous} is gone"  # type: ignore[union-attr]
        elif old is None:
            what = f"segment {i} ({new.component}) is new since call {previous}"
        else:
            what = f"segment {i} ({new.component}) differs from call {previous} at byte {byte}"
        why = (
            "a prompt cache reads at most up to here; everything after it is written or sent uncached"
            if cached
            else "it lies after the last cache breakpoint, so the cached prefix is unaffected"
        )
        return {
            "previous": previous, "same": False, "segment": i, "component": seg.component, "byte": byte,
            "offset": offset + byte, "before": _excerpt(old_bytes, byte), "after": _excerpt(new_bytes, byte),
            "reason": f"{what}: {why}",
        }  # fmt: skip
    return {"previous": previous, "same": True, "segment": None, "component": None, "byte": None, "offset": None,
            "before": "", "after": "", "reason": f"the same segments as call {previous}"}  # fmt: skip


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # a[:lo] == b[:lo]; binary search on slices is faster than a byte loop
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _excerpt(data: bytes, at: int) -> str:
    return data[max(0, at - EXCERPT) : at + EXCERPT].decode("utf-8", errors="replace")


def _exchange_kind(e: Exchange) -> str:
    if isinstance(e, AssistantTurn):
        return "assistant"
    if isinstance(e, ToolResults):
        return "tool_results"
    return "note"


def _keep(row: dict[str, Any], service: str | None, function: str | None, status: str | None) -> bool:
    return (
        (service is None or service in row["services"])
        and (function is None or function in row["_all_functions"])
        and (status is None or row["status"] == status)
    )

"""What the debugger page shows, as JSON-ready data: the lists (each call with the first words
of its input), a tree level, one span's input, output and error, a call's context with its line
of the cache ledger (reported by the provider, simulated, and why it read less) and what changed
since the call it is compared with (the previous call on its path, else the one the ledger
compared it with), in words, the request as sent, and a session's cache chart (reported and
simulated side by side). The shapes are the page's contract (see ``static/``).

Every view reads through a :class:`~callctx.store.model.Store` (the local one over a log, or a
shared one): nothing here holds a log's worth of anything. The cache figures are the store's
ledger's; kept between requests here: a what-if simulation per other provider asked for (a
few numbers per call) and the last restored contexts.
Threading: a lock serialises the simulations; the store is safe from any thread. Errors:
``NotFound`` for what does not exist (the server answers 404), ``BadInput`` for a bad parameter
(400).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from callctx.components import cache, wire
from callctx.components.cache import exchange_text
from callctx.components.cache_ledger import Difference, common_prefix
from callctx.components.cache_ledger import first_difference as parts_difference
from callctx.components.context import Context
from callctx.components.wire.exchange import AssistantTurn, Exchange, ToolResults
from callctx.projection.calls import ModelCall, Usage
from callctx.projection.errors import BadInput, NotFound
from callctx.store.contexts import Foreign, Unrebuildable, context_of, rebuild, request_in, restore, text_hashes
from callctx.store.ledger import entry_json, parts_of
from callctx.store.model import CacheEntry, Filter, Page, SpanRow, Spend, Store, bounds, check_status

from .changes import Block, in_words, of_context, of_parts
from .prices import DEFAULT, PROVIDERS, Prices
from .simulation import LogSimulation, Share, shares

_USAGE_KEYS = ("input", "output", "cache_read", "cache_write")
_TOTALS = ("total", "read", "write", "uncached", "cost", "cost_uncached")
EXCERPT = 60  # bytes shown each side of the first difference
_OWN = Filter(ours=True)
_LOOK_BACK = 8  # calls read at the end of the listing of a call's path (those that started with it included)


def _usage(u: Usage) -> dict[str, int]:
    return {k: int(getattr(u, k) or 0) for k in _USAGE_KEYS}


def _page(page: Page[Any]) -> dict[str, Any]:
    return {"total": page.total, "offset": page.offset, "limit": page.limit, "next_offset": page.next_offset}


class Views:
    """The page's data over one store. ``wait_for_cache``: a call's view waits for the cache
    ledger to reach it; False where the store follows its source in the background (``callctx
    ui``, ``serve``): a call the ledger has not reached yet is shown at once, its cache pane
    ``pending`` (with how far the ledger is), and complete when the page asks again."""

    def __init__(self, store: Store, rules: Mapping[str, Any] | None = None, *, wait_for_cache: bool = True) -> None:
        self.store = store
        self.wait_for_cache = wait_for_cache  # False: the store's ledger catches up elsewhere (it follows)
        self.prices = Prices(rules)
        self._rules = dict(self.prices.rules)
        self._tokenizer: cache.Tokenizer | None = None  # loaded with the first call shown, not for the lists
        self._sims: dict[str, LogSimulation] = {}
        self._restored: OrderedDict[str, tuple[Context, list[Exchange]] | None] = OrderedDict()
        self._lock = threading.RLock()
        self._listed: dict[tuple[Filter, str | None], tuple[int, list[ModelCall]]] = {}

    # ---- lists --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        st = self.store.state()
        return {"generation": st.cursor, "calls": st.calls, "trees": st.trees, "source": st.source,
                "kind": st.kind, "damaged": st.damaged, "exists": st.exists}  # fmt: skip

    def facets(self) -> dict[str, Any]:
        f = self.store.facets()
        return {"services": f.services, "functions": f.functions, "models": f.models, "providers": list(PROVIDERS),
                "wires": list(wire.WIRES)}  # fmt: skip

    def _cost(self, spend: Sequence[Spend]) -> float | None:
        cost: float | None = None
        for sp in spend:
            c = self.prices.cost(sp.usage.counts(), sp.provider, sp.model)
            if c is not None:
                cost = (cost or 0.0) + c
        return cost

    def trees(
        self, *, service: str | None = None, function: str | None = None, status: str | None = None,
        offset: int = 0, limit: int = 100,
    ) -> dict[str, Any]:  # fmt: skip
        offset, limit = bounds(offset, limit)
        f = Filter(service=service, function=function, status=check_status(status))
        page = self.store.trees(f, offset=offset, limit=limit)
        rows = [
            {"id": t.key, "kind": t.kind, "services": t.services, "start_ns": t.start_ns, "end_ns": t.end_ns,
             "status": t.status, "spans": t.spans, "calls": t.calls, "usage": _usage(t.usage),
             "cost": self._cost(t.spend), "functions": t.functions, "models": t.models}
            for t in page.items
        ]  # fmt: skip
        return {**_page(page), "trees": rows}

    def nodes(self, key: str, parent: str | None = None, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        offset, limit = bounds(offset, limit)
        page = self.store.spans(key, parent, offset=offset, limit=limit)
        return {**_page(page), "nodes": [self._node(n) for n in page.items]}

    def _node(self, n: SpanRow) -> dict[str, Any]:
        return {
            "span_id": n.span_id, "parent_id": n.parent_id, "name": n.name, "kind": n.kind, "function": n.function,
            "status": n.status, "error": n.error, "start_ns": n.start_ns,
            "duration_ms": (n.end_ns - n.start_ns) / 1e6 if n.end_ns is not None else None,
            "usage": _usage(n.usage), "cost": self._cost(n.spend), "children": n.children, "call": n.call,
            "reconstructed": n.kind == "llm" and not n.ours, "excerpt": n.excerpt,
        }  # fmt: skip

    def calls(self, tree: str | None = None, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        offset, limit = bounds(offset, limit)
        page = self.store.calls(Filter(tree=tree), offset=offset, limit=limit)
        if tree is not None and not page.total:
            self.store.spans(tree, limit=0)  # NotFound when there is no such tree
        return {**_page(page), "calls": [self._row(c) for c in page.items]}

    def _row(self, c: ModelCall) -> dict[str, Any]:
        cost = self.prices.cost(c.usage.counts(), c.provider, c.model)
        return {
            "index": c.index, "span_id": c.span_id, "trace_id": c.trace_id, "tree": c.tree, "function": c.function,
            "call_path": c.call_path, "excerpt": c.excerpt, "model": c.model, "provider": c.provider,
            "status": c.status, "error": c.error, "start_ns": c.start_ns, "latency_ms": c.latency_ms,
            "usage": _usage(c.usage), "cost": cost, "reconstructed": c.foreign,
        }  # fmt: skip

    # ---- one span -----------------------------------------------------------------------------
    def span(self, span_id: str) -> dict[str, Any]:
        """Span ``span_id`` as the page opens it (an agentic call, a tool call...): its input,
        output and error whole, and its path from the top of its tree."""
        io = self.store.span_io(span_id)
        duration = (io.end_ns - io.start_ns) / 1e6 if io.end_ns is not None else None
        return {**msgspec.to_builtins(io), "duration_ms": duration, "path": self.store.ancestors(span_id)}

    # ---- one call -----------------------------------------------------------------------------
    def call(self, n: int, provider: str | None = None) -> dict[str, Any]:
        """Call ``n`` as the model saw it, with its line of the cache ledger (``cache``: what the
        provider reported, what its rules made possible, why it read less) and the difference
        with the call it was compared with. ``provider``: simulate another provider's cache over
        our calls instead of the call's own (a what-if; the ledger's line stays the call's own)."""
        c = self.store.call(n)
        if provider is not None and provider not in PROVIDERS:
            raise BadInput(f"provider is one of {', '.join(PROVIDERS)}")
        row = {**self._row(c), "path": self.store.ancestors(c.span_id)}
        entry = self.store.cache(n) if self.wait_for_cache else self.store.cache_ready(n)
        if entry is not None:
            pane = entry_json(entry)
        else:  # the ledger has not reached it: the rest now, the cache when the page asks again
            st = self.store.state()
            pane = {"pending": True, "ready": st.ledger, "calls": st.calls}
        try:
            found = context_of(self.store.recorded(c))
        except Unrebuildable as e:  # shown as such; it hides no other call
            return {**row, "verified": False, "rebuilt": False, "reason": str(e), "cache": pane, "diff": None}
        if isinstance(found, Foreign):
            rec = found.messages
            said = [{"role": m.role, "content": m.text} for m in rec.messages]
            answered = [{"role": m.role, "content": m.text} for m in rec.output]
            tools = [msgspec.to_builtins(t) for t in rec.tools]
            return {**row, "verified": False, "system": rec.system, "messages": said, "output": answered,
                    "tools": tools, "source": rec.source, "cache": pane,
                    "diff": self._diff(c, row["path"], None, entry)}  # fmt: skip
        context, exchanges = found.context, found.exchanges
        tokenize = self._tokenize()
        ex_tokens = [len(tokenize(exchange_text(e))) for e in exchanges]
        with self._lock:
            self._restored[c.span_id] = (context, exchanges)
            simulation: dict[str, Any] | None
            if provider is not None and (entry is None or provider != entry.rules):
                sim = self._simulation(provider)
                own = self._own_calls(c)
                at = next(i for i, x in enumerate(own) if x.span_id == c.span_id)
                result = sim.upto(own, at, self._restore)[at]
                assert result is not None  # this call was just rebuilt
                simulation = {**dataclasses.asdict(result), "provider": provider, "model": sim.model,
                              "warnings": list(sim.sim.warnings), "what_if": True}  # fmt: skip
            elif entry is not None:
                simulation = _simulated(entry, c.function)
            else:
                simulation = None
            sizes = [sg.tokens for sg in context.segments] + ex_tokens
            split: list[Share | None] = (
                list(shares(sizes, simulation["read"], simulation["write"], simulation["total"]))
                if simulation is not None
                else [None] * len(sizes)
            )
            cacheable = context.cacheable_tokens
            segments = []
            pos = 0
            for i, (sg, share) in enumerate(zip(context.segments, split, strict=False)):
                segments.append({"i": i, "component": sg.component, "layer": sg.layer, "section": sg.section,
                                 "tokens": sg.tokens, "breakpoint": sg.breakpoint,
                                 "cached_prefix": pos + sg.tokens <= cacheable and sg.cacheable, "text": sg.text,
                                 "cache": msgspec.to_builtins(share) if share is not None else None})  # fmt: skip
                pos += sg.tokens
            return {
                **row,
                "rebuilt": True,
                "verified": found.verified,
                "wire": found.manifest.wire,
                "request_sha256": found.manifest.request,
                "tokens": context.tokens,
                "cacheable_tokens": cacheable,
                "encoding": context.encoding,
                "segments": segments,
                "exchanges": [
                    {
                        "kind": _exchange_kind(e),
                        "text": exchange_text(e),
                        "tokens": t,
                        "cache": msgspec.to_builtins(sh) if sh is not None else None,
                    }
                    for e, t, sh in zip(exchanges, ex_tokens, split[len(context.segments) :], strict=False)
                ],
                "simulation": simulation,
                "cache": pane,
                "diff": self._diff(c, row["path"], (context, exchanges), entry),
                "problems": [f"component {p.component} failed: {p.error}" for p in context.problems],
            }

    def request(self, n: int, wire_name: str | None = None) -> dict[str, Any]:
        c = self.store.call(n)
        if c.foreign:
            raise NotFound(f"call {n} was traced by another instrumentation: its request was not recorded")
        try:
            found = rebuild(self.store.recorded(c))
            target = wire.resolve(wire_name) if wire_name else found.manifest.wire
            body = request_in(found, target)
        except (Unrebuildable, KeyError) as e:
            raise NotFound(f"call {n}: {e}") from None
        return {"wire": target, "as_sent": target == found.manifest.wire, "body": body}

    def chart(self, key: str, provider: str | None = None) -> dict[str, Any]:
        """Every call of tree ``key``, ours and others', with what the provider reported (cache
        read and write from usage, and the cost priced from it) beside what was simulated (the
        ledger's, at each call's own provider; with ``provider``, that provider's cache over our
        calls, the others keeping their own)."""
        calls = self._all(Filter(tree=key))
        if not calls:
            self.store.spans(key, limit=0)  # NotFound when there is no such tree
        if provider is not None and provider not in PROVIDERS:
            raise BadInput(f"provider is one of {', '.join(PROVIDERS)}")
        entries = self.store.cache_many([c.index for c in calls])
        own_rules = next((e.rules for c, e in zip(calls, entries, strict=True) if not c.foreign), None)
        prov = provider or own_rules or next((e.rules for e in entries), DEFAULT)
        what_if: dict[str, cache.CallResult | None] = {}
        with self._lock:
            mine = [c for c in calls if not c.foreign]
            if (
                mine
                and provider is not None
                and any(e.rules != provider for c, e in zip(calls, entries, strict=True) if not c.foreign)
            ):
                own = self._own_calls(mine[-1])
                results = self._simulation(provider).upto(own, len(own) - 1, self._restore)
                what_if = {x.span_id: r for x, r in zip(own, results, strict=True)}
        rows: list[dict[str, Any]] = []
        for c, e in zip(calls, entries, strict=True):
            r = what_if.get(c.span_id) if c.span_id in what_if else None
            sim = (
                {"total": r.total, "read": r.read, "write": r.write, "uncached": r.uncached, "cost": r.cost,
                 "cost_uncached": r.cost_uncached, "simulated": True, "simulated_with": provider}
                if r is not None
                else {**_figures(e), "simulated": e.reason != "unknown" and c.span_id not in what_if,
                      "simulated_with": e.rules}
            )  # fmt: skip
            rep = e.reported
            rows.append({
                "index": c.index, "label": c.function or "turn", "excerpt": c.excerpt, "foreign": c.foreign,
                "reason": e.reason, **sim,
                "reported_read": rep.cache_read if rep is not None else None,
                "reported_write": rep.cache_write if rep is not None else None,
                "reported_input": rep.input if rep is not None else None,
                "reported_cost": self.prices.cost(c.usage.counts(), c.provider, c.model),
            })  # fmt: skip
        totals = {k: sum(r[k] for r in rows) for k in _TOTALS}
        reported = {
            "read": sum(r["reported_read"] or 0 for r in rows),
            "write": sum(r["reported_write"] or 0 for r in rows),
            "cost": sum(r["reported_cost"] or 0.0 for r in rows),
            "calls": sum(r["reported_read"] is not None or r["reported_write"] is not None for r in rows),
        }
        model = next((e.model for e in entries if e.model), None)
        return {"provider": prov, "model": model, "calls": rows, "totals": totals, "reported": reported}

    # ---- helpers ------------------------------------------------------------------------------
    def _all(self, f: Filter, upto: ModelCall | None = None) -> list[ModelCall]:
        """Every call ``f`` keeps, in call order (up to ``upto`` when given), a page at a time;
        the last few listings are kept while the store's cursor stays where it was."""
        cursor = self.store.state().cursor
        key = (f, upto.span_id if upto is not None else None)
        hit = self._listed.get(key)
        if hit is not None and hit[0] == cursor:
            return hit[1]
        out = self._list(f, upto)
        if len(self._listed) >= 8:
            self._listed.pop(next(iter(self._listed)))
        self._listed[key] = (cursor, out)
        return out

    def _list(self, f: Filter, upto: ModelCall | None) -> list[ModelCall]:
        out: list[ModelCall] = []
        offset = 0
        while True:
            page = self.store.calls(f, offset=offset, limit=1000)
            for c in page.items:
                out.append(c)
                if upto is not None and c.span_id == upto.span_id:
                    return out
            if page.next_offset is None:
                return out
            offset = page.next_offset

    def _own_calls(self, upto: ModelCall) -> list[ModelCall]:
        """Our own calls, in call order, up to ``upto``."""
        own = self._all(_OWN)
        at = next((i for i, x in enumerate(own) if x.span_id == upto.span_id), None)
        return own[: at + 1] if at is not None else self._list(_OWN, upto)

    def _tokenize(self) -> cache.Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = cache.Tokenizer()
        return self._tokenizer

    def _simulation(self, provider: str) -> LogSimulation:
        sim = self._sims.get(provider)
        if sim is None:
            # as `callctx cache` does: the model of the log's first call names the rules' row
            first = self.store.calls(limit=1).items
            model = first[0].model if first and first[0].model else ""
            sim = self._sims[provider] = LogSimulation(provider, model, self._rules, self._tokenize())
        return sim

    def _restore(self, calls: Sequence[ModelCall]) -> list[tuple[Context, list[Exchange]] | None]:
        """The contexts of ``calls`` (our own), the texts they name read from the store in one
        go; None for a call that cannot be rebuilt."""
        missing = [c for c in calls if c.span_id not in self._restored]
        texts = self.store.texts({h for c in missing for h in text_hashes(c)}) if missing else {}
        out: list[tuple[Context, list[Exchange]] | None] = []
        for c in calls:
            if c.span_id in self._restored:
                hit = self._restored[c.span_id]
            else:
                try:
                    hit = restore(c, texts)
                except Unrebuildable:
                    hit = None
                self._restored[c.span_id] = hit
                if len(self._restored) > 512:
                    self._restored.popitem(last=False)
            out.append(hit)
        return out

    def _diff(
        self, c: ModelCall, path: Sequence[str], mine: tuple[Context, list[Exchange]] | None, entry: CacheEntry | None
    ) -> dict[str, Any] | None:
        """What changed since the call ``c`` is compared with: the previous call on its path
        (``basis`` ``path``: the latest earlier call made in the agentic call ``c`` runs in, or in
        one of those it runs under; never a parallel branch's), else the call the cache ledger
        compared it with (``cache``). In words (``words``), and where it starts: segment by
        segment between two of our calls, else part by part. ``mine``: ``c``'s context when it
        is ours. ``cache_compared``: the ledger's call, whichever is shown."""
        cache_with = entry.compared_with if entry is not None else None
        previous = self._previous_on_path(c, path)
        basis = "path"
        if previous is None:
            if cache_with is None:
                return None
            previous, basis = self.store.call(cache_with), "cache"
        found = self._compared(c, mine, previous)
        if found is None:  # one of them cannot be rebuilt: nothing to compare with
            return None
        return {**found, "basis": basis, "cache_compared": cache_with}

    def _previous_on_path(self, c: ModelCall, path: Sequence[str]) -> ModelCall | None:
        """The latest call before ``c`` made in one of the agentic calls on ``c``'s path (span
        ids ``path``, the outermost first): its own, or one it runs under."""
        if c.agent_span is None or c.tree is None:
            return None
        f = Filter(tree=c.tree, agent_in=tuple(path), until_ns=c.start_ns + 1)
        total = self.store.calls(f, limit=0).total
        page = self.store.calls(f, offset=max(0, total - _LOOK_BACK), limit=_LOOK_BACK)
        earlier = [x for x in page.items if x.index < c.index]
        return earlier[-1] if earlier else None

    def _compared(
        self, c: ModelCall, mine: tuple[Context, list[Exchange]] | None, previous: ModelCall
    ) -> dict[str, Any] | None:
        before: list[Block]
        after: list[Block]
        if mine is not None and not previous.foreign:
            (restored,) = self._restore([previous])
            if restored is None:
                return None
            out = first_difference(restored[0], mine[0], previous.index)
            before, after = of_context(*restored), of_context(*mine)
        else:
            try:
                old, new = (parts_of(r) for r in self.store.recorded_many([previous, c]))
            except Unrebuildable:
                return None
            out = _parts_diff(parts_difference(old, new), previous.index)
            before, after = of_parts(old), of_parts(new)
        words = in_words(before, after, previous.index, c.index, (previous.model, c.model))
        same = previous.model == c.model and [(b.part, b.name, b.text) for b in before] == [
            (b.part, b.name, b.text) for b in after
        ]
        return {**out, "same": same, "words": words}


def _figures(e: CacheEntry) -> dict[str, Any]:
    p = e.possible
    return {"total": p.tokens, "read": p.cache_read, "write": p.cache_write,
            "uncached": max(0, p.tokens - p.cache_read - p.cache_write), "cost": e.cost,
            "cost_uncached": e.cost_uncached}  # fmt: skip


def _simulated(e: CacheEntry, label: str | None) -> dict[str, Any]:
    """A call's simulation as the page shows it, from its line of the ledger."""
    return {"label": label or "turn", **_figures(e), "limit": e.possible.limit, "provider": e.rules, "model": e.model,
            "warnings": list(e.warnings), "what_if": False}  # fmt: skip


def _parts_diff(d: Difference | None, previous: int) -> dict[str, Any]:
    """Where a request first differs from call ``previous``'s, part by part (the ledger's own
    comparison: a part and an item of it, not a segment), in the shape of :func:`first_difference`."""
    if d is None:
        return {"previous": previous, "same": True, "segment": None, "component": None, "byte": None,
                "offset": None, "part": None, "index": None, "before": "", "after": "",
                "reason": f"nothing it sent differs from call {previous} (it may add to the end)"}  # fmt: skip
    what = {"tools": "tool", "system": "system text", "messages": "message"}[d.part]
    return {"previous": previous, "same": False, "segment": None, "component": None, "byte": None,
            "offset": d.offset, "part": d.part, "index": d.index, "before": d.before, "after": d.after,
            "reason": f"{what} {d.index} differs from call {previous} at character {d.offset}"}  # fmt: skip


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
        byte = common_prefix(old_bytes, new_bytes) if old is not None and new is not None else 0
        if old is not None and new is not None and old.component != new.component:
            byte = 0
        seg = new if new is not None else old
        assert seg is not None
        cached = sum(s.tokens for s in b[:i]) < after.cacheable_tokens
        named = f"{seg.component.replace('_', ' ')} (segment {i}, {seg.component})"
        if new is None:
            what = f"call {previous}'s {named} is gone"
        elif old is None:
            what = f"the {named} is new since call {previous}"
        else:
            what = f"the {named} changed at byte {byte} since call {previous}"
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


def _excerpt(data: bytes, at: int) -> str:
    return data[max(0, at - EXCERPT) : at + EXCERPT].decode("utf-8", errors="replace")


def _exchange_kind(e: Exchange) -> str:
    if isinstance(e, AssistantTurn):
        return "assistant"
    if isinstance(e, ToolResults):
        return "tool_results"
    return "note"

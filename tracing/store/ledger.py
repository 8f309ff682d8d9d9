"""The cache ledger of a store: :class:`callctx.components.cache_ledger.Ledger` fed with the
store's model calls in call order, kept up to date as calls arrive, and read by call number.

Any :class:`~callctx.store.model.Store` feeds it: our calls' requests are rebuilt from their
manifests (the texts read a page at a time), other instrumentations' reconstructed from their
spans. It only steps forward; a call that arrives late with an earlier start changes the order,
and the ledger then starts again from the last checkpoint before that call (a copy of its state
every ``CHECKPOINT`` calls, the last few kept), or from the start.

Threading: one lock; :meth:`LedgerView.update` may run in a background thread (``callctx
serve``'s indexer calls it after indexing) while readers ask for entries.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from callctx.components import cache
from callctx.components.cache_ledger import Entry, Item, Ledger, request_of_parts
from callctx.components.providers import SIMULATED, cache_row, named
from callctx.components.wire.parts import Parts, request_parts, tool_text
from callctx.projection.calls import ModelCall, Usage
from callctx.projection.errors import NotFound

from .contexts import Unrebuildable, rebuild, reconstruct
from .model import Recorded, Store, out_of_range

log = logging.getLogger(__name__)

PAGE = 500  # calls read from the store at a time
CHECKPOINT = 1000  # calls between copies of the ledger's state
CHECKPOINTS_KEPT = 4
DEFAULT_RULES = SIMULATED[0]  # the cache a call of no known provider (a scripted model) is simulated with


def offline(call: ModelCall) -> bool:
    """Did no provider answer the call (the scripted model)? Then its usage says nothing of a cache."""
    try:
        return call.provider is not None and named(call.provider).offline
    except KeyError:
        return False


def rules_row(call: ModelCall) -> str:
    """The cache-rules row a call's provider (or model) names."""
    return cache_row(call.provider, call.model) or DEFAULT_RULES


class LedgerView:
    """The ledger of one store, brought up to date on demand (see the module docstring)."""

    def __init__(self, store: Store, rules: Mapping[str, Any] | None = None, *, ttl: float | None = None) -> None:
        self.store = store
        self._rules = rules
        self._ttl = ttl
        self._lock = threading.RLock()
        self._tokenize = cache.Tokenizer()
        self._reset()

    def _reset(self) -> None:
        self.ledger = Ledger(self._rules, ttl=self._ttl)
        self._order: list[str] = []  # span ids fed, in call order
        self._checkpoints: list[tuple[int, Ledger, list[str]]] = []

    @property
    def fed(self) -> int:
        return len(self._order)

    def entry(self, n: int) -> Entry:
        """Call ``n``'s entry (the ledger brought up to it first)."""
        self.update(upto=n)
        with self._lock:
            if not 1 <= n <= len(self.ledger.entries):
                raise out_of_range(n, self.store.state().calls)
            return self.ledger.entries[n - 1]

    def ready(self, n: int) -> Entry | None:
        """Call ``n``'s entry if the ledger has reached it already, else None at once (for a
        reader that shows the rest meanwhile; it may be of an order the store has since
        changed: compare its span id). Takes no lock."""
        done = self.ledger.entries
        return done[n - 1] if 1 <= n <= len(done) else None

    def entries_of(self, numbers: Sequence[int]) -> list[Entry]:
        """The entries of calls ``numbers`` (the ledger brought up to the last of them first)."""
        if not numbers:
            return []
        self.update(upto=max(numbers))
        with self._lock:
            have = len(self.ledger.entries)
            for n in numbers:
                if not 1 <= n <= have:
                    raise out_of_range(n, self.store.state().calls)
            return [self.ledger.entries[n - 1] for n in numbers]

    def entries(self) -> list[Entry]:
        """Every call's entry, in call order."""
        self.update()
        with self._lock:
            return list(self.ledger.entries)

    def update(self, upto: int | None = None) -> int:
        """Feed the calls the store holds that the ledger has not seen (up to call ``upto``),
        a page at a time (the lock is let go between pages, so readers of calls already fed
        need not wait for the rest); returns how many calls the ledger covers."""
        while True:
            with self._lock:
                if not self._page(upto):
                    return self.fed

    def step(self, size: int = PAGE) -> bool:
        """Feed the next ``size`` calls the ledger has not seen; False when there were none (for
        a background thread that feeds a little at a time)."""
        with self._lock:
            return self._page(None, size)

    def _page(self, upto: int | None, size: int = PAGE) -> bool:
        """Feed one page; False when there was nothing more to feed."""
        fed = self.fed
        if fed:
            head = self.store.calls(offset=fed - 1, limit=1).items
            if not head or head[0].span_id != self._order[-1]:  # the order changed: start again
                self._rewind()
                fed = self.fed
        if upto is not None and fed >= upto:
            return False
        page = self.store.calls(offset=fed, limit=size).items
        if upto is not None:
            page = page[: max(0, upto - fed)]
        if not page:
            return False
        self._feed(page)
        return True

    def _rewind(self) -> None:
        """Back to the last checkpoint whose calls are still the first calls, in order."""
        while self._checkpoints:
            n, snapshot, order = self._checkpoints[-1]
            head = self.store.calls(offset=0, limit=n).items if n <= PAGE * 4 else None
            if head is not None and [c.span_id for c in head] == order:
                self.ledger, self._order = snapshot.copy(), list(order)
                return
            self._checkpoints.pop()
        log.info("callctx: the calls' order changed; the cache ledger starts again")
        self._reset()

    def _feed(self, calls: Sequence[ModelCall]) -> None:
        recorded = self.store.recorded_many(calls)
        for call, rec in zip(calls, recorded, strict=True):
            self.ledger.add(self._item(call, rec))
            self._order.append(call.span_id)
            if self.fed % CHECKPOINT == 0:
                self._checkpoints.append((self.fed, self.ledger.copy(), list(self._order)))
                del self._checkpoints[:-CHECKPOINTS_KEPT]

    def _item(self, call: ModelCall, rec: Recorded) -> Item:
        u = call.usage if not offline(call) else Usage()
        request: cache.Request | None = None
        parts: Parts | None = None
        marked = True
        unknown: str | None = None
        if call.manifest is not None:
            try:
                found = rebuild(rec)
            except Unrebuildable as e:
                unknown = f"it cannot be rebuilt ({e}): the cache never saw it here"
            else:
                marking = self.ledger.simulator(rules_row(call), call.model).marking
                request = cache.request_of(found.context, found.exchanges, tokenize=self._tokenize, marking=marking)
                parts = request_parts(found.manifest.wire, found.body)
        else:
            parts = parts_of(rec)
            marked = bool(u.cache_read or u.cache_write)  # a foreign request marks nothing we can see
            if not parts.empty:
                request = request_of_parts(parts, self._tokenize, marked=marked)
        return Item(
            call=call.index, span_id=call.span_id, start_ns=call.start_ns, model=call.model, function=call.function,
            service=call.service, tree=call.tree, rules=rules_row(call), usage_read=u.cache_read,
            usage_write=u.cache_write, usage_input=u.input, request=request, parts=parts, marked=marked,
            unknown_because=unknown,
        )  # fmt: skip


def parts_of(rec: Recorded) -> Parts:
    """A call's request as a person compares two (:class:`Parts`): rebuilt for callctx's own
    calls (:class:`Unrebuildable` when it cannot be), reconstructed from the span for others'."""
    if rec.call.manifest is not None:
        found = rebuild(rec)
        return request_parts(found.manifest.wire, found.body)
    said = reconstruct(rec).messages
    return Parts(
        tools=[tool_text(t.name, t.description, _schema(t.parameters)) for t in said.tools],
        tool_names=[t.name for t in said.tools],
        system=list(said.system),
        messages=[f"{m.role}: {m.text}" for m in said.messages],
    )


def _schema(parameters: str) -> Any:
    """A tool's parameters as a span gives them (JSON text), as the wire would send them."""
    try:
        return json.loads(parameters) if parameters else {}
    except ValueError:
        return parameters


def entry_json(e: Entry) -> dict[str, Any]:
    """An entry as ``callctx cache --why --json`` and ``/api/calls/{n}/cache`` answer."""
    out = msgspec.to_builtins(e)
    out["reported"] = (
        None if e.reported is None else {k: v for k, v in msgspec.structs.asdict(e.reported).items() if v is not None}
    )
    return out


__all__ = ["LedgerView", "NotFound", "entry_json", "parts_of", "rules_row"]

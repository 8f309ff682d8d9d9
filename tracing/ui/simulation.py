"""A what-if: another provider's cache simulated over a log's own calls, kept as the log grows;
and a call's simulated cache use split per segment for the page.

A call's own provider is the store's cache ledger's (:meth:`~callctx.store.model.Store.cache`).
When the page asks how another provider would have cached, one :class:`LogSimulation` per
provider replays callctx's own calls in call order through
:class:`callctx.components.cache.Simulator`, exactly as ``callctx cache LOG --provider P``
does (same requests, same times), so the page and the command agree. It only steps forward:
when calls are appended it simulates the new ones; when the order of calls already simulated
changed (a call arrived late with an earlier start) it starts again.

Threading: not thread-safe; the page's views call it under the store's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from callctx.components import cache
from callctx.components.context import Context
from callctx.components.wire.exchange import Exchange
from callctx.projection.calls import ModelCall

Restore = Callable[[Sequence[ModelCall]], list[tuple[Context, list[Exchange]] | None]]
"""Restores the contexts and tool loops of several calls (read from the store in one go); None
for a call that cannot be rebuilt (its texts missing or altered): the simulation skips it."""

CHUNK = 256  # calls restored at a time


class Share(msgspec.Struct, frozen=True):
    """Tokens of one segment (or exchange) read from the cache, written to it, or neither."""

    read: int
    write: int
    uncached: int


class LogSimulation:
    """One provider's cache over the own calls of a log, simulated up to the call asked for."""

    def __init__(self, provider: str, model: str, rules: dict | None, tokenize: cache.Tokenizer) -> None:
        self.sim = cache.Simulator(provider, model, rules)
        self.provider, self.model = provider, model
        self._rules = rules
        self._tokenize = tokenize
        self.spans: list[str] = []  # span ids simulated, in order
        self.results: list[cache.CallResult | None] = []  # None: a call that could not be rebuilt
        self._t0: int | None = None

    def upto(self, calls: Sequence[ModelCall], last: int, restore: Restore) -> list[cache.CallResult | None]:
        """Results for ``calls[: last + 1]`` (own calls, in call order); None for a call that
        could not be rebuilt, which the cache never saw."""
        k = min(len(self.spans), last + 1)
        if [c.span_id for c in calls[:k]] != self.spans[:k]:  # the order changed: from the start again
            self.sim = cache.Simulator(self.provider, self.model, self._rules)
            self.spans, self.results, self._t0 = [], [], None
        k = len(self.spans)
        todo = list(calls[k : last + 1])
        for at in range(0, len(todo), CHUNK):
            chunk = todo[at : at + CHUNK]
            for c, restored in zip(chunk, restore(chunk), strict=True):
                self.spans.append(c.span_id)
                if restored is None:
                    self.results.append(None)
                    continue
                context, exchanges = restored
                if self._t0 is None:
                    self._t0 = c.start_ns
                req = cache.request_of(
                    context, exchanges, time_s=(c.start_ns - self._t0) / 1e9, label=c.function or "turn",
                    tokenize=self._tokenize, marking=self.sim.marking,
                )  # fmt: skip
                self.results.append(self.sim.step_one(req))
        return self.results[: last + 1]


def shares(sizes: Sequence[int], read: int, write: int, total: int) -> list[Share]:
    """Split a call's simulated ``read`` / ``write`` tokens (of ``total``) over its parts in
    order (segments, then exchanges) of ``sizes`` tokens: a cache reads a prefix, writes what
    follows up to its last breakpoint, and the rest is uncached. The simulator counts tokens of
    the blocks as sent (stretches of system text are joined), which may differ by a few tokens
    from the sum of the parts: positions are scaled to it."""
    whole = sum(sizes)
    scale = whole / total if total else 0.0
    read_to = read * scale
    write_to = (read + write) * scale
    out = []
    pos = 0
    for n in sizes:
        a, b = pos, pos + n
        got = max(0.0, min(b, read_to) - a)
        wrote = max(0.0, min(b, write_to) - max(a, read_to))
        r, w = round(got), round(wrote)
        out.append(Share(r, w, max(0, n - r - w)))
        pos = b
    return out

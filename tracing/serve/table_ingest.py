"""Ingest behind ``callctx serve --store``: OTLP trace requests in, rows of the Collector's
ClickHouse traces table out, written as its exporter writes them; every read goes through
the ClickHouse store over that table. The receiver keeps no state of its own: instances
behind any load balancer write the same table and answer for every trace.

Writes are group commits: a request's spans join a buffer, and one writer thread inserts
everything buffered in one ``INSERT`` (ClickHouse wants few, large inserts), then answers every
request whose spans it held. A request is answered once its rows are in the table (or with
503 when the table refused them: the sender sends them again); with ``wait=False`` it is
answered as soon as its spans are buffered (what a kill can lose is what was buffered).

The listings beside the table and the cache ledger follow in the background
(:meth:`ClickHouseStore.follow`).

Bounded: at most ``max_buffer`` spans wait; past that a request gets 503 until the table has
caught up. A store that stops answering: waiting requests get 503; with ``wait=False`` the
writer keeps what it acknowledged and tries again every second; at close, spans it could still
not write are put in an event log (``spill``, mode 0600, readable by every callctx command) and
the log names it: nothing acknowledged is lost.

Threading: :meth:`ingest` from any number of request threads; one writer thread. Errors: a
full buffer, or a table that refused a request's rows, raise :class:`StoreBehind` (an
``OSError``: the transports answer 503 / UNAVAILABLE).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any, Final

from callctx.projection.batch import Batch, Received, records
from callctx.projection.events import encode
from callctx.projection.log import EventLog
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.model import StoreUnavailable

from ..export.shaping import Shaper
from .ingest import _START_ORDER, DEFAULT_MAX_BODY, INDEX_EVERY, Receiving, collector_paused

log = logging.getLogger(__name__)

DEFAULT_MAX_BUFFER: Final = 200_000  # spans waiting for the table at most
RETRY_EVERY: Final = 1.0  # seconds between attempts when the table refuses


class StoreBehind(OSError):
    """The table cannot take the spans now (its buffer is full, or it refused them)."""


class _Pending:
    """Spans of requests waiting for one insert, and the event that answers them."""

    __slots__ = ("done", "error", "seq", "spans")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.spans: list[Received] = []
        self.done = threading.Event()
        self.error: str | None = None


class TableReceiver(Receiving):
    """Writes OTLP trace requests into a ClickHouse traces table (see the module docstring)."""

    def __init__(
        self,
        store: ClickHouseStore,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        token: str | None = None,
        allow_hosts: Iterable[str] = (),
        shaper: Shaper | None = None,
        wait: bool = True,
        max_buffer: int = DEFAULT_MAX_BUFFER,
        follow_every: float | None = INDEX_EVERY,
        spill: str | os.PathLike[str] = "callctx-store-unsent.jsonl",
    ) -> None:
        super().__init__(max_body=max_body, token=token, allow_hosts=allow_hosts, shaper=shaper)
        self.store: ClickHouseStore = store
        self.table = store.table
        self.wait = wait
        self.max_buffer = max_buffer
        self.spill = os.fspath(spill)
        self.written = 0  # spans in the table, this process
        self.failures = 0
        self.last_error: str | None = None
        self._pending = _Pending(1)
        self._attempted = 0  # the last batch the writer tried (written or refused)
        self._buffered = 0
        self._cond = threading.Condition()
        self._closing = False
        self._writer = threading.Thread(target=self._write_loop, name="callctx-store-writer", daemon=True)
        self._writer.start()
        self.follows = follow_every is not None
        if follow_every is not None:
            store.follow(follow_every)

    def ingest(self, batch: Batch) -> Batch:
        """Hand one request's spans to the writer; with ``wait``, return once they are in the
        table. :class:`StoreBehind` when the buffer is full or the table refused them."""
        t0 = time.perf_counter()
        spans = sorted(batch.spans, key=_START_ORDER)
        with self._cond:
            if self._closing:
                raise StoreBehind("the receiver is stopping")
            if spans and self._buffered + len(spans) > self.max_buffer:
                raise StoreBehind(f"{self._buffered:,} spans are waiting for {self.table.source}; try again")
            pending = self._pending
            pending.spans.extend(spans)
            self._buffered += len(spans)
            self._cond.notify_all()
        if self.wait and spans:
            pending.done.wait()
            if pending.error is not None:
                raise StoreBehind(pending.error)
        self.stats.add(
            requests=1, spans=len(spans), rejected=batch.rejected, seconds_total=time.perf_counter() - t0
        )  # fmt: skip
        return batch

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending.spans and not self._closing:
                    self._cond.wait()
                if not self._pending.spans and self._closing:
                    return
                pending, self._pending = self._pending, _Pending(self._pending.seq + 1)
            if not self._write(pending):
                with self._cond:
                    if self.wait:  # its requests answer 503 and their senders send them again
                        self._buffered -= len(pending.spans)
                    else:  # answered already: kept, in order, ahead of what came since
                        pending.spans.extend(self._pending.spans)
                        self._pending.spans = pending.spans
                    closing = self._closing
                self._attempt(pending)
                if closing:
                    return
                time.sleep(RETRY_EVERY)  # the writer's backoff between attempts, not a synchronisation
                continue
            self._attempt(pending)

    def _attempt(self, pending: _Pending) -> None:
        """Batch ``pending`` was tried: answer its requests, and any :meth:`flush` waiting."""
        pending.done.set()
        with self._cond:
            self._attempted = pending.seq
            self._cond.notify_all()

    def _write(self, pending: _Pending) -> bool:
        t0 = time.perf_counter()
        try:
            with collector_paused():
                self.table.write(pending.spans)
        except StoreUnavailable as e:
            self.failures += 1
            self.last_error = pending.error = f"cannot write to {self.table.source}: {e}"
            log.error("callctx: %s (%d spans kept, tried again in %.0f s)", e, len(pending.spans), RETRY_EVERY)
            return False
        with self._cond:
            self._buffered -= len(pending.spans)
        self.written += len(pending.spans)
        self.stats.add(seconds_log=time.perf_counter() - t0)
        return True

    def flush(self) -> None:
        """Wait until the writer has tried every span handed over so far (each written, or
        refused: then ``failures`` and ``last_error`` say so)."""
        with self._cond:
            target = self._pending.seq if self._pending.spans else self._pending.seq - 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._attempted >= target or not self._writer.is_alive())

    def health(self, *, detail: bool = True) -> dict[str, Any]:
        if not detail:
            return {"status": "ok"}
        s = self.stats
        state = self.store.state()
        return {"status": "ok", "requests": s.requests, "spans": s.spans, "rejected": s.rejected,
                "malformed": s.malformed, "traces": state.trees, "calls": state.calls, "store": state.source,
                "written": self.written, "waiting": self._buffered, "write_failures": self.failures,
                "last_error": self.last_error}  # fmt: skip

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._writer.join()
        left = self._pending.spans
        if left:
            with EventLog(self.spill) as spill:
                for rec in records(Batch(left)):
                    spill.write(encode(rec))
            log.error("callctx: %d spans could not be written to %s; they are kept in the event log %s",
                      len(left), self.table.source, self.spill)  # fmt: skip
        self.store.close()


__all__ = ["DEFAULT_MAX_BUFFER", "StoreBehind", "TableReceiver"]

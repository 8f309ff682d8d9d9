"""Ingest behind ``callctx serve --store``: OTLP trace requests in, rows of the Collector's
ClickHouse traces table out, written as its exporter writes them; every read goes through
the ClickHouse store over that table. Instances behind any load balancer write the same table
and answer for every trace.

Writes are group commits: a request's spans join a buffer, and one writer thread inserts
everything buffered in one ``INSERT`` (ClickHouse wants few, large inserts). When a request is
answered (``ack``):

* ``"spool"`` (the default): once its spans are in the local spool (:mod:`callctx.serve.spool`:
  the page cache, as ``serve --log`` answers once they are in its log). The writer removes a
  spool segment once its spans are in the table; a receiver started after a crash writes what
  the spool holds first. Senders wait for a local write, not for the table, so an SDK's
  exporter sending one batch after another keeps up.
* ``"table"``: once its rows are in the table, or with 503 when the table refused them (the
  sender sends them again). Nothing is kept on the machine; each sender waits for an insert.

The listings beside the table and the cache ledger follow in the background, every
``follow_every`` seconds (:meth:`ClickHouseStore.follow`; every read catches up first); the
writer hands its rows to them, so the traces it wrote are derived without reading them back,
and when the table grew by its rows only, only their traces are looked at.

Bounded: at most ``max_buffer`` spans wait; past that a request gets 503 until the table has
caught up. A store that stops answering: with ``"table"``, waiting requests get 503; with
``"spool"``, the writer keeps what was acknowledged (in memory and in the spool) and tries
again every second; at close, what it could still not write stays in the spool, and the log
says so.

Threading: :meth:`ingest` from any number of request threads; one writer thread. Errors: a
full buffer, a spool that cannot be written, or a table that refused a request's rows raise
:class:`StoreBehind` (an ``OSError``: the transports answer 503 / UNAVAILABLE).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

from callctx.projection.batch import Batch, Received
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.model import StoreUnavailable

from ..export.shaping import Shaper
from . import spool as sp
from .ingest import _START_ORDER, DEFAULT_MAX_BODY, Receiving, collector_paused

log = logging.getLogger(__name__)

Ack = Literal["spool", "table"]
DEFAULT_MAX_BUFFER: Final = 200_000  # spans waiting for the table at most
DEFAULT_SPOOL: Final = "callctx-spool"
FOLLOW_EVERY: Final = 1.0  # seconds between the background derivations (every read catches up first)
RETRY_EVERY: Final = 1.0  # seconds between attempts when the table refuses
REPLAY_ROWS: Final = 20_000  # spans of a leftover segment looked up and written at a time


class StoreBehind(OSError):
    """The table cannot take the spans now (its buffer is full, the spool cannot be written, or
    the table refused them)."""


class _Pending:
    """Spans of requests waiting for one insert, their spool segments, and the event that
    answers them."""

    __slots__ = ("done", "error", "segments", "seq", "spans")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.spans: list[Received] = []
        self.segments: list[sp.Segment] = []
        self.done = threading.Event()
        self.error: str | None = None


class TableReceiver(Receiving):
    """Writes OTLP trace requests into a ClickHouse traces table (see the module docstring).
    ``spool``: the spool folder (``ack="spool"``); segments a killed receiver left there are
    written to the table before this one starts."""

    def __init__(
        self,
        store: ClickHouseStore,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        token: str | None = None,
        allow_hosts: Iterable[str] = (),
        shaper: Shaper | None = None,
        ack: Ack = "spool",
        spool: str | os.PathLike[str] = DEFAULT_SPOOL,
        max_buffer: int = DEFAULT_MAX_BUFFER,
        follow_every: float | None = FOLLOW_EVERY,
    ) -> None:
        super().__init__(max_body=max_body, token=token, allow_hosts=allow_hosts, shaper=shaper)
        self.store: ClickHouseStore = store
        self.table = store.table
        self.ack: Ack = ack
        self.max_buffer = max_buffer
        self.written = 0  # spans in the table, this process
        self.replayed = 0  # of them, spans a killed receiver had acknowledged
        self.failures = 0
        self.last_error: str | None = None
        self.spool: Path | None = None
        self._lock_fd: int | None = None
        if ack == "spool":
            self.spool = sp.folder(spool)
            self._lock_fd = sp.lock(self.spool)
            try:
                self._replay(self.spool)
            except BaseException:
                sp.unlock(self._lock_fd)
                raise
            self._seq = sp.next_seq(self.spool)
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

    def _replay(self, spool: Path) -> None:
        """Write what a receiver killed before its writer caught up left in the spool: the spans
        the table does not hold yet, then remove each segment."""
        for path in sp.leftover(spool):
            spans, _ = sp.read(path)
            for at in range(0, len(spans), REPLAY_ROWS):
                chunk = spans[at : at + REPLAY_ROWS]
                there = self.table.present([(r.trace_id, r.span_id) for r in chunk])
                missing = [r for r in chunk if (r.trace_id, r.span_id) not in there]
                rows = self.table.rows_of(missing)
                self.table.insert(rows)
                self.store.derived.remember(rows)
                self.replayed += len(missing)
                self.written += len(missing)
            path.unlink()
        if self.replayed:
            log.warning("callctx: wrote %d spans a stopped receiver had acknowledged from the spool %s to %s",
                        self.replayed, spool, self.table.source)  # fmt: skip

    def ingest(self, batch: Batch) -> Batch:
        """Hand one request's spans to the writer; return once they are in the spool, or with
        ``ack="table"`` in the table. :class:`StoreBehind` when the buffer is full, the spool
        cannot be written, or the table refused them."""
        t0 = time.perf_counter()
        spans = sorted(batch.spans, key=_START_ORDER)
        data = sp.line(spans) if self.spool is not None and spans else b""
        with self._cond:
            if self._closing:
                raise StoreBehind("the receiver is stopping")
            if spans and self._buffered + len(spans) > self.max_buffer:
                raise StoreBehind(f"{self._buffered:,} spans are waiting for {self.table.source}; try again")
            pending = self._pending
            if data:
                a = time.perf_counter()
                self._spool_append(pending, data)
                self.stats.add(seconds_log=time.perf_counter() - a)
            pending.spans.extend(spans)
            self._buffered += len(spans)
            self._cond.notify_all()
        if self.ack == "table" and spans:
            pending.done.wait()
            if pending.error is not None:
                raise StoreBehind(pending.error)
        self.stats.add(
            requests=1, spans=len(spans), rejected=batch.rejected, seconds_total=time.perf_counter() - t0
        )  # fmt: skip
        return batch

    def _spool_append(self, pending: _Pending, data: bytes) -> None:
        assert self.spool is not None
        try:
            if not pending.segments:
                pending.segments.append(sp.Segment(self.spool, self._seq))
                self._seq += 1
            pending.segments[-1].append(data)
        except OSError as e:
            raise StoreBehind(f"cannot keep the spans in the spool {self.spool}: {e.strerror or e}") from None

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
                    if self.ack == "table":  # its requests answer 503 and their senders send them again
                        self._buffered -= len(pending.spans)
                    else:  # acknowledged: kept, in order, ahead of what came since
                        pending.spans.extend(self._pending.spans)
                        pending.segments.extend(self._pending.segments)
                        self._pending.spans, self._pending.segments = pending.spans, pending.segments
                    closing = self._closing
                self._attempt(pending)
                if closing:
                    return
                time.sleep(RETRY_EVERY)  # the writer's backoff between attempts, not a synchronisation
                continue
            for segment in pending.segments:
                segment.remove()
            self._attempt(pending)

    def _attempt(self, pending: _Pending) -> None:
        """Batch ``pending`` was tried: answer its requests, and any :meth:`flush` waiting."""
        pending.done.set()
        with self._cond:
            self._attempted = pending.seq
            self._cond.notify_all()

    def _write(self, pending: _Pending) -> bool:
        try:
            with collector_paused():
                rows = self.table.rows_of(pending.spans)
                self.table.insert(rows)
            self.store.derived.remember(rows)  # its listings follow without reading the rows back
        except StoreUnavailable as e:
            self.failures += 1
            self.last_error = pending.error = f"cannot write to {self.table.source}: {e}"
            log.error("callctx: %s (%d spans kept, tried again in %.0f s)", e, len(pending.spans), RETRY_EVERY)
            return False
        with self._cond:
            self._buffered -= len(pending.spans)
        self.written += len(pending.spans)
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
        state = self.store.state()
        spool = os.fspath(self.spool) if self.spool is not None else None
        return {**self.counters(state), "store": state.source, "ack": self.ack, "spool": spool,
                "written": self.written, "replayed": self.replayed, "waiting": self._buffered,
                "write_failures": self.failures, "last_error": self.last_error}  # fmt: skip

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._writer.join()
        left = self._pending
        for segment in left.segments:
            segment.close()
        if left.spans:
            log.error("callctx: %d acknowledged spans could not be written to %s; they stay in the spool %s, "
                      "which the next `callctx serve --store` with it writes first",
                      len(left.spans), self.table.source, self.spool)  # fmt: skip
        if self._lock_fd is not None:
            sp.unlock(self._lock_fd)
            self._lock_fd = None
        self.store.close()


__all__ = ["DEFAULT_MAX_BUFFER", "DEFAULT_SPOOL", "Ack", "StoreBehind", "TableReceiver"]

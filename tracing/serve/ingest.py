"""Ingest behind ``callctx serve``: OTLP trace requests in, records appended to the receiver's
event log; everything read back goes through the local store over that log.

One request at a time: the body is decoded straight into the records the log takes
(:mod:`callctx.projection.otlp`), the request's spans are sorted by start, their records
encoded once and appended to the log in one write. That is all the request waits for: it is
answered once its records are in the log (the durability contract of
:mod:`callctx.projection.log`). The store's index follows the log in a background thread
(every ``INDEX_EVERY`` seconds) that gives way to the requests in progress (:attr:`Receiving.traffic`):
it indexes a step of the log at a time while no request runs, waiting no more than a round's
worth for them, so it holds every record within about a second of its answer however busy
the receiver is; the cache ledger follows once the receiver has been idle a moment. Every read
catches up first, so a reader sees every record answered before it asked. The records a request
wrote are handed to the index with their lines (:meth:`LocalStore.expect`): what the index finds
byte for byte in the log is taken as it is, not decoded again; what it indexes is still what the
log holds. Trees are folded on read.

The cyclic garbage collector pauses while a request is handled, and resumes once its records are
let go (they are many, short-lived and free of cycles); ``callctx serve`` also freezes what it
made to start and collects less often (:func:`tune_collector`).

Restart: a receiver started on an existing log answers for everything in it. The index beside
the log (``LOG.index.sqlite``) resumes where it stopped, after a clean stop or a kill, and is
made again from the log when it is missing or of another log.

Threading: every method is safe to call from the HTTP and gRPC worker threads at once (the log
serialises its writes). Errors: a malformed body raises ``BadInput`` (the transports answer 400
and keep serving; nothing of it is kept); a log the disk refuses keeps the request's records
in memory and writes them, in order, before the next write or at close
(``callctx.projection.log``); an ``OSError`` out of ingest is answered 503.
"""

from __future__ import annotations

import abc
import contextlib
import gc
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec

from callctx.projection.batch import Batch
from callctx.projection.errors import BadInput
from callctx.projection.events import Record
from callctx.projection.log import EventLog, FsyncPolicy
from callctx.projection.otlp import decode_json, decode_protobuf
from callctx.projection.texts import Assembler
from callctx.store.follow import Traffic
from callctx.store.local import DEFAULT_MAX_TREES, LocalStore
from callctx.store.model import Store, StoreState

from ..export.shaping import Shaper
from .body import BodyError
from .http_server import Access

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 16 << 20  # bytes, after decompression
INDEX_EVERY = 0.25  # seconds between the background indexer's rounds
PROTOBUF = "application/x-protobuf"
JSON = "application/json"

_START_ORDER = attrgetter("start_ns", "span_id")
_encode_lines = msgspec.json.Encoder().encode_lines  # writes what callctx.projection.events.encode writes


@dataclass
class Stats:
    """Counters and the time spent per stage (for ``/health`` and the ingest benchmark)."""

    requests: int = 0
    spans: int = 0
    rejected: int = 0
    malformed: int = 0
    seconds_total: float = 0.0  # handling export requests, end to end
    seconds_decode: float = 0.0
    seconds_encode: float = 0.0  # the records of a request, as log lines
    seconds_log: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **amounts: float) -> None:
        with self.lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)


def index_path(log_path: str | os.PathLike[str]) -> str:
    """Where a receiver keeps the index of its log."""
    return f"{os.fspath(log_path)}.index.sqlite"


class Receiving(abc.ABC):
    """What every receiver does the same way: decode OTLP bodies, check access, count. A
    receiver adds where the spans go (:meth:`ingest`), the store reads go through (``store``),
    and its health."""

    store: Store
    follows: bool

    def __init__(self, *, max_body: int, token: str | None, allow_hosts: Iterable[str], shaper: Shaper | None) -> None:
        self.max_body = max_body
        self.access = Access.of(token, allow_hosts)
        self.stats = Stats()
        self.traffic = Traffic()  # the ingest requests running now, which background work gives way to
        self.shaper = shaper if shaper is not None else Shaper()  # what the read API serves is shaped

    # ---- ingest ---------------------------------------------------------------------------
    def decode(self, body: bytes, content_type: str) -> Batch:
        """The spans of one OTLP/HTTP body, either encoding read straight into records; raises
        :class:`BodyError` (415) for a content type that is not OTLP and :class:`BadInput` for
        a body that is not a trace request."""
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
                raise BadInput("OTLP/JSON body is not valid UTF-8") from None
        else:
            raise BodyError(415, f"unsupported content type {content_type!r}; use {PROTOBUF} or {JSON}")
        spent = time.perf_counter() - t0
        self.stats.add(seconds_decode=spent, seconds_total=spent)
        return decoded

    # ---- access -----------------------------------------------------------------------------
    @property
    def token(self) -> str | None:
        return self.access.token

    def authorized(self, header: str | None) -> bool:
        """Does an ``Authorization`` header carry the token (always, when none is set)?"""
        return self.access.authorized(header)

    @abc.abstractmethod
    def ingest(self, batch: Batch) -> Batch:
        """Keep one request's spans; the batch as kept (its rejections counted). Called from
        any number of request threads; ``OSError`` when the spans cannot be kept now (the
        transports answer 503 / UNAVAILABLE)."""

    @abc.abstractmethod
    def health(self, *, detail: bool = True) -> dict[str, Any]:
        """Liveness, and with ``detail`` the counters (:meth:`counters` and the receiver's own)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Keep what was acknowledged and let go of the store."""

    def counters(self, state: StoreState) -> dict[str, Any]:
        """The health counters every receiver reports: requests, spans, and what the store
        lists (``state``: the store's, read once by the caller)."""
        s = self.stats
        return {"status": "ok", "requests": s.requests, "spans": s.spans, "rejected": s.rejected,
                "malformed": s.malformed, "traces": state.trees, "calls": state.calls}  # fmt: skip


class Receiver(Receiving):
    """Appends OTLP trace requests to one event log, and reads them back through a
    :class:`LocalStore` over it (see the module docstring)."""

    def __init__(
        self,
        log_path: str | os.PathLike[str],
        *,
        max_body: int = DEFAULT_MAX_BODY,
        token: str | None = None,
        allow_hosts: Iterable[str] = (),
        fsync: FsyncPolicy = "never",
        shaper: Shaper | None = None,
        max_trees: int = DEFAULT_MAX_TREES,
        index_every: float | None = INDEX_EVERY,
    ) -> None:
        if max_trees < 1:
            raise BadInput(f"max_trees must be at least 1, not {max_trees}")
        super().__init__(max_body=max_body, token=token, allow_hosts=allow_hosts, shaper=shaper)
        self.log = EventLog(log_path, fsync=fsync)
        self.texts = Assembler()  # longer texts arrive in parts, maybe over several requests
        self.store: LocalStore = LocalStore(log_path, index=index_path(log_path), max_trees=max_trees)
        self.store.refresh()  # what an earlier run left unindexed (a kill, a missing index)
        self.follows = index_every is not None
        if index_every is not None:
            self.store.follow(index_every, traffic=self.traffic)  # the index and the ledger, kept up between requests

    def ingest(self, batch: Batch) -> Batch:
        """Append the records of one request to the log, in one write: each span's texts, its
        start and its end, spans in start order (parents first when the sender batched
        children ahead of them)."""
        t0 = time.perf_counter()
        spans = sorted(batch.spans, key=_START_ORDER)
        with collector_paused():
            records: list[Record] = []
            add = records.append
            for r in spans:
                if r.blobs:
                    records += r.blobs
                for p in r.parts:
                    whole = self.texts.add(p)
                    if whole is not None:
                        add(whole)
                add(r.started)
                if r.ended is not None:
                    add(r.ended)
            data = _encode_lines(records)
            a = time.perf_counter()
            if records:
                self.store.expect(data, records)  # the index takes them as they are, not decoded again
                self.log.write(data)
            log_time = time.perf_counter() - a
        self.stats.add(
            requests=1, spans=len(spans), rejected=batch.rejected, seconds_encode=a - t0, seconds_log=log_time,
            seconds_total=time.perf_counter() - t0,
        )  # fmt: skip
        return batch

    def health(self, *, detail: bool = True) -> dict[str, Any]:
        """Liveness, and with ``detail`` the counters."""
        if not detail:
            return {"status": "ok"}
        state = self.store.state()
        return {**self.counters(state), "indexed_spans": state.spans, "unindexed_records": self.store.index.refused}

    def close(self) -> None:
        self.log.close()
        self.store.refresh()
        self.store.close()


COLLECTOR_THRESHOLDS = (50_000, 20, 10)
"""The cyclic garbage collector's thresholds in a server process (CPython's are 700, 10, 10)."""


def tune_collector() -> None:
    """Set the cyclic garbage collector of a process that is now a server (``callctx serve``,
    once it listens): what it made to start (modules, tables) is frozen out of collections,
    and collections come after :data:`COLLECTOR_THRESHOLDS` allocations rather than CPython's
    700. A request's records are many, short-lived and free of cycles (they die by reference
    counting), and the index takes those of one request a little later: with the default, every
    request's records are scanned again and again while they wait, at a few microseconds a
    span. Garbage in cycles lives a little longer. Any thread; once per process."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


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

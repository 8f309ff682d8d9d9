"""The receiver behind ``callctx serve``: OTLP trace requests folded with the same projection
as in-process, appended to the receiver's own event log, and read back through a small API.

Threading: every method is safe to call from the HTTP and gRPC worker threads at once;
ingest holds the projection's lock around the log write and the fold, so the log's order is
the fold's order. Errors: a malformed body raises ``ValueError`` (the transports answer 400
and keep serving); a log that cannot be written raises ``OSError`` (503).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from callctx.projection.calls import ModelCall, read_calls
from callctx.projection.events import encode
from callctx.projection.fold import Projection
from callctx.projection.log import EventLog, FsyncPolicy
from callctx.projection.otlp import Decoded, decode_json, decode_protobuf
from callctx.projection.spans import to_records

from ..recorded import Unrebuildable, as_json, rebuild
from .body import BodyError

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 16 << 20  # bytes, after decompression
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


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
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **amounts: float) -> None:
        with self.lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)


class Receiver:
    """Folds OTLP trace requests into one projection and one event log."""

    def __init__(
        self,
        log_path: str | os.PathLike[str] | None,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        token: str | None = None,
        fsync: FsyncPolicy = "never",
    ) -> None:
        self.projection = Projection()
        self.log = EventLog(log_path, fsync=fsync) if log_path else None
        self.max_body = max_body
        self.token = token
        self.stats = Stats()

    # ---- ingest ---------------------------------------------------------------------------
    def decode(self, body: bytes, content_type: str) -> Decoded:
        """The spans of one OTLP/HTTP body; raises :class:`BodyError` (415) for a content type
        that is not OTLP and ``ValueError`` for a body that is not a trace request."""
        t0 = time.perf_counter()
        kind = content_type.split(";")[0].strip().lower()
        if kind == PROTOBUF:
            decoded = decode_protobuf(body)
        elif kind == JSON:
            try:
                decoded = decode_json(body)
            except UnicodeDecodeError:
                raise ValueError("OTLP/JSON body is not valid UTF-8") from None
        else:
            raise BodyError(415, f"unsupported content type {content_type!r}; use {PROTOBUF} or {JSON}")
        spent = time.perf_counter() - t0
        self.stats.add(seconds_decode=spent, seconds_total=spent)
        return decoded

    def ingest(self, decoded: Decoded) -> Decoded:
        """Append and fold the spans of one request (in start order, so parents come first
        when the sender batched children ahead of them)."""
        t0 = time.perf_counter()
        fold = log_time = 0.0
        proj = self.projection
        spans = sorted(decoded.spans, key=lambda sp: (sp.start_ns, sp.span_id))
        with proj.lock:
            for sp in spans:
                for rec in to_records(sp):
                    if self.log is not None:
                        a = time.perf_counter()
                        self.log.write(encode(rec))
                        log_time += time.perf_counter() - a
                    a = time.perf_counter()
                    proj.apply_locked(rec)
                    fold += time.perf_counter() - a
        self.stats.add(
            requests=1,
            spans=len(spans),
            rejected=decoded.rejected,
            seconds_fold=fold,
            seconds_log=log_time,
            seconds_total=time.perf_counter() - t0,
        )
        return decoded

    def authorized(self, header: str | None) -> bool:
        """Does an ``Authorization`` header carry the token (always, when none is set)?"""
        if self.token is None:
            return True
        expected = f"Bearer {self.token}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    def close(self) -> None:
        if self.log is not None:
            with self.projection.lock:
                self.log.close()

    # ---- read API -------------------------------------------------------------------------
    def traces(self) -> list[dict[str, Any]]:
        p = self.projection
        out = []
        for key in p.sessions():
            tree = p.trees[key]
            tops = tree.top_calls
            out.append({"id": key, "top_calls": len(tops), "functions": [n.function for n in tops][:20]})
        return out

    def calls(self) -> tuple[list[ModelCall], dict[str, str]]:
        """The model calls received so far, and the texts they were built from."""
        if self.log is None:
            return [], {}
        return read_calls(self.log.path)

    def context(self, n: int) -> dict[str, Any]:
        """Call ``n`` rebuilt from the texts received; ``KeyError`` when it cannot be."""
        calls, blobs = self.calls()
        if not 1 <= n <= len(calls):
            raise KeyError(f"call {n} is out of range (1 to {len(calls)})")
        try:
            return as_json(rebuild(calls[n - 1], blobs))
        except Unrebuildable as e:  # texts that never arrived, or arrived altered
            raise KeyError(str(e)) from None

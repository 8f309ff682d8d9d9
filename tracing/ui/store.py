"""An event log followed as it grows: its spans, model calls and texts, as the debugger page
reads them.

The log is the source of truth. :meth:`LogStore.refresh` reads only what was appended since
the last refresh, whole lines only (a record still being written waits for its newline), and
bumps :attr:`LogStore.generation` when anything arrived; the page polls that number. A log
that shrank or was replaced is read again from its start.

Threading: every public method takes the store's lock; the server's worker threads share one
store. Errors: a log that does not exist yet reads as empty; damaged lines are skipped, as
``read_log`` skips them, and counted in :attr:`LogStore.damaged`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

from callctx.projection import schema as s
from callctx.projection.calls import CallLedger, ModelCall, SpanInfo
from callctx.projection.dialects import conversation
from callctx.projection.events import SpanEnded, SpanStarted
from callctx.projection.log import Damage, decode_block

log = logging.getLogger(__name__)

_READ = 8 << 20  # bytes read per step while catching up with a log

Status = Literal["ok", "error", "running"]


class TraceInfo(msgspec.Struct):
    """One trace as the store keeps it."""

    trace_id: str
    session: str | None = None
    first: int = 0  # earliest start, ns
    last: int = 0  # latest start or end, ns
    spans: list[str] = msgspec.field(default_factory=list)  # in arrival order
    services: list[str] = msgspec.field(default_factory=list)


class LogStore:
    """The spans, model calls and texts of one event log, kept up to date by :meth:`refresh`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock = threading.RLock()
        self.generation = 0
        self.damaged = 0
        self._reset()

    def _reset(self) -> None:
        self.ledger = CallLedger()
        self.traces: dict[str, TraceInfo] = {}
        self.children: dict[str, list[str]] = {}  # parent span id -> child span ids, in arrival order
        self._offset = 0
        self._line = 0
        self._ino: int | None = None
        self._memo: dict[str, object] = {}  # derived views, valid for one generation

    # ---- following the log ------------------------------------------------------------------
    def refresh(self) -> int:
        """Read what was appended since the last call; the generation after it."""
        with self.lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return self.generation
            if st.st_size < self._offset or (self._ino is not None and st.st_ino != self._ino):
                log.info("callctx ui: %s was replaced or truncated; reading it again", self.path)
                self._reset()
                self.generation += 1
            self._ino = st.st_ino
            if st.st_size == self._offset:
                return self.generation
            grew = False
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                while self._offset < st.st_size:
                    data = f.read(min(_READ, st.st_size - self._offset))
                    end = data.rfind(b"\n") + 1
                    if not end:
                        if len(data) < _READ:
                            break  # a record still being written
                        data += f.readline()  # a line longer than one step
                        end = data.rfind(b"\n") + 1
                        if not end:
                            break
                    block = data[:end]
                    damage: list[Damage] = []
                    for rec in decode_block(block, self.path, self._line, self._offset, damage):
                        self._add(rec)
                    self.damaged += len(damage)
                    self._line += block.count(b"\n")
                    self._offset += end
                    f.seek(self._offset)
                    grew = True
            if grew:
                self.generation += 1
                self._memo.clear()
            return self.generation

    def _add(self, rec: object) -> None:
        t = type(rec)
        known = rec.span_id in self.ledger.spans if t is SpanStarted else False  # type: ignore[attr-defined]
        self.ledger.add(rec)  # type: ignore[arg-type]
        if t is SpanStarted and not known:
            st: SpanStarted = rec  # type: ignore[assignment]
            tr = self.traces.get(st.trace_id)
            if tr is None:
                tr = self.traces[st.trace_id] = TraceInfo(st.trace_id, first=st.start_ns, last=st.start_ns)
            tr.spans.append(st.span_id)
            tr.first = min(tr.first, st.start_ns)
            tr.last = max(tr.last, st.start_ns)
            if tr.session is None:
                tr.session = conversation(st.attributes)
            if st.service and st.service not in tr.services:
                tr.services.append(st.service)
            if st.parent_id is not None:
                self.children.setdefault(st.parent_id, []).append(st.span_id)
        elif t is SpanEnded:
            end: SpanEnded = rec  # type: ignore[assignment]
            tr = self.traces.get(end.trace_id)
            if tr is not None:
                tr.last = max(tr.last, end.end_ns)

    # ---- derived views (memoized for one generation) ---------------------------------------
    def calls(self) -> list[ModelCall]:
        with self.lock:
            return self.ledger.calls()

    def call(self, n: int) -> ModelCall:
        """Call ``n`` (from 1); ``KeyError`` saying the range when there is none."""
        calls = self.calls()
        if not 1 <= n <= len(calls):
            raise KeyError(f"call {n} is out of range ({f'1 to {len(calls)}' if calls else 'no calls yet'})")
        return calls[n - 1]

    def call_numbers(self) -> dict[str, int]:
        """Span id -> call number."""
        with self.lock:
            return self._derived("numbers", lambda: {c.span_id: c.index for c in self.ledger.calls()})  # type: ignore[return-value]

    def tree_of_trace(self, trace_id: str) -> str:
        tr = self.traces.get(trace_id)
        return (tr.session or trace_id) if tr is not None else trace_id

    def trees(self) -> dict[str, list[str]]:
        """Tree key (a session, or a trace outside any) -> its trace ids, by first start."""
        with self.lock:

            def build() -> dict[str, list[str]]:
                out: dict[str, list[str]] = {}
                for tr in sorted(self.traces.values(), key=lambda t: (t.first, t.trace_id)):
                    out.setdefault(tr.session or tr.trace_id, []).append(tr.trace_id)
                return out

            return self._derived("trees", build)  # type: ignore[return-value]

    def tree_calls(self, key: str) -> list[ModelCall]:
        """The model calls of tree ``key``, in call-number order."""
        with self.lock:

            def build() -> dict[str, list[ModelCall]]:
                out: dict[str, list[ModelCall]] = {}
                for c in self.ledger.calls():
                    out.setdefault(self.tree_of_trace(c.trace_id), []).append(c)
                return out

            by_tree: dict[str, list[ModelCall]] = self._derived("tree_calls", build)  # type: ignore[assignment]
            return by_tree.get(key, [])

    def roots(self, key: str) -> list[str]:
        """The top spans of tree ``key`` (no parent, or a parent never seen), by start."""
        with self.lock:
            spans = self.ledger.spans
            out = [
                sid
                for tid in self.trees().get(key, [])
                for sid in self.traces[tid].spans
                if spans[sid].parent_id is None or spans[sid].parent_id not in spans
            ]
            return sorted(out, key=lambda sid: (spans[sid].start.start_ns, sid))

    def kids(self, span_id: str) -> list[str]:
        with self.lock:
            spans = self.ledger.spans
            return sorted(self.children.get(span_id, ()), key=lambda sid: (spans[sid].start.start_ns, sid))

    def ancestors(self, span_id: str) -> list[str]:
        """``span_id``'s ancestors that arrived, top first, then the span itself."""
        with self.lock:
            spans = self.ledger.spans
            chain: list[str] = []
            sid: str | None = span_id
            while sid is not None and sid in spans and sid not in chain and len(chain) < 10_000:
                chain.append(sid)
                sid = spans[sid].parent_id
            return chain[::-1]

    def span(self, span_id: str) -> SpanInfo:
        with self.lock:
            info = self.ledger.spans.get(span_id)
            if info is None:
                raise KeyError(f"no span {span_id}")
            return info

    def facets(self) -> tuple[list[str], list[str]]:
        """(every service, every agentic function name)."""
        with self.lock:

            def build() -> tuple[list[str], list[str]]:
                services = sorted({sv for tr in self.traces.values() for sv in tr.services})
                functions = sorted({sp.function for sp in self.ledger.spans.values() if sp.kind == "agentic"})
                return services, functions

            return self._derived("facets", build)  # type: ignore[return-value]

    def _derived(self, name: str, build: object) -> object:
        value = self._memo.get(name)
        if value is None:
            value = self._memo[name] = build()  # type: ignore[operator]
        return value

    def memo(self, name: str, build: object) -> object:
        """A view derived from the store, rebuilt once per generation (for the page's views)."""
        with self.lock:
            return self._derived(name, build)


def status_of(info: SpanInfo) -> Status:
    end = info.end
    if end is None:
        return "running"
    return "error" if end.status == "error" else "ok"


def ours(info: SpanInfo) -> bool:
    """A model call callctx recorded (its context is rebuilt and verified)."""
    return isinstance(info.start.attributes.get(s.CONTEXT), str)


def walk(store: LogStore, span_id: str) -> Iterator[str]:
    """``span_id`` and every span under it, depth first."""
    stack = [span_id]
    seen: set[str] = set()
    while stack:
        sid = stack.pop()
        if sid in seen:
            continue
        seen.add(sid)
        yield sid
        stack.extend(store.children.get(sid, ()))

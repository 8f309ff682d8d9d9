"""A local store over records held in memory: some traces read back from a shared store.

The ClickHouse store reads a tree's rows, or a batch of traces to derive its listings from,
and needs exactly what the local store answers for an event log: the same index rules (call
classification, functions, wrappers, sessions), the same fold. :class:`HeldStore` is that
store, over records handed to it (:meth:`HeldStore.add`) instead of a log followed on disk:
each record is located by its place in the list, so the index and the fold read them as they
would read a log's byte ranges. Nothing is written anywhere.

Threading: as :class:`~callctx.store.local.LocalStore` (any thread; :meth:`add` serialised).
Errors: as the local store's; records it cannot take are counted (``index.refused``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from callctx.projection.batch import Batch, records
from callctx.projection.events import Record
from callctx.projection.log_reader import Located

from .local import LocalStore
from .model import StoreState


class HeldStore(LocalStore):
    """The local store's reads over records in memory (see the module docstring).
    ``source`` names where they came from (in errors and ``state().source``)."""

    def __init__(self, source: str, *, finished: bool = True) -> None:
        super().__init__(source, finished=finished)
        self.source = source
        self._held: list[Record] = []
        self._adding = threading.Lock()

    def add(self, batch: Batch) -> None:
        """Index the records of ``batch`` (each span's texts, its start and its end)."""
        self.add_records(records(batch))

    def add_records(self, recs: Iterable[Record]) -> None:
        with self._adding:
            first = len(self._held)
            self._held.extend(recs)
            block = [Located(r, first + i, 1) for i, r in enumerate(self._held[first:])]
            if block:
                self.index.add(block, offset=len(self._held), line=len(self._held), identity=None)

    # ---- what the local store reads from its log ----------------------------------------------
    def refresh(self, limit: int | None = None) -> int:
        return len(self._held)

    def state(self) -> StoreState:
        return StoreState(
            cursor=len(self._held), calls=self.index.count_calls(), trees=self.index.tree_count(),
            spans=self.index.span_count(), source=self.source, exists=bool(self._held), damaged=0,
        )  # fmt: skip

    def _read_around(self, ranges: Sequence[tuple[int, int]]) -> list[Record]:
        return self._read(ranges)

    def _read(self, ranges: Sequence[tuple[int, int]]) -> list[Record]:
        out: list[Record] = []
        for a, b in sorted(set(ranges)):
            out.extend(self._held[a:b])
        return out

    def close(self) -> None:
        super().close()
        self._held = []


__all__ = ["HeldStore"]

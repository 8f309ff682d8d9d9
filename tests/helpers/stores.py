"""Reading a log as the tests need it: through the local store, like every reader."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from callctx.projection.calls import ModelCall
from callctx.projection.events import Record, encode
from callctx.projection.log import EventLog
from callctx.store.contexts import Rebuilt, rebuild
from callctx.store.local import LocalStore
from callctx.store.model import ANY, Filter


def calls_in(path: str | os.PathLike[str], f: Filter = ANY) -> list[ModelCall]:
    """Every model call of the log at ``path``, in call order."""
    with LocalStore(path) as store:
        return all_calls(store, f)


def all_calls(store: LocalStore, f: Filter = ANY) -> list[ModelCall]:
    out: list[ModelCall] = []
    offset: int | None = 0
    while offset is not None:
        page = store.calls(f, offset=offset, limit=1000)
        out.extend(page.items)
        offset = page.next_offset
    return out


def rebuilt_calls(path: str | os.PathLike[str]) -> list[Rebuilt]:
    """Every one of our calls in the log, rebuilt (raises when one cannot be)."""
    with LocalStore(path) as store:
        return [rebuild(store.recorded(c)) for c in all_calls(store, Filter(ours=True))]


def log_of(records: Iterable[Record], folder: str | os.PathLike[str] | None = None) -> Path:
    """A new event log holding ``records``."""
    where = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="callctx-test-"))
    path = where / "records.jsonl"
    with EventLog(path) as log:
        for rec in records:
            log.write(encode(rec))
    return path


def calls_of(records: Iterable[Record]) -> list[ModelCall]:
    """The model calls of a stream of records (written to a log of their own)."""
    return calls_in(log_of(records))


def tree_keys(store: LocalStore) -> list[str]:
    """The key of every session and trace the store lists."""
    keys: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = store.trees(offset=offset, limit=1000)
        keys.extend(t.key for t in page.items)
        offset = page.next_offset
    return keys


def served_views(store: LocalStore, span_ids: Iterable[str]) -> dict[str, str]:
    """What a store answers for every tree and for each span's final tree, keyed as
    ``all_views`` keys a projection's (``session:KEY`` and span ids)."""
    views = {f"session:{k}": store.tree(k) for k in tree_keys(store)}
    views.update({sid: store.span_tree(sid, final=True) for sid in span_ids})
    return views


def served_trees(store: LocalStore) -> dict[str, str]:
    """Every tree the store answers that lists any call, by key (as ``Projection.sessions``
    lists a projection's)."""
    return {k: text for k in tree_keys(store) if (text := store.tree(k))}

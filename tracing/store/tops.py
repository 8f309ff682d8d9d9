"""Which trees an index lists: the root calls of each trace and the tree each is keyed to, kept
as spans arrive in any order, in any blocks, with duplicates (the fold's rule,
:mod:`callctx.projection.fold`, kept by the index).

The rule: a root call is a call (an agentic call not hidden, a model call, a tool call) with no
started holder (an agentic call not hidden) among its present ancestors; its tree is keyed by
the first conversation id found on the call itself or up through those ancestors, else by its
trace id. A span's ancestors are those of its own trace: a parent in another trace counts as
missing, for good. Of a loop of parents (hostile or broken input), the span of the loop whose
start the log holds last has none (it is ``cut``), as in the fold, which links spans as they
arrive.

Tables: ``tops`` holds one row per root call (by trace, start and span id): its tree, the
conversation id found so far, and ``missing``, the ancestor its walk stopped at because that
span has not arrived. When a missing span arrives (the index notes every span named as a
parent before it started, so it knows which arrivals to look at), the root calls waiting for
it are walked on from it: they find a holder (they are root calls no more), or their key
changes (their tree moves), or they wait for the next missing ancestor. ``memberships``
counts, per tree and trace, the root calls of the trace keyed to the tree; a trace with no
root call at all is listed under its own id (count 0). A tree's member traces are those of
its rows; a trace's primary tree (the one a trace, or a call outside any root call's tree, is
shown in) is the tree of its first root call, by start.

Threading: used by one block of the index at a time, under the index's lock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from callctx.projection.ancestry import MAX_DEPTH

IN = 256  # ids per lookup: shorter lists are padded with NULL, so one prepared statement serves all
_IN_LIST = ",".join("?" * IN)


class Link(Protocol):
    """A started span as the walk sees it (``at``: where its start is in the log)."""

    trace_id: str
    parent_id: str | None
    holds: bool
    visible: bool
    conv: str | None
    cut: bool
    start_ns: int
    at: int


Lookup = Callable[[str], Link | None]
"""A started span by id, or None (not indexed yet, or only its end)."""


class Walked(NamedTuple):
    """Where a walk up from a call stopped: ``nested`` under a holder; the first conversation id
    found (None: none yet); the ancestor it waits for (None: the chain is complete)."""

    nested: bool
    conv: str | None
    missing: str | None


def walk(sid: str | None, trace_id: str, conv: str | None, lookup: Lookup) -> Walked:
    """Walk up from span ``sid`` (itself included) through the present ancestors of a call of
    trace ``trace_id`` that found ``conv`` so far (see the module docstring)."""
    steps = 0
    while sid is not None and steps < MAX_DEPTH:
        k = lookup(sid)
        if k is None:
            return Walked(False, conv, sid)
        if k.trace_id != trace_id:  # another trace's span: never this call's ancestor
            break
        if k.holds:
            return Walked(True, conv, None)
        if conv is None:
            conv = k.conv
        if k.cut:
            break
        parent = k.parent_id
        sid = parent if parent != sid else None
        steps += 1
    return Walked(False, conv, None)


def _padded(ids: Sequence[str]) -> Iterable[list[str | None]]:
    """``ids`` in lists of exactly ``IN`` (the last padded with None, which matches nothing)."""
    for i in range(0, len(ids), IN):
        chunk: list[str | None] = list(ids[i : i + IN])
        chunk += [None] * (IN - len(chunk))
        yield chunk


class Tops:
    """What one block of spans (``arrived``) changes in ``tops`` and ``memberships`` (see the
    module docstring), once every span of the block can be looked up: :meth:`cut_loops`,
    :meth:`place`, :meth:`resume` and :meth:`settle`, in that order. ``awaited``: the spans of
    the block that a span indexed before named as its parent (at least every one that has a
    child indexed before it)."""

    def __init__(self, db: sqlite3.Connection, lookup: Lookup, arrived: Mapping[str, Link], awaited: set[str]) -> None:
        self.db = db
        self.lookup = lookup
        self.arrived = arrived
        self.awaited = awaited
        self.counts: dict[tuple[str, str], int] = {}  # (tree, trace) -> root calls gained (or lost)

    def _count(self, tree: str, trace_id: str, n: int) -> None:
        key = (tree, trace_id)
        self.counts[key] = self.counts.get(key, 0) + n

    # ---- loops ------------------------------------------------------------------------------
    def cut_loops(self) -> list[str]:
        """Find the loops of parents the block's spans close, and cut each at the span whose
        start the log holds last (marked ``cut``; returned, to be written)."""
        arrived = self.arrived
        parents = self.awaited.union(k.parent_id for k in arrived.values())  # only those can close one
        cut: list[str] = []
        for sid, k in arrived.items():
            if sid in parents and k.parent_id is not None:
                found = self._loop_through(sid, k)
                if found is not None:
                    cut.append(found)
        return cut

    def _loop_through(self, sid: str, first: Link) -> str | None:
        """The span to cut if ``sid`` is on a loop of present parents of its trace, else None."""
        if first.cut:
            return None
        members: list[tuple[int, str, Link]] = [(first.at, sid, first)]
        seen = {sid}
        up = first.parent_id
        while up is not None and len(members) <= MAX_DEPTH:
            if up == sid:
                _, last, link = max(members, key=lambda m: (m[0], m[1]))
                link.cut = True
                return last
            if up in seen:
                return None  # a loop above this span, not through it
            k = self.lookup(up)
            if k is None or k.trace_id != first.trace_id or k.cut:
                return None
            seen.add(up)
            members.append((k.at, up, k))
            up = k.parent_id if k.parent_id != up else None
        return None

    # ---- root calls -------------------------------------------------------------------------
    def place(self) -> None:
        """Add the block's calls that are root calls."""
        rows = []
        lookup = self.lookup
        walked: dict[tuple[str, str, str | None], Walked] = {}  # calls under one span walk alike
        for sid, k in self.arrived.items():
            if not k.visible:
                continue
            parent = k.parent_id
            if k.cut or parent is None or parent == sid:
                found = Walked(False, k.conv, None)
            else:
                up = lookup(parent)
                if up is not None and up.holds and up.trace_id == k.trace_id:
                    continue  # the common case: listed in the call it runs in
                key = (parent, k.trace_id, k.conv)
                found = walked.get(key) or walked.setdefault(key, walk(parent, k.trace_id, k.conv, lookup))
            if found.nested:
                continue
            tree = found.conv or k.trace_id
            rows.append((k.trace_id, k.start_ns, sid, tree, found.conv, found.missing))
            self._count(tree, k.trace_id, 1)
        if rows:
            self.db.executemany("INSERT INTO tops VALUES (?,?,?,?,?,?)", rows)

    def resume(self) -> None:
        """Walk on the root calls that waited for one of the block's spans (a span they waited
        for had a child indexed before it): those that waited for one span with one conversation
        id so far walk on alike, so they are walked, and changed, together."""
        db = self.db
        groups: list[tuple[str, str | None, str, int]] = []
        for chunk in _padded(list(self.awaited)):
            groups += db.execute(
                f"SELECT trace_id, conv, missing, count(*) FROM tops WHERE missing IN ({_IN_LIST}) "
                "GROUP BY trace_id, conv, missing",
                chunk,
            ).fetchall()
        gone: list[tuple[str, str, str | None]] = []
        moved: list[tuple[str, str | None, str | None, str, str, str | None]] = []
        for trace_id, conv, missing, n in groups:
            found = walk(missing, trace_id, conv, self.lookup)
            tree = conv or trace_id
            if found.nested:
                gone.append((missing, trace_id, conv))
                self._count(tree, trace_id, -n)
                continue
            key = found.conv or trace_id
            moved.append((key, found.conv, found.missing, missing, trace_id, conv))
            if key != tree:
                self._count(tree, trace_id, -n)
                self._count(key, trace_id, n)
        if gone:
            db.executemany("DELETE FROM tops WHERE missing = ? AND trace_id = ? AND conv IS ?", gone)
        if moved:
            db.executemany(
                "UPDATE tops SET tree = ?, conv = ?, missing = ? WHERE missing = ? AND trace_id = ? AND conv IS ?",
                moved,
            )

    # ---- memberships ------------------------------------------------------------------------
    def settle(self) -> dict[str, str]:
        """Write the block's changes to ``memberships``; the primary tree of every trace that
        gained spans or root calls, or lost some."""
        db = self.db
        started = {k.trace_id for k in self.arrived.values()}
        counts = [(tree, tid, n) for (tree, tid), n in self.counts.items() if n]
        if counts:
            db.executemany(
                "INSERT INTO memberships VALUES (?, ?, ?) "
                "ON CONFLICT(tree, trace_id) DO UPDATE SET tops = tops + excluded.tops",
                counts,
            )
        changed = {tid for _, tid, _ in counts}
        if changed:
            db.executemany("DELETE FROM memberships WHERE trace_id = ? AND tops <= 0", [(t,) for t in changed])
        primary: dict[str, str] = {}
        alone: list[tuple[str, str]] = []
        for tid in changed.union(started):
            row = db.execute(
                "SELECT tree FROM tops WHERE trace_id = ? ORDER BY start_ns, span_id LIMIT 1", (tid,)
            ).fetchone()
            if row is None:
                alone.append((tid, tid))
            primary[tid] = row[0] if row is not None else tid
        if alone:  # no root call: listed under its own id
            db.executemany("INSERT OR IGNORE INTO memberships VALUES (?, ?, 0)", alone)
        return primary


__all__ = ["Link", "Lookup", "Tops", "Walked", "walk"]

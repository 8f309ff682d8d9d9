"""Block-stable layout of the call tree: blocks once sent are sent again byte-identical, as the
same blocks, for as long as their content is unchanged.

Prompt caches that work at block boundaries (Anthropic, Bedrock) find an earlier entry only
at a boundary where an earlier request wrote one, looking back at most 20 blocks from a
breakpoint; whether the same text split into different blocks shares an entry is not
documented, so the layout is built for the strict reading: a hit needs the same sequence of
blocks, each byte-identical.

The tree grows at its tail and releases at its tail, so consecutive calls of a session share a
prefix. :func:`lay_out` takes the block sequences earlier calls of the same session sent
(:class:`Sealed`) and reuses the longest run of them the new text still starts with, whole;
only the rest is cut anew, at the points where a later call's text can still agree (the start
of each item of the lists along the current call's path) and where the current call begins.
The cache breakpoint closes the block that ends where the current call begins; a second one
can close the block that ends where its parent begins (what a call that moves up a level
sends again). No more than ``MAX_GAP`` blocks separate the new breakpoint from the previous
call's: when more are needed, the new blocks (never the sealed ones) merge, so the cost is at
most the text that was new anyway.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import msgspec

from .context import TreeText
from .ctx import Sealed

MAX_GAP = 16  # blocks from the previous breakpoint to the new one (Anthropic looks back 20)


class Layout(msgspec.Struct, frozen=True):
    """How one call's tree goes out: its blocks, the block the breakpoint closes, and the block
    that ends where the current call's parent begins (None: no such boundary)."""

    blocks: list[str]
    breakpoint: int
    parent: int | None = None
    reused: int = 0  # leading blocks sent before, byte for byte


def _reuse(text: str, prior: Sequence[Sealed]) -> tuple[list[str], int]:
    """The longest run of a prior call's leading blocks that ``text`` starts with, and the
    index of that call's breakpoint block when the run reaches it (else -1)."""
    best: list[str] = []
    best_bp = -1
    for p in prior:
        pos = 0
        n = 0
        for b in p.blocks:
            if not text.startswith(b, pos):
                break
            pos += len(b)
            n += 1
        if pos > sum(map(len, best)):
            best = list(p.blocks[:n])
            best_bp = p.breakpoint if p.breakpoint < n else -1
    return best, best_bp


def lay_out(tree: TreeText, separator: str, prior: Sequence[Sealed] = (), *, max_gap: int = MAX_GAP) -> Layout:
    """The blocks of ``tree`` (its text plus ``separator``), reusing what ``prior`` calls sent."""
    text = tree.text + separator
    end = len(tree.text)
    here = tree.here if tree.here is not None and 0 < tree.here < end else None
    parent = tree.parent if tree.parent is not None and 0 < tree.parent < end else None
    sealed, prev_bp = _reuse(text, prior)
    start = sum(map(len, sealed))
    cuts = sorted({c for c in (*tree.cuts, here, parent) if c is not None and start < c < end})
    # Keep the new blocks few enough that the breakpoint stays within reach of the previous one.
    budget = max_gap - (len(sealed) - 1 - prev_bp if prev_bp >= 0 else 0)
    must = [c for c in (parent, here) if c is not None and c in cuts]
    if len(cuts) + 1 > max(budget, len(must) + 1):
        keep = max(budget, len(must) + 1) - 1 - len(must)
        others = [c for c in cuts if c not in must]
        cuts = sorted({*must, *others[len(others) - max(0, keep) :]})  # the newest cuts, near the tail
    edges = [start, *cuts, len(text)]
    fresh = [text[a:b] for a, b in itertools.pairwise(edges) if b > a]
    blocks = [*sealed, *fresh]
    offsets = list(itertools.accumulate(len(b) for b in blocks))  # where each block ends

    def closing(at: int | None) -> int | None:
        return offsets.index(at) if at is not None and at in offsets else None

    bp = closing(here)
    if bp is None:
        bp = len(blocks) - 1
    par = closing(parent)
    return Layout(blocks, bp, par if par is not None and par < bp else None, len(sealed))

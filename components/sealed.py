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

The layout also names, among the sealed blocks, the one that closes the longest prefix an
earlier call of the session put a breakpoint on (``reuse``): a cache that looks entries up
only at the breakpoints a request carries (OpenAI's, from GPT-5.6 on) finds the earlier entry
there, and nowhere else.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import msgspec

from .context import TreeText
from .inputs import Sealed

MAX_GAP = 16  # blocks from the previous breakpoint to the new one (Anthropic looks back 20)


class Layout(msgspec.Struct, frozen=True):
    """How one call's tree goes out: its blocks, the block the breakpoint closes, the block
    that ends where the current call's parent begins (None: no such boundary), and the sealed
    block that ends where an earlier call of the session put a breakpoint, the deepest such
    (None: none of its breakpoints is still a boundary here)."""

    blocks: list[str]
    breakpoint: int
    parent: int | None = None
    reused: int = 0  # leading blocks sent before, byte for byte
    reuse: int | None = None


def _reuse(text: str, prior: Sequence[Sealed]) -> tuple[list[str], int, list[int]]:
    """The longest run of a prior call's leading blocks that ``text`` starts with, the index
    of that call's breakpoint block when the run reaches it (else -1), and the offsets in
    ``text`` where the prior calls' breakpoints still close a prefix of it."""
    best: tuple[str, ...] = ()
    best_pos = 0
    best_bp = -1
    marked: list[int] = []
    known: tuple[str, ...] = ()  # the leading blocks of some prior that ``text`` starts with
    known_ends: list[int] = []  # where each of them ends
    for p in prior:
        blocks = p.blocks
        # Calls of a session send their leading blocks again as they were (the same strings):
        # what this call shares with blocks already matched matches too, so only the rest is read.
        n = _shared(blocks, known)
        n, pos = _extend(text, blocks, n, known_ends[n - 1] if n else 0)
        if n > len(known):
            known = blocks[:n]
            known_ends = list(itertools.accumulate(map(len, known)))
        marked += [sum(map(len, blocks[: i + 1])) for i in (p.breakpoint, p.parent) if i is not None and i < n]
        if pos > best_pos:
            best, best_pos = blocks[:n], pos
            best_bp = p.breakpoint if p.breakpoint < n else -1
    return list(best), best_bp, marked


def _extend(text: str, blocks: tuple[str, ...], n: int, pos: int) -> tuple[int, int]:
    """``blocks[:n]`` match ``text`` up to ``pos``: how many match in all, and up to where
    (the first k blocks match when ``text`` starts with their concatenation, so the count is
    found by halving, not block by block)."""
    rest = blocks[n:]
    if not rest:
        return n, pos
    joined = "".join(rest)
    if text.startswith(joined, pos):
        return len(blocks), pos + len(joined)
    ends = list(itertools.accumulate(map(len, rest)))
    lo, hi = 0, len(rest)  # rest[:lo] matches, rest[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if text.startswith(joined[: ends[mid - 1]], pos):
            lo = mid
        else:
            hi = mid
    return n + lo, pos + (ends[lo - 1] if lo else 0)


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many leading blocks ``a`` and ``b`` have in common (tuple comparison: the same
    string objects compare at once)."""
    hi = min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    step, lo = 1, hi - 1  # they part near the end, as a rule: look there first
    while lo > 0 and a[:lo] != b[:lo]:
        hi, step = lo, step * 2
        lo = max(0, hi - step)
    while hi - lo > 1:  # a[:lo] == b[:lo], a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def lay_out(
    tree: TreeText,
    separator: str,
    prior: Sequence[Sealed] = (),
    *,
    max_gap: int = MAX_GAP,
    whole: str | None = None,
) -> Layout:
    """The blocks of ``tree`` (its text plus ``separator``), reusing what ``prior`` calls sent.
    ``whole``: ``tree.text``, when the caller has it already."""
    body = tree.text if whole is None else whole
    text = body + separator
    end = len(body)
    here = tree.here if tree.here is not None and 0 < tree.here < end else None
    parent = tree.parent if tree.parent is not None and 0 < tree.parent < end else None
    sealed, prev_bp, marked = _reuse(text, prior)
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
    reuse = next((i for i in map(closing, sorted(marked, reverse=True)) if i is not None and i < len(sealed)), None)
    return Layout(blocks, bp, par if par is not None and par < bp else None, len(sealed), reuse)

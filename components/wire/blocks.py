"""Grouping segments into the text blocks a request carries, at the cache breakpoints."""

from __future__ import annotations

import msgspec

from ..context import Context, Segment


class Block(msgspec.Struct, frozen=True):
    text: str
    cache: bool  # a cache breakpoint closes this block


def system_blocks(context: Context) -> list[Block]:
    """System segments joined into blocks, each closed by a breakpoint (the rest, unmarked)."""
    out: list[Block] = []
    buf: list[str] = []
    for s in context.segments:
        if s.section != "system":
            continue
        buf.append(s.text)
        if s.breakpoint:
            out.append(Block("".join(buf), True))
            buf = []
    if buf:
        out.append(Block("".join(buf), False))
    return out


def tree_blocks(context: Context, *, parent: bool = True) -> list[Block]:
    """The call tree as the blocks its layout chose (sealed blocks first: see ``sealed``); the
    breakpoint goes on the block that ends where the current call begins (everything before
    it, the next call sends again), and with ``parent`` a second one on the block that ends
    where its parent begins (what a call that moves up a level sends again)."""
    segs: list[Segment] = [s for s in context.segments if s.section == "tree"]
    out: list[Block] = []
    for s in segs:
        parts = s.blocks or [s.text]
        mark = s.breakpoint_block if s.breakpoint_block is not None else len(parts) - 1
        marks = {mark, s.parent_block} if parent and s.parent_block is not None else {mark}
        out.extend(Block(p, s.breakpoint and i in marks) for i, p in enumerate(parts))
    return out


def turn_text(context: Context) -> str:
    return "".join(s.text for s in context.segments if s.section == "turn")


def system_text(context: Context) -> str:
    return "".join(s.text for s in context.segments if s.section == "system")


def tree_text(context: Context) -> str:
    return "".join(s.text for s in context.segments if s.section == "tree")

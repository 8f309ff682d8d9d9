"""Grouping segments into the text blocks a request carries, where its cache breakpoints go
(:func:`plan`, one rule for every wire that marks them and for the simulator), and the key that
names a session's requests (:func:`session_key`).

Two markings, after how each provider finds an entry. ``anthropic``: after each stable stretch
of the system part, on the tree block that ends where the current call begins, and on the one
that ends where its parent begins (before any tool round) or at the end of the tool loop so
far; Anthropic looks back up to 20 blocks from each mark for an earlier entry. ``openai``
(GPT-5.6 and later): OpenAI finds an entry only at a breakpoint the request itself carries, so
the request also marks where the request before it wrote one: the sent-before tree block that
ends where an earlier call of the session put a breakpoint, and in a tool round the end of the
previous round's exchanges. Either way at most four marks, the latest kept (the first system
stretch goes first).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

import msgspec

from ..context import Context, Segment
from .exchange import AssistantTurn, Exchange, ToolResults, UserNote

Marking = Literal["anthropic", "openai"]
"""Where a request's cache breakpoints go: see the module's docstring."""

MAX_MARKS = 4  # both providers write at most four entries a request


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


def tree_blocks(context: Context, *, parent: bool = True, reuse: bool = False) -> list[Block]:
    """The call tree as the blocks its layout chose (sealed blocks first: see ``sealed``); the
    breakpoint goes on the block that ends where the current call begins (everything before
    it, the next call sends again), with ``parent`` a second one on the block that ends where
    its parent begins (what a call that moves up a level sends again), and with ``reuse`` one
    on the sent-before block that ends where an earlier call put a breakpoint."""
    segs: list[Segment] = [s for s in context.segments if s.section == "tree"]
    out: list[Block] = []
    for s in segs:
        parts = s.blocks or [s.text]
        mark = s.breakpoint_block if s.breakpoint_block is not None else len(parts) - 1
        marks = {mark}
        if parent and s.parent_block is not None:
            marks.add(s.parent_block)
        if reuse and s.reuse_block is not None:
            marks.add(s.reuse_block)
        out.extend(Block(p, s.breakpoint and i in marks) for i, p in enumerate(parts))
    return out


class Plan(msgspec.Struct, frozen=True):
    """A request's system and tree blocks with their marks, and the exchanges of its tool loop
    whose last block a mark closes: at most :data:`MAX_MARKS` in all."""

    system: list[Block]
    tree: list[Block]
    exchanges: frozenset[int]


def plan(context: Context, exchanges: Sequence[Exchange], marking: Marking = "anthropic") -> Plan:
    """Where ``marking`` puts the cache breakpoints of ``context`` plus ``exchanges``."""
    first = not exchanges  # no tool round yet
    system = system_blocks(context)
    tree = tree_blocks(context, parent=first, reuse=first and marking == "openai")
    ends = [len(exchanges) - 1]  # the tool loop so far: the next round sends all of it again
    if marking == "openai":
        ends.append(len(exchanges) - 3)  # where the previous round's request marked its end
    marked = sorted({i for i in ends if i >= 0 and _markable(exchanges[i], marking)})
    order = [(0, i) for i, b in enumerate(system) if b.cache] + [(1, i) for i, b in enumerate(tree) if b.cache]
    order += [(2, i) for i in marked]
    dropped = set(order[: max(0, len(order) - MAX_MARKS)])  # the earliest: the latest cover the longest prefixes
    if dropped:
        system = [Block(b.text, b.cache and (0, i) not in dropped) for i, b in enumerate(system)]
        tree = [Block(b.text, b.cache and (1, i) not in dropped) for i, b in enumerate(tree)]
    return Plan(system, tree, frozenset(i for i in marked if (2, i) not in dropped))


def _markable(e: Exchange, marking: Marking) -> bool:
    """Can a mark close this exchange's last block? Anthropic takes one on any non-empty
    content block; OpenAI on the text of a user or tool message, never on the model's own."""
    if isinstance(e, AssistantTurn):
        return marking == "anthropic" and bool(e.text or e.tool_calls)
    if isinstance(e, ToolResults):
        return bool(e.results)
    return isinstance(e, UserNote)


def session_key(context: Context) -> str | None:
    """A name every request of one agent's session shares, and nothing secret: a hash of the
    identity and session blocks (the agent, its id, the session id, the model), the same on
    every call of the session. None when the context has neither block."""
    parts = [s.text for s in context.segments if s.component in _SESSION_BLOCKS]
    if not parts:
        return None
    return "callctx-" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


_SESSION_BLOCKS = ("identity", "session_binding")


def turn_text(context: Context) -> str:
    return "".join(s.text for s in context.segments if s.section == "turn")


def system_text(context: Context) -> str:
    return "".join(s.text for s in context.segments if s.section == "system")


def tree_text(context: Context) -> str:
    return "".join(s.text for s in context.segments if s.section == "tree")

"""``Context``: an assembled request, provider-neutral, segment by segment.

Sections in wire order: ``tools`` (schemas), ``system`` (stable blocks, then the project
part), ``tree`` (the call tree, first in the messages) and ``turn`` (this call only). A cache
breakpoint sits after each of the first four stable stretches: after the tools, after the
session-stable blocks, after the project part and after the call tree. Every segment keeps
which component made it, its layer, its text and token count, and whether it is cacheable.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .inputs import Attachment

Section = Literal["tools", "system", "tree", "turn"]


class Segment(msgspec.Struct, frozen=True):
    component: str
    layer: str
    section: Section
    text: str
    tokens: int
    cacheable: bool = True
    breakpoint: bool = False  # a cache breakpoint follows this segment
    blocks: list[str] | None = None  # the text split where a prompt cache may split it (call tree)
    breakpoint_block: int | None = None  # which block the breakpoint closes (the last one the next call repeats)
    parent_block: int | None = None  # a second breakpoint: the block that ends where the call's parent begins
    reuse_block: int | None = None  # the sent-before block that ends where an earlier call put a breakpoint


class TreeText(msgspec.Struct, frozen=True):
    """A component's text that a prompt cache may split into blocks (the call tree).

    ``chunks`` are newline-ended pieces whose token counts add up to the whole (finished
    subtrees are single chunks, the same string objects from one call to the next, so
    counting them is paid once); ``cuts`` the offsets where a later call's text can still
    agree with this one; ``here`` the offset where the current call's own lines begin.
    """

    chunks: list[str]
    cuts: list[int]
    here: int | None = None
    parent: int | None = None  # where the current call's parent's lines begin

    @property
    def text(self) -> str:
        return "".join(self.chunks)


class Problem(msgspec.Struct, frozen=True):
    """A component that failed: skipped, and said so, with where it came from (the
    distribution that published it, ``callctx`` for a built-in, None if registered by hand)."""

    component: str
    error: str
    origin: str | None = None


class Context(msgspec.Struct, frozen=True):
    """What one model call sees."""

    tools: list[dict[str, Any]]
    segments: list[Segment]
    problems: list[Problem]
    encoding: str
    media: list[Attachment] = msgspec.field(default_factory=list)  # non-text attachments of the turn

    def section(self, name: Section) -> list[Segment]:
        return [s for s in self.segments if s.section == name]

    @property
    def system(self) -> str:
        return "".join(s.text for s in self.segments if s.section == "system")

    @property
    def tree(self) -> str:
        return "".join(s.text for s in self.segments if s.section == "tree")

    @property
    def turn(self) -> str:
        return "".join(s.text for s in self.segments if s.section == "turn")

    @property
    def text(self) -> str:
        """Everything the model reads as text, in order (tool schemas excluded)."""
        return "".join(s.text for s in self.segments if s.section != "tools")

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.segments)

    @property
    def cacheable_tokens(self) -> int:
        """Tokens up to the last cache breakpoint: what a prompt cache can serve."""
        total = upto = 0
        for s in self.segments:
            total += s.tokens
            if s.breakpoint:
                upto = total
        return upto

    def segment(self, component: str) -> Segment | None:
        for s in self.segments:
            if s.component == component:
                return s
        return None

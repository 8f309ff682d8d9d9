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

from .ctx import Attachment

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
    anchor: int | None = None  # which block the breakpoint closes (the last one the next call repeats)


class Problem(msgspec.Struct, frozen=True):
    """A component that failed: skipped, and said so."""

    component: str
    error: str


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

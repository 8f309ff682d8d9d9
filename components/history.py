"""The call tree: the last block of the second layer, sent at the head of the messages.

It grows at its tail and releases at its tail, so its prefix is stable from one call to the
next. The text carries its chunks and cut points along (see :class:`TreeText`), so token
counting reuses work and the wire can split it where a cache can split it.
"""

from __future__ import annotations

from .component import ContextComponent
from .ctx import Ctx

OPEN = "<call_tree>\n"
CLOSE = "</call_tree>"


class TreeText(str):
    """A ``str`` that also knows its chunks (newline-ended pieces whose token counts add up),
    its cuts (where the items along the viewer's path begin) and where the viewer begins."""

    chunks: list[str]
    cuts: list[int]
    here: int | None

    def __new__(cls, chunks: list[str], cuts: list[int], here: int | None = None) -> TreeText:
        self = super().__new__(cls, "".join(chunks))
        self.chunks = chunks
        self.cuts = cuts
        self.here = here
        return self


def call_tree(ctx: Ctx) -> str | None:
    view = ctx.call_tree
    if view is None or not view.text:
        return None
    # A cut at the very start would only split off the opening tag: not worth a block.
    here = len(OPEN) + view.here if view.here else None
    return TreeText([OPEN, *view.chunks, CLOSE], [len(OPEN) + c for c in view.cuts if c > 0], here)


COMPONENTS = [
    ContextComponent("call_tree", "L1", 1000, call_tree, condition=lambda ctx: ctx.call_tree is not None, history=True),
]

"""The call tree: the last block of the second layer, sent at the head of the messages.

It grows at its tail and releases at its tail, so its prefix is stable from one call to the
next. It is built as a :class:`TreeText` (chunks, cut points, where the current call begins),
so token counting reuses work and the wire can split it where a cache can split it.
"""

from __future__ import annotations

from .component import ContextComponent
from .context import TreeText
from .inputs import Ctx

OPEN = "<call_tree>\n"
CLOSE = "</call_tree>"


def call_tree(ctx: Ctx) -> TreeText | None:
    view = ctx.call_tree
    if view is None or not view.text:
        return None
    # A cut at the very start would only split off the opening tag: not worth a block.
    here = len(OPEN) + view.here if view.here else None
    parent = len(OPEN) + view.parent if view.parent else None
    return TreeText([OPEN, *view.chunks, CLOSE], [len(OPEN) + c for c in view.cuts if c > 0], here, parent)


COMPONENTS = [
    ContextComponent("call_tree", "L1", 1000, call_tree, condition=lambda ctx: ctx.call_tree is not None, history=True),
]

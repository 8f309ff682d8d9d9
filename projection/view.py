"""What a call sees of the projection: its chain of calls and its call tree."""

from __future__ import annotations

import msgspec


class CallInfo(msgspec.Struct, frozen=True):
    """One call on the active chain, as the turn describes it."""

    span_id: str
    function: str
    doc: str | None = None
    position: str | None = None
    output_contract: str | None = None
    render_range: int | None = None
    input: str | None = None
    input_mime: str | None = None


class TreeView(msgspec.Struct, frozen=True):
    """The call tree as one call sees it.

    ``text`` is the YAML; ``chunks`` the same text in pieces that each end with a newline
    (finished subtrees are single chunks and the same string objects from one render to the
    next, so work keyed on them, like token counts, is paid once); ``cuts`` the offsets where
    the items of the lists along the viewer's path begin (its ancestors, their finished
    siblings, the viewer): the boundaries at which a later call's text still agrees with this
    one, where a prompt cache can split the tree; ``here`` the offset of the viewer's own lines.
    """

    text: str
    chunks: list[str]
    cuts: list[int]
    chain: list[CallInfo]
    here: int | None = None
    parent: int | None = None  # the offset of the viewer's parent's lines (None for a top call)

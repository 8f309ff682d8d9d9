"""The nearest agentic ancestor: which function a span runs in, and the path of agentic calls
above it.

Plain spans (HTTP clients, databases, a framework's internals) are transparent: a span runs in
the function of the nearest span above it that is an agentic call, and its path is the chain
of agentic calls from the outermost down. A span's ancestors are those of its own trace: a
parent in another trace counts as missing, for good. This is the one place that walks a span's
ancestors for its function; the fold's own placement rule (``Projection._host``) agrees with
it for every visible agentic call, and every reader that names a model call's function goes
through :func:`agentic_chain`.

The walk asks a lookup for one span at a time, so the same rule serves a dict in memory, an
index on disk and a store queried by SQL. A chain that reaches a span the lookup does not
know yet is incomplete: :class:`Chain` says which span it stopped at, so the caller can
resolve it again when that span arrives. Pure: no state, any thread.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from .dialects import Kind

MAX_DEPTH = 1000  # ancestors walked at most (a deeper or cyclic chain stops here, complete)


class Ancestor(msgspec.Struct, frozen=True, array_like=True):
    """A span as the walk sees it: its parent, its kind, its displayed name, whether it is one
    of callctx's own model calls (a ``chat`` span carrying the manifest of what it sent), and
    its trace (None: not said)."""

    parent_id: str | None
    kind: Kind
    function: str
    ours: bool = False
    trace_id: str | None = None


class Chain(msgspec.Struct, frozen=True):
    """The agentic calls above a span, outermost first; ``missing``: the span the walk could
    not find (the chain may grow when it arrives), else None; ``in_our_call``: the span runs
    inside one of callctx's own model calls (the provider SDK's own span of the request we
    made: part of that call, not a call of its own); ``agent``: the span id of the nearest
    agentic ancestor (the call the span runs in; None: none found yet, or the top level)."""

    path: list[str]
    missing: str | None = None
    in_our_call: bool = False
    agent: str | None = None

    @property
    def function(self) -> str | None:
        """The nearest agentic ancestor's name (None: the span runs at the top level)."""
        return self.path[-1] if self.path else None

    @property
    def complete(self) -> bool:
        return self.missing is None


def agentic_chain(
    parent_id: str | None, lookup: Callable[[str], Ancestor | None], trace_id: str | None = None
) -> Chain:
    """The chain of agentic calls above a span whose parent is ``parent_id``; with ``trace_id``
    (the span's trace), an ancestor of another trace is no ancestor: the chain ends below it,
    complete (spans of one trace share its id; that span never arrives in this one)."""
    names: list[str] = []
    seen: set[str] = set()
    ours = False
    agent: str | None = None
    sid = parent_id
    while sid is not None and sid not in seen and len(seen) < MAX_DEPTH:
        seen.add(sid)
        link = lookup(sid)
        if link is None:
            names.reverse()
            return Chain(names, sid, ours, agent)
        if trace_id is not None and link.trace_id is not None and link.trace_id != trace_id:
            break
        if link.kind == "agentic":
            if not names:
                agent = sid
            names.append(link.function)
        elif link.ours and not names:
            ours = True
        sid = link.parent_id
    names.reverse()
    return Chain(names, None, ours, agent)


__all__ = ["MAX_DEPTH", "Ancestor", "Chain", "agentic_chain"]

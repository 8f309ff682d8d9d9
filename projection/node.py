"""What the fold keeps per span (:class:`Node`) and per call tree (:class:`Tree`).

Vocabulary used across the fold and the renderer:

* a **holder** is a visible agentic call (not ``expose=hidden``): the calls that run under it
  are listed in its ``children``, and the call a span "belongs to" is its nearest holder;
* a node is **listed in** exactly one place: a holder's ``children``, or the
  ``top_calls`` of a :class:`Tree` when no holder encloses it;
* a span that holds nothing (a plain span, a hidden call, a model exchange) keeps the spans
  directly under it in ``plain_children`` until they find the holder they are listed in.

Lists are kept in :func:`order_key` order (start time, then span id). ``revision`` counts
changes to a node's subtree: the fold bumps it on the node and every list above it, so a
renderer can reuse a text it rendered earlier while the revision it saw still holds.
"""

from __future__ import annotations

import sys
from typing import Any, final

import msgspec

from . import schema as s
from .dialects import Kind

STARTED = 1
ENDED = 2
FAILED = 4
HOLDS = 8
VISIBLE = 16
EXPOSE_SHIFT = 5  # two bits: 32, 64
OUTPUT_JSON = 128  # the output is a JSON object or list: rendered as YAML, as an input is
EXPOSE_NAMES = s.EXPOSE_LEVELS  # io, llm, full, hidden

Collapse = tuple[int, str, str]
"""(start_ns, span_id, summary) of the last call of a list that reads as one summary line."""


@final
class Tree:
    """The top of one call tree: a session (shared ``gen_ai.conversation.id``) or a trace."""

    __slots__ = ("collapsed", "key", "revision", "top_calls")

    def __init__(self, key: str) -> None:
        self.key = key
        self.top_calls: list[Node] = []
        self.revision = 0
        self.collapsed: Collapse | None = None

    # A tree is never finished: its top calls are always shown with their outputs.
    state = STARTED
    listed_in = None

    def __repr__(self) -> str:
        return f"Tree({self.key!r}, {len(self.top_calls)} top calls)"


@final
class Node(msgspec.Struct, eq=False, gc=False, repr_omit_defaults=True):
    """One span as the fold keeps it. Fields are dropped as the call leaves the active chain.

    A released call costs one of these plus its id: the layout is kept small on purpose
    (flags in one int, rare fields in ``extra``). Nodes are invisible to the cyclic garbage
    collector (``gc=False``): a projection holds millions of them and a collector pass over
    them buys nothing while it lives. Their links do form cycles, so the projection cuts
    them when it is freed (:meth:`unlink`).
    """

    span_id: str
    trace_id: str
    kind: Kind = "other"
    state: int = 0  # STARTED | ENDED | FAILED | HOLDS | VISIBLE | expose << EXPOSE_SHIFT
    function: str = ""
    start_ns: int = 0
    parent: Node | None = None  # the parent span, once it has started
    listed_in: Node | Tree | None = None  # the holder (or tree) whose list shows this node
    attrs: dict[str, Any] | None = None  # start attrs while running; end attrs while awaiting a start
    output: str | None = None  # display output while the parent runs
    children: list[Node] | None = None  # a holder's visible calls, in order_key order
    revision: int = 0  # bumped when this node or anything listed under it changes
    extra: dict[str, Any] | None = None  # rare fields: see the properties below

    @property
    def holds(self) -> bool:
        """Visible calls below attach here (an agentic, non-hidden span)."""
        return bool(self.state & HOLDS)

    @property
    def visible(self) -> bool:
        """Listed in its holder's children (agentic non-hidden, llm, tool)."""
        return bool(self.state & VISIBLE)

    @property
    def expose(self) -> str:
        return EXPOSE_NAMES[(self.state >> EXPOSE_SHIFT) & 3]

    @property
    def running(self) -> bool:
        return self.state & (STARTED | ENDED) == STARTED

    @property
    def ended(self) -> bool:
        return bool(self.state & ENDED)

    def _get(self, key: str) -> Any:
        extra = self.extra
        return extra.get(key) if extra else None

    def _set(self, key: str, value: Any) -> None:
        if value is None:
            if self.extra:
                self.extra.pop(key, None)
                if not self.extra:
                    self.extra = None
        elif self.extra is None:
            self.extra = {key: value}
        else:
            self.extra[key] = value

    # The rare fields, kept in ``extra`` so a released call stays small.
    conv = property(lambda self: self._get("conv"), lambda self, v: self._set("conv", v))
    """The session (conversation id) the span named, if any."""
    plain_children = property(lambda self: self._get("plain_children"), lambda self, v: self._set("plain_children", v))
    """Spans directly under a span that holds nothing (see the module docstring)."""
    input = property(lambda self: self._get("input"), lambda self, v: self._set("input", v))
    """Display input of a finished model exchange or tool call."""
    error = property(lambda self: self._get("error"), lambda self, v: self._set("error", v))
    """One-line reason of a failed span."""
    collapsed = property(lambda self: self._get("collapsed"), lambda self, v: self._set("collapsed", v))
    """The :data:`Collapse` of this holder's children, if any."""

    def unlink(self) -> None:
        """Drop every reference this node holds (nodes are not tracked by the collector)."""
        self.parent = self.listed_in = self.children = self.attrs = self.extra = None


def order_key(n: Node) -> tuple[int, str]:
    """The order of a list of calls: start time, then span id."""
    return (n.start_ns, n.span_id)


def collapsed_of(target: Node | Tree) -> Collapse | None:
    """The collapse of a holder's children or of a tree's top calls, if any."""
    return target.collapsed


def calls_of(target: Node | Tree) -> list[Node] | None:
    """The list a holder (its children) or a tree (its top calls) shows."""
    return target.children if type(target) is Node else target.top_calls


def sizeof_node() -> int:
    """Bytes of one empty Node (for the memory benchmark's breakdown)."""
    return sys.getsizeof(Node("", ""))

"""The fold: span events in, the call tree out.

``Projection.apply`` is pure bookkeeping over the events it has seen: the same events, in any
order, with any duplicates, give the same state and therefore the same rendered bytes. It
keeps, per span, one small :class:`Node`; a node lists the visible calls under it (``kids``,
ordered by start time then span id). Plain spans are transparent: a call under a plain span
hangs under the nearest agentic ancestor. A child that arrives before its parent waits at the
top of its trace (``orphans``) and moves under the parent when the parent arrives. Spans of one
trace share its trace id: a parent in another trace counts as missing (the child is placed as a
span whose parent never arrived, whichever of the two arrives first); of a loop of parents, the
span whose start arrives last has none.

Which tree a call is in: a call (an agentic call not hidden, a model call, a tool call) with no
started agentic call (not hidden) among its present ancestors is a root call, keyed by the
first conversation id (``gen_ai.conversation.id`` or a dialect's session id) found on the call
itself or up through its present ancestors, else by its trace id. So one trace may give calls
to several trees (an HTTP root span with an agent of session ``S`` under it: tree ``S``; a call
whose parent never arrived: its trace's tree unless it or a span above it names a session), and
an ancestor that arrives late moves the calls under it where the rule now puts them.

Memory stays bounded by the active depth plus one small record per call: a call's input is
dropped when it ends, its output summary when its parent ends (the log keeps both). Work
follows the same rule: io that would be released the moment a call ends (a model exchange
or tool call under an ``io`` holder, any call whose holder already ended) is never extracted
from its attributes.

Threading and errors: a :class:`Projection` is guarded by its ``lock``; ``apply``,
``apply_all`` and the readers take it, ``apply_locked`` expects it held. ``from_log`` replays
a whole log under the lock, a decoded block of records at a time, with the cyclic garbage
collector paused (process-wide) until it returns; damaged records are skipped and listed in
``damage`` as :func:`~callctx.projection.log.read_log` reports them, or raise ``LogError``
when ``strict``.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from bisect import bisect_right, insort
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from . import schema as s
from .dialects import classify, conversation, function_name, input_of, output_of
from .events import Collapsed, Event, SpanEnded, SpanEvent, SpanStarted
from .llm import messages_of
from .log import Damage
from .log_reader import read_blocks, read_log
from .node import (
    ENDED,
    EXPOSE_NAMES,
    EXPOSE_SHIFT,
    FAILED,
    HOLDS,
    OUTPUT_JSON,
    STARTED,
    VISIBLE,
    Node,
    Tree,
    calls_of,
    collapsed_of,
    order_key,
)
from .render import Rendered, Renderer, View
from .view import CallInfo, TreeView

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_LIMIT: int | None = None  # finished, unreleased io is kept whole (the seed keeps it)
ERROR_LIMIT = 200  # an error is one line, cut to this many characters
_EXPOSE = frozenset(s.EXPOSE_LEVELS)
_EXPOSE_BITS = 3 << EXPOSE_SHIFT  # zero: expose=io
_EMPTY: dict[str, Any] = {}
_json = msgspec.json.Decoder()


class Projection:
    """The folded state of a span stream; renders the call tree as any span sees it.

    Thread-safe: ``apply`` and the readers take ``lock``. A writer that must keep another store
    in the same order as the fold (the event log) holds ``lock`` around both and calls
    ``apply_locked``.
    """

    def __init__(self, *, output_limit: int | None = DEFAULT_OUTPUT_LIMIT) -> None:
        self.lock = threading.Lock()
        self.nodes: dict[str, Node] = {}
        self.trees: dict[str, Tree] = {}
        self.orphans: dict[str, list[Node]] = {}
        self.output_limit = output_limit
        self.recovered = False
        self.generation = 0  # bumped when every memo becomes stale
        self.rendered = False  # set by the first render: from then on changes bump revisions
        self._renderer = Renderer()
        self.source: str | os.PathLike[str] | None = None  # the event log this projection is folded from
        self.events = 0
        self.damage: list[Damage] = []
        self._names: dict[str, str] = {}

    def __del__(self) -> None:
        # Nodes are not tracked by the cyclic collector: cut their links so they can be freed.
        for n in self.nodes.values():
            n.unlink()
        for tree in self.trees.values():
            tree.top_calls = []
        self.orphans.clear()

    # ---- feeding -------------------------------------------------------------------------
    @classmethod
    def from_log(
        cls,
        path: str | os.PathLike[str],
        *,
        recover: bool = True,
        strict: bool = False,
        output_limit: int | None = DEFAULT_OUTPUT_LIMIT,
    ) -> Projection:
        """Replay a log. With ``recover``, spans the log never saw end read as ``interrupted``."""
        proj = cls(output_limit=output_limit)
        proj.source = path
        # Replay allocates millions of short-lived, cycle-free objects: the cyclic collector
        # would only rescan the growing state over and over, so it pauses until we are done.
        paused = gc.isenabled()
        gc.disable()
        try:
            with proj.lock:
                fold = proj._fold
                for block in read_blocks(path, strict=strict, damage=proj.damage):
                    fold(block)
                    del block  # freed before the next block is decoded
                if recover:
                    proj._set_recovered()
        finally:
            if paused:
                gc.enable()
        return proj

    def apply(self, event: Event) -> None:
        with self.lock:
            self.apply_locked(event)

    def apply_all(self, events: Iterable[Event]) -> None:
        """Apply a batch under one taking of the lock (what ``apply`` does to each, faster)."""
        with self.lock:
            self._fold(events)

    def _fold(self, events: Iterable[Any]) -> None:
        """``apply_locked`` for each of ``events`` (records of other types are skipped)."""
        start, end, collapse = self._start, self._end, self._collapse
        count = 0
        try:
            for ev in events:
                t = type(ev)
                if t is SpanStarted:
                    start(ev)
                elif t is SpanEnded:
                    end(ev)
                elif t is Collapsed:
                    collapse(ev)
                else:
                    continue  # blobs, headers
                count += 1
        finally:
            self.events += count

    def apply_locked(self, event: Any) -> None:
        t = type(event)
        if t is SpanStarted:
            self._start(event)
        elif t is SpanEnded:
            self._end(event)
        elif t is Collapsed:
            self._collapse(event)
        else:
            return
        self.events += 1

    def mark_recovered(self) -> None:
        """Declare the stream finished: spans still open are shown as ``interrupted``."""
        with self.lock:
            self._set_recovered()

    def _set_recovered(self) -> None:
        if not self.recovered:
            self.recovered = True
            self.generation += 1

    # ---- the fold --------------------------------------------------------------------------
    def _node(self, span_id: str, trace_id: str) -> Node:
        n = self.nodes.get(span_id)
        if n is None:
            n = self.nodes[span_id] = Node(span_id, self._intern(trace_id))
        return n

    def _intern(self, text: str) -> str:
        return self._names.setdefault(text, text)

    def _start(self, ev: SpanStarted) -> None:
        sid = ev.span_id
        nodes = self.nodes
        names = self._names
        n = nodes.get(sid)
        if n is None:
            trace_id = ev.trace_id
            n = nodes[sid] = Node(sid, names.setdefault(trace_id, trace_id))
            state = STARTED
        else:
            state = n.state
            if state & STARTED:
                return
            state |= STARTED
            n.trace_id = names.setdefault(ev.trace_id, ev.trace_id)  # its start says which trace it is in
        attrs = ev.attributes
        name = ev.name
        kind = classify(name, attrs)
        fn = function_name(name, kind, attrs)
        if kind == "agentic":
            expose = attrs.get(s.EXPOSE)
            if type(expose) is str and expose in _EXPOSE:
                state |= EXPOSE_NAMES.index(expose) << EXPOSE_SHIFT
            if expose != "hidden":
                state |= HOLDS | VISIBLE
        elif kind != "other":
            state |= VISIBLE
        n.state = state
        n.kind = kind
        n.function = names.setdefault(fn, fn)
        n.start_ns = ev.start_ns
        conv = conversation(attrs)
        if conv is not None:
            conv = names.setdefault(conv, conv)
            extra = n.extra
            if extra is None:
                n.extra = {"conv": conv}
            else:
                extra["conv"] = conv
        if state & ENDED:  # the end came first: finish now that we know what this is
            self._finish(n, n.attrs or _EMPTY, attrs, _take_events(n))
        else:
            n.attrs = attrs

        parent_id = ev.parent_id
        if parent_id == sid:
            parent_id = None
        trace_id = n.trace_id
        orphans = self.orphans
        adopted = orphans.pop(sid, None) if orphans else None
        if adopted:  # a child of another trace names this span, but it is never that child's parent
            adopted = [c for c in adopted if c.trace_id == trace_id] or None
        parent = nodes.get(parent_id) if parent_id else None
        if parent is not None and parent.state & STARTED:
            if parent.trace_id != trace_id:  # another trace's span: this one's parent never arrives
                parent = parent_id = None
            elif adopted is None:
                # The common case, in order: the parent is running and nothing waited for this span.
                n.parent = parent
                if parent.state & HOLDS:  # a running call: it lists this one
                    if state & VISIBLE:
                        self._move(n, parent)
                    return
                _add_plain(parent, n)  # under a span that holds nothing: listed by the nearest holder
                if state & VISIBLE:
                    self._move(n, self._host(n))
                return
        if parent_id:
            if parent is None or not parent.state & STARTED:
                orphans.setdefault(parent_id, []).append(n)
            elif adopted and self._would_cycle(parent, n, adopted):
                log.warning("span %s: parent %s is its own descendant; treated as a root", sid, parent_id)
            else:
                self._link(n, parent)
        if adopted:
            for child in adopted:
                self._link(child, n)
        self._place(n)
        if adopted and n.state & HOLDS:
            for child in adopted:
                self._place(child)

    def _collapse(self, ev: Collapsed) -> None:
        """Ratchet the collapsed prefix of one list forward (never back)."""
        if ev.holder is not None:
            target: Node | Tree | None = self.nodes.get(ev.holder)
            if target is None:  # the holder has not arrived yet: keep the record for it
                target = self._node(ev.holder, ev.trace_id)
        else:
            target = self.trees.get(ev.tree)
            if target is None:
                target = self.trees[ev.tree] = Tree(ev.tree)
        key = (ev.through_start_ns, ev.through_span_id)
        current = collapsed_of(target)
        if current is not None and current[:2] >= key:
            return
        entry = (ev.through_start_ns, ev.through_span_id, ev.summary)
        if type(target) is Node:
            target.collapsed = entry
        else:
            target.collapsed = entry
        if self.rendered:
            self._touch(target)
        for n in calls_of(target) or ():
            if (n.start_ns, n.span_id) <= key:
                n.revision += 1

    @staticmethod
    def _would_cycle(parent: Node, n: Node, adopted: list[Node]) -> bool:
        """Would linking ``n`` under ``parent`` close a loop (hostile or broken input)?"""
        waiting = {id(c) for c in adopted}
        p: Node | None = parent
        while p is not None:
            if p is n or id(p) in waiting:
                return True
            p = p.parent
        return False

    @staticmethod
    def _link(child: Node, parent: Node) -> None:
        child.parent = parent
        if not parent.state & HOLDS:
            _add_plain(parent, child)

    def _end(self, ev: SpanEnded) -> None:
        n = self.nodes.get(ev.span_id)
        if n is None:
            n = self._node(ev.span_id, ev.trace_id)
        elif n.state & ENDED:
            return
        n.state |= ENDED
        if ev.status == "error":
            n.state |= FAILED
            n.error = _one_line(ev.error or "error")
        if not n.state & STARTED:
            n.attrs = ev.attributes  # kept until the start tells us what the span is
            if ev.events:
                _put_extra(n, "end_events", ev.events)  # likewise: a model call may say its output there
            return
        listed_in = n.listed_in
        if type(listed_in) is Node and self._releasable(n, listed_in):
            # Never shown with its io again: none is worked out (so it has none to drop), only
            # the exchanges it shows go (``_release``).
            n.attrs = None
            if n.children:
                self._release(n)
        else:
            self._finish(n, ev.attributes, n.attrs or _EMPTY, ev.events)
        kids = n.children
        if kids:
            # Its finished calls go with it. (Its finished model exchanges and tool calls went
            # as they ended under an ``io`` holder, or with it just above when its holder ended;
            # under ``llm`` / ``full`` they stay shown while it is.)
            for kid in kids:
                if kid.state & ENDED and kid.kind == "agentic":
                    self._release(kid)
        if self.rendered:
            self._touch(n)

    def _finish(self, n: Node, end: dict[str, Any], start: dict[str, Any], events: Sequence[SpanEvent] = ()) -> None:
        """Keep only what the rendering of a finished call needs (end attributes win; ``events``
        are the end's span events, where another instrumentation's model call may give its output)."""
        n.attrs = None
        if not n.state & VISIBLE:
            return
        limit = self.output_limit
        summary = end.get(s.SUMMARY)
        if summary is None:
            summary = start.get(s.SUMMARY)
        if summary is not None:
            n.output = _cut(str(summary), limit)
        else:
            text, mime = output_of(n.kind, end)
            if text is None and start:
                text, mime = output_of(n.kind, start)
            if text is None and n.kind == "llm":  # another instrumentation's model call: its output message
                said = messages_of(start, end, events=events).output
                text = "\n".join(m.text for m in said if m.text) or None
            if text is not None:
                shown = _display(text, mime)
                if mime == s.MIME_JSON and shown[:1] in ("{", "[") and limit is None:
                    n.state |= OUTPUT_JSON
                n.output = _cut(shown, limit)
        if n.kind != "agentic":
            text, mime = input_of(n.kind, end)
            if text is None:
                text, mime = input_of(n.kind, start)
            if text is not None:
                _put_extra(n, "input", _cut(_display(text, mime), limit))

    @staticmethod
    def _releasable(n: Node, holder: Node) -> bool:
        """Will the finished ``n`` never be shown with its io again?

        A call shows its output while its holder runs. A model exchange or tool call shows
        only under a holder exposing ``llm`` / ``full``, until that holder is released.
        """
        if n.kind == "agentic":
            return bool(holder.state & ENDED)
        return holder.expose == "io" or (bool(holder.state & ENDED) and _ended_node(holder.listed_in))

    @staticmethod
    def _release(n: Node) -> None:
        """A finished call whose parent finished: its io leaves memory (the log keeps it).

        A call's own model exchanges and tool calls (shown under ``expose=llm|full``) go with it.
        Under ``expose=io`` they already went, each as it ended or was listed (``_releasable``).
        """
        n.output = None
        if n.extra:
            _drop_input(n)
        if n.state & _EXPOSE_BITS:  # not io
            kids = n.children
            if kids:
                for kid in kids:
                    if kid.kind != "agentic" and kid.state & ENDED:
                        kid.output = None
                        if kid.extra:
                            _drop_input(kid)

    def _host(self, n: Node) -> Node | Tree:
        """The holder whose list shows ``n``: its nearest holding ancestor, else the top of the tree
        keyed by the first conversation id from ``n`` up through its present ancestors, else by
        its trace id (see the module docstring)."""
        p = n.parent
        extra = n.extra
        conv = extra.get("conv") if extra else None
        while p is not None:
            if p.state & HOLDS:
                return p
            if conv is None:
                extra = p.extra
                if extra:
                    conv = extra.get("conv")
            q = p.parent
            if q is None:
                break
            p = q
        key = conv or n.trace_id
        tree = self.trees.get(key)
        if tree is None:
            tree = self.trees[key] = Tree(key)
        return tree

    def _place(self, n: Node) -> None:
        """Put ``n`` (if visible) and the visible calls under it (if it holds none) in place."""
        if n.state & VISIBLE:
            self._move(n, self._host(n))
        if n.state & HOLDS or not n.extra or not n.plain_children:
            return
        stack = list(n.plain_children)
        while stack:
            c = stack.pop()
            if c.state & VISIBLE:
                self._move(c, self._host(c))  # per call: a top's own session id picks its tree
            if not c.state & HOLDS and c.extra:
                subs = c.plain_children
                if subs:
                    stack.extend(subs)

    def _move(self, n: Node, target: Node | Tree) -> None:
        old = n.listed_in
        if old is target:
            return
        if old is not None:
            lst = old.children if type(old) is Node else old.top_calls
            assert lst is not None  # n is listed in it
            lst.remove(n)
            if not lst and type(old) is Tree:
                del self.trees[old.key]  # a provisional top moved under its late parent
            if self.rendered:
                self._touch(old)
        if type(target) is Node:
            lst = target.children
            if lst is None:
                lst = target.children = []
        else:
            lst = target.top_calls
        last = lst[-1] if lst else None
        if last is None or last.start_ns < n.start_ns or (last.start_ns == n.start_ns and last.span_id <= n.span_id):
            lst.append(n)
        else:
            insort(lst, n, key=order_key)
        n.listed_in = target
        if n.state & ENDED and type(target) is Node and self._releasable(n, target):
            self._release(n)
        if self.rendered:
            self._touch(n)

    def _touch(self, n: Node | Tree | None) -> None:
        """Forget the renderings that include ``n``."""
        if not self.rendered:  # nothing memoized yet (a replay, say): nothing to forget
            return
        while n is not None:
            n.revision += 1
            n = n.listed_in

    # ---- reading -----------------------------------------------------------------------------
    def node(self, span_id: str) -> Node | None:
        return self.nodes.get(span_id)

    def call_of(self, span_id: str) -> Node | None:
        """The call a span belongs to: itself if it is a visible agentic call, else its holder."""
        n = self.nodes.get(span_id)
        while n is not None and not (n.holds and n.state & STARTED):
            n = n.parent
        return n

    def chain(self, span_id: str) -> list[CallInfo]:
        """The active chain from the root call down to the call ``span_id`` belongs to."""
        with self.lock:
            return self._chain(self.call_of(span_id))

    @staticmethod
    def _chain(n: Node | Tree | None) -> list[CallInfo]:
        out: list[CallInfo] = []
        while type(n) is Node:
            a = n.attrs or _EMPTY
            text, mime = input_of(n.kind, a)
            rr = a.get(s.RENDER_RANGE)
            out.append(
                CallInfo(
                    span_id=n.span_id,
                    function=n.function,
                    doc=a.get(s.DOC),
                    position=a.get(s.POSITION),
                    output_contract=a.get(s.OUTPUT_CONTRACT),
                    render_range=rr if isinstance(rr, int) and rr >= 0 else None,
                    input=text,
                    input_mime=mime,
                )
            )
            n = n.listed_in
        out.reverse()
        return out

    def tree(self, span_id: str, *, render_range: int | None = None, final: bool = False) -> str:
        """The call tree (YAML) as the call ``span_id`` saw it when it started, folded from the
        event log up to that moment (:meth:`as_seen_by`); ``final=True``: as it stands now
        (:meth:`view`). A projection knows its log when it was replayed from one
        (:meth:`from_log`) or fed by a runtime that writes one; without it, only the final tree
        can be given, and asking for the other raises ``LookupError``."""
        if final:
            return self.view(span_id, render_range=render_range).text
        if self.source is None:
            raise LookupError(
                "the tree as a span saw it is folded from the event log, and this projection has none; "
                "pass final=True for the tree as it stands"
            )
        return Projection.as_seen_by(read_log(self.source), span_id).view(span_id, render_range=render_range).text

    @classmethod
    def as_seen_by(cls, records: Iterable[Any], span_id: str) -> Projection:
        """A projection of ``records`` as they stood when ``span_id`` started; ``KeyError`` when
        no record starts that span.

        A log written in process is in time order, so "when S started" is "right after S's
        start record". A log of received spans is not: a span arrives whole (its start and end
        together, often after its children), so the moment is taken from the clocks. Both
        reduce to one rule: a span counts as started if it started no later than S (by start
        time, then span id); as ended if it ended no later than S started and is not S or one
        of S's ancestors (they run while S runs). Collapses (no clock) count if the log wrote
        them before S's start record."""
        records = list(records)
        starts: dict[str, SpanStarted] = {}
        viewer_at = -1
        for i, r in enumerate(records):
            if type(r) is SpanStarted and r.span_id not in starts:
                starts[r.span_id] = r
                if r.span_id == span_id:
                    viewer_at = i
        viewer = starts.get(span_id)
        if viewer is None:
            raise KeyError(f"unknown span {span_id!r}")
        moment = (viewer.start_ns, viewer.span_id)
        running: set[str] = set()
        sid: str | None = span_id
        while sid is not None and sid in starts and sid not in running:
            running.add(sid)
            sid = starts[sid].parent_id
        proj = cls()
        for i, r in enumerate(records):
            t = type(r)
            if t is SpanStarted:
                if (r.start_ns, r.span_id) <= moment:
                    proj.apply_locked(r)
            elif t is SpanEnded:
                if r.span_id not in running and r.end_ns <= viewer.start_ns and r.span_id in starts:
                    proj.apply_locked(r)
            elif t is Collapsed and i < viewer_at:
                proj.apply_locked(r)
        return proj

    def view(self, span_id: str, *, render_range: int | None = None, view: View = "model") -> TreeView:
        """The call tree (YAML) as the call ``span_id`` sees it; ``# you are here`` marks it.

        ``render_range`` keeps, at each level of the viewer's path, only the last N finished
        calls; by default the one declared on the viewer or its nearest ancestor applies.
        ``view="all"``: every call's model exchanges and tool calls listed too, by name (the
        tree people read; the model sees the default, ``"model"``).
        """
        with self.lock:
            viewer = self.call_of(span_id)
            if viewer is None:
                if span_id not in self.nodes:
                    raise KeyError(f"unknown span {span_id!r}")
                host = self._host(self.nodes[span_id])
                assert type(host) is Tree  # no call holds it: it sees the whole tree
                chunks, cuts, here, parent = self._render(host, None, render_range, view)
                return TreeView("".join(chunks), chunks, cuts, [], here, parent)
            top: Node | Tree | None = viewer
            while type(top) is Node:
                if render_range is None:  # the nearest range declared on the chain applies
                    rr = (top.attrs or {}).get(s.RENDER_RANGE)
                    if isinstance(rr, int) and rr >= 0:
                        render_range = rr
                top = top.listed_in
            assert type(top) is Tree  # every listed call's chain ends at its tree
            chunks, cuts, here, parent = self._render(top, viewer, render_range, view)
            return TreeView("".join(chunks), chunks, cuts, self._chain(viewer), here, parent)

    def plan_collapse(self, span_id: str, target: int, count: Callable[[str], int]) -> list[Collapsed]:
        """What to collapse so the tree ``span_id`` sees fits in ``target`` tokens: the oldest
        finished calls of the lists along its path, the top level first (the oldest history).
        ``count`` measures a text in tokens. Returns the records to append and apply; empty
        when the tree already fits or nothing more can collapse."""
        view = self.view(span_id)
        total = sum(count(c) for c in view.chunks)
        if total <= target:
            return []
        with self.lock:
            viewer = self.call_of(span_id)
            path: list[Node] = []
            n: Node | Tree | None = viewer
            while type(n) is Node:
                path.append(n)
                n = n.listed_in
            if type(n) is not Tree:
                return []
            path.reverse()
            on_path = set(path)
            levels: list[tuple[Node | Tree, list[Node]]] = [(n, n.top_calls)]
            levels += [(p, p.children) for p in path if p.children]
            out: list[Collapsed] = []
            for holder, kids in levels:
                done = collapsed_of(holder)
                i = bisect_right(kids, done[:2], key=order_key) if done else 0
                saved, through = 0, None
                while i < len(kids) and total - saved + _SUMMARY_TOKENS > target:
                    kid = kids[i]
                    if kid in on_path or not kid.state & ENDED:
                        break  # only the oldest finished calls, contiguously
                    text = self._renderer.remembered(kid) if kid.kind == "agentic" else None
                    if text is not None:
                        saved += count(text)
                    through = kid
                    i += 1
                if through is None:
                    continue
                total -= saved
                out.append(
                    Collapsed(
                        through.trace_id,
                        n.key,
                        holder.span_id if type(holder) is Node else None,
                        through.start_ns,
                        through.span_id,
                        _summary(kids, (through.start_ns, through.span_id)),
                    )
                )
                if total <= target:
                    break
            return out

    def session_tree(self, key: str, *, render_range: int | None = None, view: View = "model") -> str:
        """The whole tree of a session (conversation id) or trace, seen from outside any call
        (``view``: as for :meth:`view`)."""
        with self.lock:
            tree = self.trees.get(key)
            if tree is None:
                raise KeyError(f"no session or trace {key!r}")
            return "".join(self._render(tree, None, render_range, view)[0])

    def _render(self, top: Tree, viewer: Node | None, render_range: int | None, view: View = "model") -> Rendered:
        self.rendered = True  # from now on, changes bump the revisions the renderer's memo checks
        return self._renderer.render(
            top, viewer, render_range, recovered=self.recovered, generation=self.generation, view=view
        )

    def sessions(self) -> list[str]:
        with self.lock:
            trees = self.trees
            return sorted(trees, key=lambda k: (trees[k].top_calls[0].start_ns if trees[k].top_calls else 0, k))


_SUMMARY_TOKENS = 24  # about what a collapse line costs


def _summary(kids: list[Node], through: tuple[int, str]) -> str:
    """``N earlier calls: f ×k, g ×m, …`` for the calls of a list up to ``through``."""
    counts: dict[str, int] = {}
    n = 0
    for k in kids:
        if order_key(k) > through:
            break
        if k.kind == "agentic":
            n += 1
            counts[k.function] = counts.get(k.function, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"{name} ×{c}" for name, c in top[:4]) + (", …" if len(top) > 4 else "")
    return f"{n} earlier calls: {listed}" if listed else f"{n} earlier calls"


def _add_plain(parent: Node, child: Node) -> None:
    """Append ``child`` to the ``plain_children`` of ``parent`` (a span that holds nothing)."""
    extra = parent.extra
    if extra is None:
        parent.extra = {"plain_children": [child]}
        return
    subs = extra.get("plain_children")
    if subs is None:
        extra["plain_children"] = [child]
    else:
        subs.append(child)


def _put_extra(n: Node, key: str, value: Any) -> None:
    """Set a rare field (``n.<key> = value``, never None) without the property's detour."""
    extra = n.extra
    if extra is None:
        n.extra = {key: value}
    else:
        extra[key] = value


def _take_events(n: Node) -> Sequence[SpanEvent]:
    """The span events of an end that arrived before its start (kept in ``extra`` until then)."""
    extra = n.extra
    if not extra or "end_events" not in extra:
        return ()
    events: Sequence[SpanEvent] = extra.pop("end_events")
    if not extra:
        n.extra = None
    return events


def _drop_input(n: Node) -> None:
    """``n.input = None`` for a node whose ``extra`` is set."""
    extra = n.extra
    if "input" in extra:  # type: ignore[operator]
        del extra["input"]  # type: ignore[union-attr]
        if not extra:
            n.extra = None


def _ended_node(listed_in: Node | Tree | None) -> bool:
    return type(listed_in) is Node and bool(listed_in.state & ENDED)


def _one_line(text: str, limit: int = ERROR_LIMIT) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "error"
    return _cut(line, limit)


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit].rstrip() + " …"


def _display(text: str, mime: str | None) -> str:
    """A JSON-encoded string shows as its text; other JSON stays compact JSON."""
    if mime == s.MIME_JSON and text[:1] == '"':
        try:
            value = _json.decode(text)
        except msgspec.DecodeError:
            return text
        if isinstance(value, str):
            return value
    return text

"""Rendering the call tree as the YAML a call sees (DESIGN section 5).

A node renders by where it stands relative to the viewer:

* on the active chain (the viewer and the calls holding it): ``function``, ``input``,
  ``status: running``, ``children``; the viewer carries ``# you are here``;
* finished while its parent runs: ``function``, ``output`` (the summary), children as structure;
* finished under a finished parent (released): ``{function: f, status: done}``;
* failed: ``status: error`` and a one-line ``error``.

Finished subtrees never change again until their parent finishes, so their text is memoized
on the node and reused at the same indentation: consecutive renders share their prefix.

That is the tree the model sees (``view="model"``, the default). The trees people read (the
read API's ``?view=all``, the page) take ``view="all"``: the same tree with every call's model
exchanges and tool calls listed by name among its children, whatever its ``expose`` and
whether it is released: ``{tool: search, status: done}`` where the fold kept no io (it keeps
none under ``expose=io``), the exchange with its input and output where it did. Each view has
its own memo, so neither changes the other's bytes.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Literal

import msgspec

from . import schema as s
from .dialects import input_of
from .node import ENDED, FAILED, OUTPUT_JSON, Collapse, Node, Tree, calls_of, order_key
from .yamltext import key_value, scalar, value_lines

CHAIN, RUNNING, INTERRUPTED, FINISHED, RELEASED = range(5)

MAX_DEPTH = 100
HERE = "  # you are here"
_json = msgspec.json.Decoder()

Rendered = tuple[list[str], list[int], int | None, int | None]
"""(chunks, cuts, here, parent): see :meth:`Renderer.render`."""

View = Literal["model", "all"]
"""Which tree: the one the model sees (DESIGN section 5), or every call with its model
exchanges and tool calls listed by name (for people)."""
VIEWS: tuple[View, ...] = ("model", "all")
_ALL_KINDS = ("agentic", "llm", "tool")

Memo = dict[Node, tuple[tuple[int, int, str, int], str]]


class Renderer:
    """Renders call trees and remembers the text of finished subtrees.

    The memo belongs to the renderer, not to the fold: an entry is reused while the node's
    ``revision`` (which the fold bumps on every change under it), the node's mode, its
    indentation and the projection's ``generation`` are what they were. Not thread-safe on
    its own: callers hold the projection's lock while rendering.
    """

    def __init__(self) -> None:
        self._memo: Memo = {}
        self._memo_all: Memo = {}

    def remembered(self, n: Node) -> str | None:
        """The last text rendered for ``n`` in the model's view (None if it was never rendered
        on its own)."""
        entry = self._memo.get(n)
        return entry[1] if entry is not None else None

    def render(
        self,
        top: Tree,
        viewer: Node | None,
        render_range: int | None,
        *,
        recovered: bool,
        generation: int,
        view: View = "model",
    ) -> Rendered:
        """The tree ``top`` as ``viewer`` sees it (``viewer=None``: seen from outside).

        Returns the text as chunks (each ends with a newline; finished subtrees are whole
        chunks, the same string objects from one render to the next), the offsets where each
        item of the lists along the viewer's path begins (its ancestors, their finished
        siblings, the viewer: the boundaries at which the next call's text can still agree with
        this one's), the offset where the viewer's own lines begin, and where its parent's begin
        (None when the viewer is a top call). ``recovered``: spans
        that never ended read as interrupted; ``generation``: bumped when every memo is stale;
        ``view``: which tree (:data:`View`).
        """
        chain: set[Node] = set()
        n: Any = viewer
        while type(n) is Node:
            chain.add(n)
            n = n.listed_in
        every = view == "all"
        r = _Pass(self._memo_all if every else self._memo, chain, viewer, render_range, recovered, generation, every)
        r.top_collapsed = top.collapsed
        out: list[str] = []
        r.items(top.top_calls, "", 0, bool(chain), out)
        starts = [0]
        for chunk in out:
            starts.append(starts[-1] + len(chunk))
        cuts = sorted({starts[i] for i in r.item_starts})
        here = starts[r.here] if r.here is not None else None
        parent = starts[r.parent_at] if r.parent_at is not None else None
        return out, cuts, here, parent


class _Pass:
    """One rendering: the viewer's chain, and where list items and the viewer begin."""

    __slots__ = (
        "chain", "every", "gen", "here", "item_starts", "memo", "parent_at", "recovered", "render_range",
        "top_collapsed", "viewer",
    )  # fmt: skip

    def __init__(
        self,
        memo: Memo,
        chain: set[Node],
        viewer: Node | None,
        render_range: int | None,
        recovered: bool,
        generation: int,
        every: bool = False,
    ):
        self.memo = memo
        self.every = every  # view="all": model exchanges and tool calls listed too
        self.chain = chain
        self.viewer = viewer
        self.render_range = render_range
        self.recovered = recovered
        self.gen = generation
        self.item_starts: list[int] = []  # chunk index where each item of a list on the path begins
        self.here: int | None = None  # chunk index where the viewer begins
        self.parent_at: int | None = None  # chunk index where the viewer's parent begins
        self.top_collapsed: Collapse | None = None

    # -- lists ------------------------------------------------------------------------------
    def items(self, kids: list[Node], indent: str, depth: int, on_chain: bool, out: list[str]) -> None:
        """Render a list of calls (the tops of a tree). A model call made outside any agentic
        call (another instrumentation's top-level LLM span) is a conversation turn there."""
        shown, elided = self.select(kids, "io", False, on_chain, self.top_collapsed, turns=True)
        self.entries(shown, elided, self.top_collapsed, indent, depth, on_chain, out)

    def entries(
        self,
        shown: list[Node],
        elided: bool,
        collapsed: tuple[int, str, str] | None,
        indent: str,
        depth: int,
        on_path: bool,
        out: list[str],
    ) -> None:
        """The items of a list: the collapse line, the elision comment, the calls (and, under
        ``expose=llm|full``, the model exchanges). On the path, each item start is a cut."""
        if collapsed is not None:
            if on_path:
                self.item_starts.append(len(out))
            out.append(f"{indent}- {{collapsed: {scalar(collapsed[2])}}}\n")
        if elided:
            out.append(f"{indent}# earlier calls not shown\n")
        for k in shown:
            if on_path:
                self.item_starts.append(len(out))
            if k.kind == "agentic":
                self.item(k, indent, depth, out)
            elif k.kind == "llm" and k.listed_in is not None and type(k.listed_in) is Tree:
                out.append(self._turn(k, indent))
            elif self.every:
                out.append(self._listed(k, indent))
            else:
                out.append(self._exchange(k, indent))

    def select(
        self,
        kids: list[Node],
        expose: str,
        released: bool,
        on_chain: bool,
        collapsed: tuple[int, str, str] | None,
        *,
        turns: bool = False,
    ) -> tuple[list[Node], bool]:
        """The children shown, and whether older ones were left out by ``render_range``.

        ``expose=llm`` adds the call's own model exchanges, ``full`` its tool calls too, while
        the call is not released; ``view="all"`` adds both always. Calls up to a collapse are
        left out (their summary line stands for them). On the viewer's path, ``render_range``
        keeps the last finished calls (and the path itself, however old).
        """
        first = 0
        if collapsed is not None:
            first = bisect_right(kids, collapsed[:2], key=order_key)
        every = self.every
        if expose != "io" and not released:
            return [k for k in kids[first:] if every or k.kind != "tool" or expose == "full"], False
        rr = self.render_range
        start = self._window(kids, rr, first) if on_chain and rr is not None else first
        shown: list[Node] = []
        if start:
            bound = order_key(kids[start]) if start < len(kids) else (1 << 63, "")
            for n in self.chain:  # a call on the path is always shown, however old
                listed_in = n.listed_in
                if listed_in is not None and calls_of(listed_in) is kids and order_key(n) < bound:
                    shown.append(n)
        wanted = _ALL_KINDS if every else ("agentic", "llm") if turns else ("agentic",)
        shown.extend(kids[i] for i in range(start, len(kids)) if kids[i].kind in wanted)
        return shown, start > first

    def _window(self, kids: list[Node], keep: int, lo: int = 0) -> int:
        """Index of the first call shown: the last ``keep`` finished calls (at or after ``lo``)
        and what follows them. Walks back from the end only as far as it shows."""
        seen = 0
        i = len(kids)
        while i > lo:
            n = kids[i - 1]
            if n.kind == "agentic" and n.state & ENDED:
                if seen == keep:
                    return i
                seen += 1
            i -= 1
        return lo

    # -- one node ---------------------------------------------------------------------------
    def mode(self, n: Node) -> int:
        if not n.state & ENDED:
            if n in self.chain:
                return CHAIN
            return INTERRUPTED if self.recovered else RUNNING
        listed_in = n.listed_in
        if type(listed_in) is Node and listed_in.state & ENDED:
            return RELEASED
        return FINISHED

    def item(self, n: Node, indent: str, depth: int, out: list[str]) -> None:
        mode = self.mode(n)
        if n in self.chain:
            if n is self.viewer:
                self.here = len(out)
            elif self.viewer is not None and n is self.viewer.listed_in:
                self.parent_at = len(out)
            self.build(n, indent, depth, mode, out)
            return
        key = (n.revision, mode, indent, self.gen)
        memo = self.memo.get(n)
        if memo is not None and memo[0] == key:
            out.append(memo[1])
            return
        buf: list[str] = []
        self.build(n, indent, depth, mode, buf)
        text = "".join(buf)
        self.memo[n] = (key, text)
        if mode == RELEASED and n.children:
            for k in n.children:  # this text now contains theirs for good
                self.memo.pop(k, None)
        out.append(text)

    def build(self, n: Node, indent: str, depth: int, mode: int, out: list[str]) -> None:
        here = n is self.viewer
        inner = indent + "  "
        name = scalar(n.function)
        kids: list[Node] = []
        elided = False
        collapsed = n.collapsed if n.extra else None
        if n.children and depth < MAX_DEPTH:
            kids, elided = self.select(n.children, n.expose, mode == RELEASED, n in self.chain, collapsed)
        failed = n.state & FAILED
        if mode == RELEASED and not kids and collapsed is None and not here:
            if failed:
                out.append(f"{indent}- {{function: {name}, status: error, error: {scalar(n.error or 'error')}}}\n")
            else:
                out.append(f"{indent}- {{function: {name}, status: done}}\n")
            return

        out.append(f"{indent}- function: {name}{HERE if here and mode != CHAIN else ''}\n")
        if mode == CHAIN:
            self._input(n, inner, out)
            status = "interrupted" if self.recovered else "running"
            out.append(f"{inner}status: {status}{HERE if here else ''}\n")
        elif mode == RUNNING:
            out.append(f"{inner}status: running\n")
        elif mode == INTERRUPTED:
            out.append(f"{inner}status: interrupted\n")
        elif failed:
            out.append(f"{inner}status: error\n")
            out.append(key_value("error", n.error or "error", inner))
        elif mode == FINISHED:
            if n.output is not None:
                self._output(n, inner, out)
        else:
            out.append(f"{inner}status: done\n")
        if kids or collapsed is not None:
            out.append(f"{inner}children:\n")
            self.entries(kids, elided, collapsed, inner + "  ", depth + 1, n in self.chain, out)
        elif elided:
            out.append(f"{inner}children: []  # earlier calls not shown\n")
        elif n.children and depth >= MAX_DEPTH and any(k.kind == "agentic" for k in n.children):
            out.append(f"{inner}# deeper calls not shown\n")

    def _turn(self, k: Node, indent: str) -> str:
        """A top-level model call as a conversation turn, like callctx's own ``exec`` outside
        any agentic call: running, failed, or finished with its output."""
        inner = indent + "  "
        out = [f"{indent}- function: turn\n"]
        if not k.state & ENDED:
            out.append(f"{inner}status: {'interrupted' if self.recovered else 'running'}\n")
        elif k.state & FAILED:
            out.append(f"{inner}status: error\n")
            out.append(key_value("error", k.error or "error", inner))
        elif k.output is not None:
            out.append(key_value("output", k.output, inner))
        return "".join(out)

    def _exchange(self, k: Node, indent: str) -> str:
        inner = indent + "  "
        label = "model" if k.kind == "llm" else "tool"
        out = [f"{indent}- {label}: {scalar(k.function)}\n"]
        if not k.state & ENDED:
            a = k.attrs or {}
            text, _ = input_of(k.kind, a)
            if text is not None:
                out.append(key_value("input", text, inner))
            out.append(f"{inner}status: running\n")
        else:
            if k.input is not None:
                out.append(key_value("input", k.input, inner))
            if k.state & FAILED:
                out.append(f"{inner}status: error\n")
                out.append(key_value("error", k.error or "error", inner))
            elif k.output is not None:
                out.append(key_value("output", k.output, inner))
        return "".join(out)

    def _listed(self, k: Node, indent: str) -> str:
        """A model exchange or tool call in ``view="all"``: as the model's view shows it where
        the fold kept its io (and it is not running), else its name and status on one line."""
        if k.state & ENDED and (k.input is not None or k.output is not None):
            return self._exchange(k, indent)
        label = "model" if k.kind == "llm" else "tool"
        name = scalar(k.function)
        if not k.state & ENDED:
            return f"{indent}- {{{label}: {name}, status: {'interrupted' if self.recovered else 'running'}}}\n"
        if k.state & FAILED:
            return f"{indent}- {{{label}: {name}, status: error, error: {scalar(k.error or 'error')}}}\n"
        return f"{indent}- {{{label}: {name}, status: done}}\n"

    def _output(self, n: Node, indent: str, out: list[str]) -> None:
        """A finished call's output: a structured one (JSON) as YAML, like an input; text as text."""
        text = n.output or ""
        if n.state & OUTPUT_JSON:
            try:
                value_lines("output", _json.decode(text), indent, out)
                return
            except msgspec.DecodeError:
                pass
        out.append(key_value("output", text, indent))

    def _input(self, n: Node, indent: str, out: list[str]) -> None:
        a = n.attrs
        if not a:
            return
        text, mime = input_of(n.kind, a)
        if text is None:
            return
        value: Any = text
        if mime == s.MIME_JSON:
            try:
                value = _json.decode(text)
            except (msgspec.DecodeError, TypeError):
                value = text
            value = _unwrap_call(value)
            if value == {}:
                return
        value_lines("input", value, indent, out)


def _unwrap_call(value: Any) -> Any:
    """``{"args": [...], "kwargs": {...}}`` (Langfuse, OpenLLMetry) as the arguments themselves."""
    if isinstance(value, dict) and set(value) == {"args", "kwargs"} and isinstance(value["kwargs"], dict):
        args = value["args"]
        if not args:
            return value["kwargs"]
        return {"args": args, **value["kwargs"]} if isinstance(args, list) else value
    return value

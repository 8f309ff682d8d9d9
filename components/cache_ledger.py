"""Why a prompt cache missed: for every model call, ours or another instrumentation's, what the
provider reported, what its rules made possible, and the reason it read less.

The ledger takes a log's model calls in call order (:meth:`Ledger.add`), each with its request
as the cache sees it (content blocks in wire order: tools, system, messages; rebuilt for our
calls, reconstructed from the span for others) and its parts as a person compares them. Per
call it steps the provider's cache model (:class:`~callctx.components.cache.Simulator`, one per
provider and model, with the rules table) to find what was **possible**, reads what the span
**reported** (cache read and write from its usage), picks the earlier call it is **compared
with** (the one sharing the longest prefix, else the previous call of the same function),
finds their **first difference** (tools, system or messages; which one; the character it
starts at; a short excerpt each side), and gives one :data:`Reason`:

* ``hit``: it read what was possible;
* ``first``: no earlier call shares a prefix with it;
* ``prefix_changed``: an earlier call within the TTL had a prefix cached that this call broke;
* ``tools_changed``: the tool definitions differ (which tool: added, removed or changed);
* ``model_changed``: the earlier call used another model (a cache is per model);
* ``ttl_expired``: the call that shared the prefix is older than the TTL;
* ``below_minimum``: the cacheable prefix is under the model's minimum;
* ``no_breakpoint``: a cache that writes only at breakpoints was asked for none;
* ``evicted``: the provider read less than an unchanged prefix within the TTL allowed;
* ``unknown``: the span carries no content to compare.

With it: the gap to the compared call, and the tokens (and dollars) lost: what the compared
call had cached that this one would have read had nothing changed, or what was possible and
not read. The ledger only steps forward; threading: not thread-safe (its owner serialises).
"""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, AnyStr, Literal

import msgspec

from . import cache
from .wire.parts import Parts

Reason = Literal[
    "hit", "first", "prefix_changed", "tools_changed", "model_changed", "ttl_expired", "below_minimum",
    "no_breakpoint", "evicted", "unknown",
]  # fmt: skip
REASONS: tuple[Reason, ...] = (
    "hit", "first", "prefix_changed", "tools_changed", "model_changed", "ttl_expired", "below_minimum",
    "no_breakpoint", "evicted", "unknown",
)  # fmt: skip
Part = Literal["tools", "system", "messages"]

STEP = 64  # tokens between the marks that find the earlier call sharing the longest prefix
EXCERPT = 40  # characters shown each side of a first difference
PARTS_KEPT = 1024  # calls whose parts stay in memory for the comparisons that follow
MARKS_KEPT = 400_000  # prefix marks kept (the latest sent); an older prefix is compared by function instead
BROKEN_SLACK = 128  # tokens a read may fall short of the compared call's cached prefix (a provider's granularity)
HIT_SLACK = 0.1  # a provider may count a few tokens differently: within this share (and 128 tokens) is a hit


NO_CONTENT = (
    "its span carries no content to compare: turn content capture on "
    "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true for the GenAI instrumentations; "
    "OpenInference records it unless OPENINFERENCE_HIDE_INPUTS is set; TRACELOOP_TRACE_CONTENT=true "
    "for OpenLLMetry)"
)


class Difference(msgspec.Struct, frozen=True):
    """Where a request first differs from the one it is compared with: the part, which item of
    it (a tool, a system text, a message), the character it starts at, and the text each side."""

    part: Part
    index: int
    offset: int
    before: str
    after: str


class ToolChange(msgspec.Struct, frozen=True, omit_defaults=True):
    added: list[str] = []
    removed: list[str] = []
    changed: list[str] = []


class Reported(msgspec.Struct, frozen=True):
    """What the span said the provider did (None: not reported)."""

    cache_read: int | None
    cache_write: int | None
    input: int | None


class Possible(msgspec.Struct, frozen=True):
    """What the provider's rules, simulated over the requests so far, allowed this one."""

    cache_read: int
    cache_write: int
    tokens: int
    limit: int  # what any cache could have served: the longest prefix an earlier request sent


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One call's line of the ledger."""

    call: int
    span_id: str
    reason: Reason
    sentence: str
    reported: Reported | None
    possible: Possible
    compared_with: int | None
    first_difference: Difference | None
    tools: ToolChange | None
    gap_seconds: float | None
    lost_tokens: int
    lost_usd: float | None
    rules: str  # the rules row it was simulated with (anthropic, openai, gemini...)
    model: str | None
    function: str | None
    service: str | None
    cost: float  # USD, the simulated cost of the request's input
    cost_uncached: float
    warnings: list[str] = []  # what the simulation said of the rules it used (a model not in the table)


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """One call, as the ledger takes it. ``request`` None: the span carries nothing to simulate
    (no content captured)."""

    call: int
    span_id: str
    start_ns: int
    model: str | None
    function: str | None
    service: str | None
    tree: str | None
    rules: str
    usage_read: int | None
    usage_write: int | None
    usage_input: int | None
    request: cache.Request | None
    parts: Parts | None
    marked: bool  # the request marks its breakpoints (ours do; a foreign one only when its usage shows caching)
    unknown_because: str | None = None  # why there is no request, when it is not that no content was captured


class _Seen(msgspec.Struct):
    """What the ledger keeps of an earlier call."""

    call: int
    start_ns: int
    model: str | None
    rules: str
    cacheable: int
    marked: bool


class Ledger:
    """The ledger of one log or store, built call by call (see the module docstring).
    ``ttl``: seconds a cache entry lives, in place of the rules' (a test's, a what-if)."""

    def __init__(self, rules: Mapping[str, Any] | None = None, *, ttl: float | None = None) -> None:
        table = dict(rules if rules is not None else cache.shipped())
        if ttl is not None:
            table = {name: {**row, "ttl_seconds": ttl} for name, row in table.items()}
        self.rules = table
        self.ttl_override = ttl
        self._sims: dict[tuple[str, str], cache.Simulator] = {}
        self._t0: int | None = None
        self._marks: dict[int, int] = {}  # prefix hash every STEP tokens -> the latest call that sent it
        self._seen: dict[int, _Seen] = {}
        self._parts: OrderedDict[int, Parts] = OrderedDict()
        self._last_of: dict[tuple[str | None, str | None], int] = {}  # (service, function) -> its latest call
        self.entries: list[Entry] = []

    def simulator(self, rules: str, model: str | None) -> cache.Simulator:
        key = (rules, model or "")
        sim = self._sims.get(key)
        if sim is None:
            sim = self._sims[key] = cache.Simulator(rules, model or "", self.rules)
        return sim

    def parts_of(self, call: int) -> Parts | None:
        return self._parts.get(call)

    def copy(self) -> Ledger:
        """An independent copy, to resume from later (a checkpoint): what adding calls changes is
        copied (the simulators' state, the maps of earlier calls), what is never changed once made
        is shared (the entries and parts, frozen; what is kept of each call; the rules table), so
        a copy costs little more than the simulators' state."""
        twin = copy.copy(self)
        twin._sims = copy.deepcopy(self._sims)
        twin._marks = dict(self._marks)
        twin._seen = dict(self._seen)
        twin._parts = OrderedDict(self._parts)
        twin._last_of = dict(self._last_of)
        twin.entries = list(self.entries)
        return twin

    def add(self, item: Item, earlier_parts: Mapping[int, Parts] | None = None) -> Entry:
        """The entry of the next call (calls come in call order). ``earlier_parts``: parts of
        earlier calls no longer in memory, when the caller can read them back."""
        if self._t0 is None:
            self._t0 = item.start_ns
        sim = self.simulator(item.rules, item.model)
        reported = (
            Reported(item.usage_read, item.usage_write, item.usage_input)
            if item.usage_read is not None or item.usage_write is not None or item.usage_input is not None
            else None
        )
        if item.request is None or item.parts is None or item.parts.empty:
            entry = self._unknown(item, reported)
            self._remember(item, 0, [])
            self.entries.append(entry)
            return entry
        req = dataclasses.replace(item.request, time_s=(item.start_ns - self._t0) / 1e9, label=item.function or "turn")
        result = sim.step_one(req)
        possible = Possible(result.read, result.write, result.total, result.limit)
        marks = _marks(req, f"{item.rules}/{item.model or ''}")
        shared_marks, by_prefix = self._longest(marks, item.start_ns - int(sim.ttl * 1e9))
        compared = by_prefix
        if compared is None:
            compared = self._last_of.get((item.service, item.function))
        shared = shared_marks * STEP if compared == by_prefix else 0
        seen = self._seen.get(compared) if compared is not None else None
        parts_before = self._parts.get(compared) if compared is not None else None
        if parts_before is None and compared is not None and earlier_parts:
            parts_before = earlier_parts.get(compared)
        diff = first_difference(parts_before, item.parts) if parts_before is not None else None
        tools = tool_change(parts_before, item.parts) if diff is not None and diff.part == "tools" else None
        gap = (item.start_ns - seen.start_ns) / 1e9 if seen is not None else None
        cacheable = _cacheable(req, sim)
        potential = req.pre_turn or req.total  # what a breakpoint before the turn would have made cacheable
        reason = self._reason(item, sim, possible, reported, seen, shared, diff, gap, cacheable, potential)
        lost = self._lost(reason, possible, reported, seen, cacheable, min(shared, potential))
        entry = Entry(
            call=item.call, span_id=item.span_id, reason=reason,
            sentence=sentence(reason, item, sim, possible, reported, seen, diff, tools, gap, cacheable, lost),
            reported=reported, possible=possible, compared_with=seen.call if seen is not None else None,
            first_difference=diff, tools=tools, gap_seconds=round(gap, 3) if gap is not None else None,
            lost_tokens=lost, lost_usd=round(lost * sim.price * (1 - sim.read_mult), 6) if sim.price else None,
            rules=item.rules, model=item.model, function=item.function, service=item.service, cost=result.cost,
            cost_uncached=result.cost_uncached, warnings=list(sim.warnings),
        )  # fmt: skip
        self._remember(item, cacheable, marks)
        self.entries.append(entry)
        return entry

    # ---- the comparisons --------------------------------------------------------------------
    def _longest(self, marks: list[int], alive_since: int) -> tuple[int, int | None]:
        """(marks shared, the call compared with): the latest call that sent the longest prefix
        this request shares, or, when that call is older than the cache lives, the latest one
        still alive that shares a shorter prefix (the one whose entry this request can read)."""
        lo, hi = 0, len(marks)  # marks[:lo] are all known (a shared prefix's own prefixes are shared)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if marks[mid - 1] in self._marks:
                lo = mid
            else:
                hi = mid - 1
        if not lo:
            return 0, None
        best = self._marks[marks[lo - 1]]
        for k in range(lo, 0, -1):
            call = self._marks[marks[k - 1]]
            if self._seen[call].start_ns >= alive_since:
                return k, call
        return lo, best

    def _remember(self, item: Item, cacheable: int, marks: list[int]) -> None:
        known = self._marks
        for h in marks:
            known.pop(h, None)  # moved to the end: the latest call that sent it
            known[h] = item.call
        while len(known) > MARKS_KEPT:
            del known[next(iter(known))]
        self._seen[item.call] = _Seen(item.call, item.start_ns, item.model, item.rules, cacheable, item.marked)
        if item.parts is not None:
            self._parts[item.call] = item.parts
            if len(self._parts) > PARTS_KEPT:
                self._parts.popitem(last=False)
        self._last_of[(item.service, item.function)] = item.call

    def _reason(
        self, item: Item, sim: cache.Simulator, possible: Possible, reported: Reported | None, seen: _Seen | None,
        shared: int, diff: Difference | None, gap: float | None, cacheable: int, potential: int,
    ) -> Reason:  # fmt: skip
        read = reported.cache_read if reported is not None else None
        got = read if read is not None else possible.cache_read
        short = possible.cache_read - max(128, HIT_SLACK * possible.cache_read)
        if possible.cache_read > 0 and read is not None and read < short:
            return "evicted"  # what its request shares with those before it was cached; the provider read less
        if seen is not None and diff is not None and seen.model == item.model and (gap is None or gap <= sim.ttl):
            had = min(seen.cacheable, cacheable)  # what the compared call had cached, up to what this one could keep
            if had >= sim.min_tokens and had - got > BROKEN_SLACK:  # it read part of it, or none: it broke it
                return "tools_changed" if diff.part == "tools" else "prefix_changed"
        if possible.cache_read > 0:
            return "hit"
        if read and read > 0:
            return "hit"  # the provider found more than the rules explain (another route, a longer TTL): it read
        if seen is None:
            return "first"
        if diff is None and shared == 0 and not _same_start(self._parts.get(seen.call), item.parts):
            return "first"
        if seen.model != item.model and (diff is None or diff.part != "tools"):
            return "model_changed"
        if gap is not None and gap > sim.ttl and (diff is None or _late(diff, seen, shared, sim)):
            return "ttl_expired"
        if diff is not None and diff.part == "tools":
            return "tools_changed"
        unmarked = sim.mode == "breakpoints" and not (item.marked and seen.marked)
        if unmarked and potential >= sim.min_tokens:
            return "no_breakpoint"
        if cacheable < sim.min_tokens:
            return "below_minimum"
        if diff is not None:
            return "prefix_changed"
        if gap is not None and gap > sim.ttl:
            return "ttl_expired"
        return "below_minimum" if seen.cacheable < sim.min_tokens else "prefix_changed"

    @staticmethod
    def _lost(
        reason: Reason, possible: Possible, reported: Reported | None, seen: _Seen | None, cacheable: int,
        shared: int,
    ) -> int:  # fmt: skip
        """Tokens sent again that would have been read: what the compared call had cached up to
        this one's own cacheable prefix, or what was possible (eviction)."""
        read = (reported.cache_read or 0) if reported is not None else possible.cache_read
        if reason in ("hit", "first", "below_minimum", "unknown"):
            return 0
        if reason == "no_breakpoint":
            return max(0, shared - read)  # what a breakpoint before the turn would have let it read
        if reason == "evicted":
            return max(0, possible.cache_read - read)
        if seen is None:
            return 0
        return max(0, min(seen.cacheable, cacheable) - read)

    def _unknown(self, item: Item, reported: Reported | None) -> Entry:
        return Entry(
            call=item.call, span_id=item.span_id, reason="unknown",
            sentence=item.unknown_because or NO_CONTENT,
            reported=reported, possible=Possible(0, 0, 0, 0), compared_with=None, first_difference=None,
            tools=None, gap_seconds=None, lost_tokens=0, lost_usd=None, rules=item.rules, model=item.model,
            function=item.function, service=item.service, cost=0.0, cost_uncached=0.0,
        )  # fmt: skip


def _late(diff: Difference, seen: _Seen, shared: int, sim: cache.Simulator) -> bool:
    """Does the first difference come after what the earlier call had cached (so the time, not
    the change, is why nothing was read)?"""
    return shared >= min(seen.cacheable, sim.min_tokens)


def _same_start(before: Parts | None, after: Parts | None) -> bool:
    return before is not None and after is not None and first_difference(before, after) is None


def _marks(req: cache.Request, cache_of: str) -> list[int]:
    """The hash of the request's token prefix every ``STEP`` tokens, in the cache ``cache_of``
    names (a cache is per provider and model: the same prefix sent to another is another)."""
    ids = [t for b in req.blocks for t in b.tokens]
    out: list[int] = []
    h = cache._chain_memo(0, tuple(cache_of.encode()))
    for at in range(STEP, len(ids) + 1, STEP):
        h = cache._chain_memo(h, tuple(ids[at - STEP : at]))
        out.append(h)
    return out


def _cacheable(req: cache.Request, sim: cache.Simulator) -> int:
    """Tokens of the request a cache could keep: up to its last breakpoint where the provider
    caches at breakpoints, else its part before the turn (all of it, when it marks no turn)."""
    if sim.mode == "breakpoints":
        n = end = 0
        for b in req.blocks:
            n += len(b.tokens)
            if b.breakpoint:
                end = n
        return end
    return req.pre_turn or req.total


# ---- comparing two requests ----------------------------------------------------------------------
def first_difference(before: Parts | None, after: Parts) -> Difference | None:
    """Where ``after`` first differs from ``before``, part by part in wire order (None: the same,
    or ``after`` only adds to the end of what ``before`` sent)."""
    if before is None:
        return None
    part: Part
    for part in ("tools", "system", "messages"):
        a: list[str] = getattr(before, part)
        b: list[str] = getattr(after, part)
        for i in range(max(len(a), len(b))):
            old = a[i] if i < len(a) else None
            new = b[i] if i < len(b) else None
            if old == new:
                continue
            if new is None and part == "messages":
                return None  # the same conversation, cut shorter: nothing this call sent differs
            if old is None and part == "messages":
                return None  # a message added at the end: the prefix before it is unchanged
            at = common_prefix(old or "", new or "")
            return Difference(part, i, at, _excerpt(old or "", at), _excerpt(new or "", at))
    return None


def tool_change(before: Parts | None, after: Parts) -> ToolChange:
    """Which tools were added, removed or changed (by name) since ``before``."""
    old = dict(zip(before.tool_names, before.tools, strict=False)) if before is not None else {}
    new = dict(zip(after.tool_names, after.tools, strict=False))
    return ToolChange(
        added=[n for n in new if n not in old],
        removed=[n for n in old if n not in new],
        changed=[n for n in new if n in old and new[n] != old[n]],
    )


def common_prefix(a: AnyStr, b: AnyStr) -> int:
    """The length of the common prefix of ``a`` and ``b`` (a binary search on slices: the
    comparisons run in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _excerpt(text: str, at: int) -> str:
    return text[max(0, at - EXCERPT) : at + EXCERPT]


# ---- what a request is ---------------------------------------------------------------------------
def request_of_parts(parts: Parts, tokenize: cache.Tokenizer, *, marked: bool) -> cache.Request:
    """A request reconstructed from a span, as the cache sees it: the tools as one block, each
    system text and each message a block, the last message the turn; with ``marked``, a
    breakpoint closes the block before the turn (where an automatic cache would write)."""
    blocks: list[cache.Block] = []
    if parts.tools:
        blocks.append(cache.Block(tuple(tokenize("".join(parts.tools)))))
    blocks += [cache.Block(tuple(tokenize(t))) for t in parts.system]
    for i, m in enumerate(parts.messages):
        last = i == len(parts.messages) - 1
        blocks.append(cache.Block(tuple(tokenize(m)), turn=last))
    if marked:
        for i in range(len(blocks) - 1, -1, -1):
            if not blocks[i].turn:
                blocks[i] = cache.Block(blocks[i].tokens, True, False)
                break
    return cache.Request(tuple(blocks))


# ---- in words ------------------------------------------------------------------------------------
def sentence(
    reason: Reason, item: Item, sim: cache.Simulator, possible: Possible, reported: Reported | None,
    seen: _Seen | None, diff: Difference | None, tools: ToolChange | None, gap: float | None, cacheable: int,
    lost: int,
) -> str:  # fmt: skip
    """The reason in one sentence."""
    read = reported.cache_read if reported is not None else None
    other = f"call {seen.call}" if seen is not None else "the earlier call"
    when = f", {gap:.0f} s earlier" if gap is not None else ""
    where = _where(diff) if diff is not None else ""
    if reason == "hit":
        if read is not None and read > possible.cache_read and possible.cache_read == 0:
            sent = f" (of {reported.input:,} it counted as input)" if reported and reported.input else ""
            return (
                f"the provider reported reading {read:,} tokens from its cache, more than its rules allow over the "
                f"{possible.tokens:,} tokens the span shows{sent}: the span does not carry all that was sent, or a "
                "request outside this log wrote the prefix"
            )
        got = f"{read:,}" if read is not None else f"{possible.cache_read:,} (simulated)"
        return f"read {got} of {possible.tokens:,} tokens from the cache: what {other}'s prefix allowed"
    if reason == "first":
        return "no earlier call shares a prefix with it: its prefix is written for the calls after it"
    if reason == "prefix_changed":
        return f"{where} changed since {other}{when}: {lost:,} tokens {other} had cached were sent again"
    if reason == "tools_changed":
        change = tools or ToolChange()
        said = (
            "; ".join(
                f"{kind} {', '.join(names)}"
                for kind, names in (("added", change.added), ("removed", change.removed), ("changed", change.changed))
                if names
            )
            or "the tool definitions differ"
        )
        return f"the tools changed since {other} ({said}): everything after them was sent again"
    if reason == "model_changed":
        return f"{other} used {seen.model if seen else '?'} and this one {item.model}: a cache is per model"
    if reason == "ttl_expired":
        return f"{other} shared the prefix, but{when.lstrip(',')}, past the cache's {sim.ttl:.0f} s lifetime"
    if reason == "below_minimum":
        return f"its cacheable prefix is {cacheable:,} tokens, under {item.rules}'s minimum of {sim.min_tokens:,}"
    if reason == "no_breakpoint":
        return "no cache breakpoint was asked for (cache_control): nothing was written for it to read"
    if reason == "evicted":
        hint = "; a stable prompt_cache_key keeps a session's calls on one cache" if item.rules[:6] == "openai" else ""
        return (
            f"the provider read {read or 0:,} tokens where {possible.cache_read:,} were possible, the prefix unchanged"
            f" since {other}{when}: evicted, or routed to another cache{hint}"
        )
    return "its span carries no content to compare"


def _where(diff: Difference) -> str:
    what = {"tools": "tool", "system": "system text", "messages": "message"}[diff.part]
    return f"the {what} {diff.index} (at character {diff.offset})"


__all__ = [
    "REASONS",
    "Difference",
    "Entry",
    "Item",
    "Ledger",
    "Part",
    "Parts",
    "Possible",
    "Reason",
    "Reported",
    "ToolChange",
    "common_prefix",
    "first_difference",
    "request_of_parts",
    "tool_change",
]

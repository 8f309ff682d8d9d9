"""A prompt-cache simulator over recorded requests: what each provider's cache would have
served, what it would have cost, and how close that comes to the limit.

Each request is a sequence of content blocks in wire order (tools, system, the call tree's
blocks, the turn, the tool loop), each with its token ids, whether a cache breakpoint closes
it (where the wire that sends it puts them: ``wire.blocks.plan``) and whether it ends a
message. Two cache models cover the providers (their parameters are in ``cache_rules.yaml``):

* ``breakpoints``: an entry is written for the prefix ending at each breakpoint (at most
  four per request, the latest; prefixes shorter than the model's minimum are not cached).
  Where a request finds one depends on the row's ``lookup``: ``lookback`` (Anthropic), at any
  block boundary up to ``lookback_blocks`` before one of its breakpoints; ``breakpoints``
  (OpenAI, GPT-5.6 and later), only at its own breakpoints (the latest
  ``lookup_breakpoints``), at the end of its latest ``lookup_messages`` + 1 eligible messages
  and at the end of its first one. The longest live entry wins. Tokens from the hit to the
  last breakpoint are written (billed at ``write_multiplier``), hits are billed at
  ``read_multiplier``.
* ``prefix`` (OpenAI before GPT-5.6, Gemini): every request's prefixes, at ``min_tokens`` and
  every ``step_tokens`` after, are cached; a request reads the longest one an earlier request
  made. With ``routing_prefix_tokens`` (OpenAI) the cache is per machine: a request goes to
  the machine its first tokens and its ``prompt_cache_key`` pick, and past
  ``routing_rate_per_minute`` requests a minute for one of those, on to further machines.

A row with ``breakpoint_row`` hands the models its ``breakpoint_from`` rule names to that row
(``openai`` -> ``openai-explicit`` from GPT-5.6 on). Entries expire ``ttl_seconds`` after their
last use. The **limit** of a request is what any cache could have served: the longest prefix
of its part before the turn that some earlier request already sent (no minimum, no expiry,
token granularity).
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from array import array
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from . import tokens
from .cache_rules import breakpoint_model, by_model, known_model, load_rules, shipped
from .context import Context
from .wire.blocks import Marking, plan, session_key, turn_text
from .wire.exchange import AssistantTurn, Exchange, ToolResults, UserNote

log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()  # (row, model) pairs whose missing rules the log has named
_warned_lock = threading.Lock()

_MOD = (1 << 61) - 1
_BASE = 1_000_003

__all__ = [
    "Block",
    "CallResult",
    "Key",
    "Report",
    "Request",
    "Simulator",
    "Tokenizer",
    "by_model",
    "exchange_text",
    "explain",
    "known_model",
    "load_rules",
    "request_of",
    "shipped",
    "simulate",
]


@dataclass(frozen=True)
class Block:
    tokens: tuple[int, ...]
    breakpoint: bool = False
    turn: bool = False  # part of the turn (or after it): never counted toward the limit
    message_end: bool = False  # ends a message OpenAI looks entries up at (system, user or tool message)


@dataclass(frozen=True)
class Request:
    """One recorded model call as the simulator sees it; ``route``: the key it is routed by
    (OpenAI's ``prompt_cache_key``), "" for none."""

    blocks: tuple[Block, ...]
    time_s: float = 0.0
    label: str = ""
    route: str = ""

    @property
    def total(self) -> int:
        return sum(len(b.tokens) for b in self.blocks)

    @property
    def pre_turn(self) -> int:
        n = 0
        for b in self.blocks:
            if b.turn:
                break
            n += len(b.tokens)
        return n


@dataclass
class CallResult:
    label: str
    total: int
    read: int
    write: int
    uncached: int
    limit: int
    cost: float  # USD
    cost_uncached: float  # USD, the same request with no caching


@dataclass
class Report:
    provider: str
    model: str
    calls: list[CallResult] = field(default_factory=list)

    def _sum(self, attr: str) -> float:
        return sum(getattr(c, attr) for c in self.calls)

    @property
    def total(self) -> int:
        return int(self._sum("total"))

    @property
    def read(self) -> int:
        return int(self._sum("read"))

    @property
    def limit(self) -> int:
        return int(self._sum("limit"))

    @property
    def cost(self) -> float:
        return self._sum("cost")

    @property
    def cost_uncached(self) -> float:
        return self._sum("cost_uncached")

    @property
    def hit_share(self) -> float:
        return self.read / self.total if self.total else 0.0

    @property
    def limit_share(self) -> float:
        """Share of the limit reached: per call, the cached tokens up to its limit, over the
        limits. (A prefix cache may read past the turn's start when an earlier request began
        its turn the same way; that part is not counted against the limit.)"""
        within = sum(min(c.read, c.limit) for c in self.calls)
        return within / self.limit if self.limit else 1.0


# ---- requests from recorded contexts ---------------------------------------------------------
def exchange_text(e: Exchange) -> str:
    """The text of one exchange of the tool loop, as the simulator and the calls listing count it."""
    if isinstance(e, AssistantTurn):
        calls = [{"name": c.name, "arguments": c.arguments} for c in e.tool_calls]
        return (e.text or "") + (json.dumps(calls, ensure_ascii=False) if calls else "")
    if isinstance(e, ToolResults):
        return "\n".join(r.content for r in e.results)
    if isinstance(e, UserNote):
        return e.text
    return ""


class Tokenizer:
    """Token ids of texts, memoized (block texts repeat across requests)."""

    def __init__(self, encoding: str = tokens.DEFAULT_ENCODING) -> None:
        self._encode = tokens.encoding(encoding).encode_ordinary
        self._memo: dict[str, tuple[int, ...]] = {}

    def __call__(self, text: str) -> tuple[int, ...]:
        ids = self._memo.get(text)
        if ids is None:
            ids = self._memo[text] = tuple(self._encode(text))
        return ids


def request_of(
    context: Context,
    exchanges: Iterable[Exchange] = (),
    *,
    time_s: float = 0.0,
    label: str = "",
    tokenize: Tokenizer | None = None,
    marking: Marking = "anthropic",
) -> Request:
    """A request as content blocks, in the order the wires lay them out (tools, the system
    stretches, the tree's blocks, the turn, then the tool loop), its breakpoints where
    ``marking`` puts them (``wire.blocks.plan``; a simulator's own is :attr:`Simulator.marking`);
    everything from the turn on is the turn. Its route is the context's session key."""
    exchanges = list(exchanges)
    tok = tokenize or Tokenizer(context.encoding)
    marks = plan(context, exchanges, marking)
    out: list[Block] = [Block(tok(s.text)) for s in context.segments if s.section == "tools"]
    out += [Block(tok(b.text), b.cache, message_end=i == len(marks.system) - 1) for i, b in enumerate(marks.system)]
    user = len(out)
    out += [Block(tok(b.text), b.cache) for b in marks.tree]
    turn = turn_text(context)
    if turn:
        out.append(Block(tok(turn), False, True))
    if len(out) > user:  # the end of the first user message
        out[-1] = Block(out[-1].tokens, out[-1].breakpoint, out[-1].turn, True)
    out += [
        Block(tok(exchange_text(e)), i in marks.exchanges, True, not isinstance(e, AssistantTurn))
        for i, e in enumerate(exchanges)
    ]
    return Request(tuple(out), time_s, label, session_key(context) or "")


# ---- the simulation --------------------------------------------------------------------------
def _prefix_hashes(ids: list[int]) -> list[int]:
    """The hash of every prefix: ``out[i]`` covers ``ids[: i + 1]``."""
    out = []
    h = 0
    for t in ids:
        h = (h * _BASE + t + 1) % _MOD
        out.append(h)
    return out


Key = Literal["text", "block"]
"""How a cache entry is keyed: ``text``, by the tokens of the prefix whatever blocks carried
them; ``block``, by the sequence of blocks, each byte-identical (the strict reading of
Anthropic's rule: the same text split into different blocks is a different prefix)."""

Lookup = Literal["lookback", "breakpoints"]
"""Where a breakpoint cache finds an entry: ``lookback``, at any block boundary a few blocks
before one of the request's breakpoints (Anthropic); ``breakpoints``, only at its breakpoints
and message ends (OpenAI, GPT-5.6 and later)."""

_BOUNDARY = 1 << 32  # mixed into a block-keyed hash after each block (no token id is this large)


def _block_hashes(blocks: Iterable[Block]) -> list[int]:
    """The block-keyed hash of every block prefix: ``out[i]`` covers blocks ``0..i``."""
    out = []
    h = 0
    for b in blocks:
        h = (_chain_memo(h, b.tokens) * _BASE + _BOUNDARY) % _MOD
        out.append(h)
    return out


class _BlockLimit:
    """Longest prefix of whole blocks before the turn that some earlier request sent as the
    same blocks: what any block-keyed cache could have served."""

    def __init__(self) -> None:
        self.prefixes: set[int] = set()

    def measure(self, req: Request) -> int:
        budget = req.pre_turn
        best = pos = 0
        for b, h in zip(req.blocks, _block_hashes(req.blocks), strict=True):
            if b.turn or h not in self.prefixes:
                break
            pos += len(b.tokens)
            best = pos
        return min(best, budget)

    def add(self, req: Request) -> None:
        self.prefixes.update(_block_hashes(req.blocks))


class _Limit:
    """Longest prefix of a request's part before the turn that some earlier request sent,
    exact to the token: prefix hashes every ``STEP`` tokens find the deepest shared stretch
    (binary search: a shared prefix's own prefixes are shared too), then the candidates'
    tokens settle the last few."""

    STEP = 32

    def __init__(self) -> None:
        self.seqs: list[array] = []  # every earlier request's token ids (all of them: a later turn may match)
        self.marks: dict[int, list[int]] = {}  # prefix hash at k * STEP tokens -> requests sharing it

    def _marks(self, ids: array) -> list[int]:
        out = [0]
        h = 0
        for k in range(self.STEP, len(ids) + 1, self.STEP):
            h = _chain_memo(h, tuple(ids[k - self.STEP : k]))
            out.append(h)
        return out

    def measure(self, req: Request) -> int:
        ids = array("I", (t for b in req.blocks for t in b.tokens))
        budget = req.pre_turn
        if not self.seqs or not budget:
            return 0
        marks = self._marks(ids)
        lo, hi = 0, len(marks) - 1  # marks[0] (the empty prefix) is always shared
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if marks[mid] in self.marks:
                lo = mid
            else:
                hi = mid - 1
        start = lo * self.STEP
        best = start
        most = min(len(ids), start + self.STEP)  # no candidate can agree further than this
        for i in reversed(self.marks.get(marks[lo], range(len(self.seqs))) if lo else range(len(self.seqs))):
            seq = self.seqs[i]
            n = start
            end = min(len(seq), most)
            while n < end and seq[n] == ids[n]:
                n += 1
            best = max(best, n)
            if best >= most:
                break
        return min(best, budget)

    def add(self, req: Request) -> None:
        ids = array("I", (t for b in req.blocks for t in b.tokens))
        i = len(self.seqs)
        self.seqs.append(ids)
        for h in self._marks(ids)[1:]:
            self.marks.setdefault(h, []).append(i)


def _chain(h: int, ids: Iterable[int]) -> int:
    for t in ids:
        h = (h * _BASE + t + 1) % _MOD
    return h


_CHAINED: dict[tuple[int, tuple[int, ...]], int] = {}
_CHAINED_MAX = 1 << 15


def _chain_memo(h: int, tokens: tuple[int, ...]) -> int:
    """:func:`_chain` over one stretch of tokens (a block, a step), memoized: the same stretches
    follow the same prefixes from one request to the next, and hashing the tuple (in C) is far
    cheaper than the loop."""
    key = (h, tokens)
    out = _CHAINED.get(key)
    if out is None:
        if len(_CHAINED) >= _CHAINED_MAX:
            _CHAINED.clear()
        out = _CHAINED[key] = _chain(h, tokens)
    return out


class Simulator:
    """Replays requests through one provider's cache model.

    ``provider`` names a row of the rules table; a row with ``breakpoint_row`` hands the models
    its ``breakpoint_from`` rule names to that row (:attr:`row` says which one models the
    cache). ``key`` (default: ``block`` where the model caches at breakpoints, ``text`` where it
    caches by token prefix) decides what a hit needs, and what the limit counts: see
    :data:`Key`. Prefix caches (OpenAI before GPT-5.6, Gemini) see no blocks: for them both
    keys agree. Build the requests with ``request_of(..., marking=sim.marking)``: the marks
    the wire sends to this model."""

    def __init__(
        self, provider: str, model: str = "", rules: Mapping[str, Any] | None = None, *, key: Key | None = None
    ) -> None:
        table = rules if rules is not None else shipped()
        if provider not in table:
            raise ValueError(f"no cache rules for {provider!r}; known: {', '.join(table)}")
        self.provider = provider
        self.model = model
        r = table[provider]
        self.row = provider
        handed = r.get("breakpoint_row")
        if isinstance(handed, str) and handed in table and breakpoint_model(model, r):
            self.row, r = handed, table[handed]
        self.mode = r["mode"]
        self.marking: Marking = "openai" if r.get("marking") == "openai" else "anthropic"
        self.lookup: Lookup = "breakpoints" if r.get("lookup") == "breakpoints" else "lookback"
        self.ttl = float(by_model(r.get("ttl_seconds", 300), model))
        self.min_tokens = int(by_model(r.get("min_tokens", 1024), model))
        self.warnings: list[str] = []
        if not known_model(r.get("min_tokens", 1024), model):
            strictest = max(int(v) for v in r["min_tokens"].values())
            self.min_tokens = strictest
            self.warnings.append(
                f"{self.row}: no cache rules for model {model or '(none)'!r}; using the strictest known minimum "
                f"({strictest:,} tokens) and the default price"
            )
            with _warned_lock:  # the log says it once per process; ``warnings`` on every simulator
                first = (self.row, model) not in _warned
                _warned.add((self.row, model))
            if first:
                log.warning("callctx: %s", self.warnings[-1])
        self.step = int(by_model(r.get("step_tokens", 1), model))
        self.lookback = int(by_model(r.get("lookback_blocks", 20), model))
        self.lookup_breakpoints = int(by_model(r.get("lookup_breakpoints", 80), model))
        self.lookup_messages = int(by_model(r.get("lookup_messages", 20), model))
        self.max_breakpoints = int(by_model(r.get("max_breakpoints", 4), model))
        self.routing_tokens = int(by_model(r.get("routing_prefix_tokens", 0), model))
        self.routing_rate = int(by_model(r.get("routing_rate_per_minute", 0), model))
        self.read_mult = float(by_model(r.get("read_multiplier", 1.0), model))
        self.write_mult = float(by_model(r.get("write_multiplier", 1.0), model))
        self.price = float(by_model(r.get("price_per_mtok", 0.0), model)) / 1e6
        self._entries: dict[int, float] = {}  # prefix hash -> last use (seconds)
        self._machines: dict[tuple[Any, int], dict[int, float]] = {}  # routed: each machine's entries
        self._routed: dict[tuple[tuple[int, ...], str], _Route] = {}
        self.key: Key = key or ("block" if self.mode == "breakpoints" else "text")
        if self.key not in ("text", "block"):
            raise ValueError(f"key must be 'text' or 'block', not {self.key!r}")
        self._limit: _Limit | _BlockLimit = _BlockLimit() if self.key == "block" else _Limit()
        self.report = Report(provider, model)

    def _alive(self, h: int, now: float, entries: dict[int, float] | None = None) -> bool:
        t = (self._entries if entries is None else entries).get(h)
        return t is not None and now - t <= self.ttl

    def run(self, requests: Iterable[Request]) -> Report:
        for req in requests:
            self.step_one(req)
        return self.report

    def step_one(self, req: Request) -> CallResult:
        limit = self._limit.measure(req)
        if self.mode == "breakpoints":
            read, write = self._breakpoints(req)
        else:
            read, write = self._prefix(req)
        self._limit.add(req)
        total = req.total
        uncached = total - read - write
        cost = self.price * (uncached + read * self.read_mult + write * self.write_mult)
        result = CallResult(req.label, total, read, write, uncached, limit, cost, self.price * total)
        self.report.calls.append(result)
        return result

    def _breakpoints(self, req: Request) -> tuple[int, int]:
        now = req.time_s
        ends: list[int] = []  # token position at the end of each block
        hashes: list[int] = []  # prefix hash at the end of each block
        h = pos = 0
        block_keyed = self.key == "block"
        for b in req.blocks:
            h = _chain_memo(h, b.tokens)
            if block_keyed:
                h = (h * _BASE + _BOUNDARY) % _MOD
            pos += len(b.tokens)
            ends.append(pos)
            hashes.append(h)
        marked = [i for i, b in enumerate(req.blocks) if b.breakpoint]
        marks = marked[-self.max_breakpoints :]  # the entries this request writes
        hit = -1
        if self.lookup == "breakpoints":  # only where the request names a position: no look-back
            messages = [i for i, b in enumerate(req.blocks) if b.message_end]
            if not marked:
                marks = messages[-1:]  # no mark: OpenAI's implicit breakpoint, on the latest message
            probes = {*marked[-self.lookup_breakpoints :], *messages[-(self.lookup_messages + 1) :], *messages[:1]}
            hit = max((k for k in probes if self._alive(hashes[k], now)), default=-1)
        else:
            for m in marks:
                for k in range(m, max(-1, m - self.lookback), -1):
                    if k > hit and self._alive(hashes[k], now):
                        hit = k
                        break
        read = ends[hit] if hit >= 0 else 0
        if hit >= 0:
            self._entries[hashes[hit]] = now
        written_to = read
        for m in marks:
            if ends[m] >= self.min_tokens:
                self._entries[hashes[m]] = now
                written_to = max(written_to, ends[m])
        return read, written_to - read

    def _machine(self, req: Request, ids: list[int]) -> dict[int, float]:
        """The entries of the machine ``req`` is routed to: the one its first tokens and its key
        pick, unless that one took ``routing_rate`` requests of theirs in the last minute; then
        one of the further machines the bucket's rate calls for (no routing rule: one cache)."""
        if self.routing_tokens <= 0:
            return self._entries
        bucket = (tuple(ids[: self.routing_tokens]), req.route)
        route = self._routed.get(bucket)
        if route is None:
            route = self._routed[bucket] = _Route()
        return self._machines.setdefault((bucket, route.machine(req.time_s, self.routing_rate)), {})

    def _prefix(self, req: Request) -> tuple[int, int]:
        now = req.time_s
        ids = [t for b in req.blocks for t in b.tokens]
        entries = self._machine(req, ids)
        points = list(range(self.min_tokens, len(ids) + 1, max(1, self.step)))
        if not points:
            return 0, 0
        if self.step < 16:  # a point every few tokens: hash them all in one pass
            every = _prefix_hashes(ids)
            hs = [every[p - 1] for p in points]
        else:  # the prefix hash at each point, stretch by stretch
            hs = []
            h = last = 0
            for p in points:
                h = _chain_memo(h, tuple(ids[last:p]))
                hs.append(h)
                last = p
        read = 0
        for p, h in zip(reversed(points), reversed(hs), strict=True):
            if self._alive(h, now, entries):
                read = p
                break
        for h in hs:
            entries[h] = now
        return read, 0


class _Route:
    """The requests one routing bucket (first tokens and key) received in the last minute."""

    def __init__(self) -> None:
        self.recent: deque[float] = deque()  # every request of the bucket
        self.first: deque[float] = deque()  # those its own machine took
        self.overflow = 0

    def machine(self, now: float, rate: int) -> int:
        """Which machine takes a request now: 0, the bucket's own, while it took fewer than
        ``rate`` in the last minute; else one of the further ones the bucket's rate calls for
        (one per ``rate`` a minute), in a scrambled turn."""
        for q in (self.recent, self.first):
            while q and now - q[0] >= 60.0:
                q.popleft()
        self.recent.append(now)
        if rate <= 0 or len(self.first) < rate:
            self.first.append(now)
            return 0
        extra = max(1, -(-len(self.recent) // rate) - 1)
        self.overflow += 1
        return 1 + ((self.overflow * 0x9E3779B97F4A7C15) >> 40) % extra


def simulate(
    requests: list[Request],
    provider: str,
    model: str = "",
    rules: Mapping[str, Any] | None = None,
    *,
    key: Key | None = None,
) -> Report:
    return Simulator(provider, model, rules, key=key).run(requests)


def explain(contexts: list[Context], block: Report, text: Report, min_tokens: int) -> list[str]:
    """Why a share of the limit is zero or low, in a sentence each: every request under the
    model's minimum, a named component moving inside the cached prefix, or the same text
    sent in different blocks from one call to the next."""
    if not contexts or (block.limit_share >= 0.8 and block.read):
        return []
    out = []
    cacheable = [c.cacheable_tokens for c in contexts]
    if max(cacheable) < min_tokens:
        out.append(
            f"every request is under the model's minimum cacheable prefix ({min_tokens:,} tokens): the longest "
            f"stretch before a breakpoint was {max(cacheable):,} tokens; a longer system part or tree "
            f"(`callctx demo --scale N`) gets real hits"
        )
    moved: dict[str, int] = {}
    for a, b in itertools.pairwise(contexts):
        before = {s.component: s.text for s in a.segments if s.section in ("tools", "system")}
        for s in b.segments:
            if s.section not in ("tools", "system"):
                break
            if s.component in before and before[s.component] != s.text:
                moved[s.component] = moved.get(s.component, 0) + 1
                break  # the first change invalidates everything after it
    for name, n in sorted(moved.items(), key=lambda kv: -kv[1]):
        if n > max(1, len(contexts) // 20):
            out.append(f"component {name!r} changed inside the cached prefix in {n} of {len(contexts) - 1} calls")
    if text.limit_share - block.limit_share > 0.2:
        out.append(
            f"the same text went out in different blocks from one call to the next: keyed by text the share of "
            f"the limit would be {text.limit_share:.1%}, keyed by block it is {block.limit_share:.1%}"
        )
    return out

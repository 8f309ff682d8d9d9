"""A fake model provider that really caches prompts, so a test knows what a provider read and why.

It speaks OpenAI Chat Completions (``POST /v1/chat/completions``), OpenAI Responses
(``POST /v1/responses``) and Anthropic Messages (``POST /v1/messages``), non-streaming, and
answers with :mod:`helpers.fake_openai`'s script (a call to the first offered tool while the
conversation holds no tool result, then a final text). What it adds is a cache, per model, that
behaves like the provider's and a ``usage`` that reports what the cache did:

* **OpenAI** (Chat and Responses): prefix caching. Every request's prefixes at ``min_tokens`` and
  every ``step_tokens`` after are cached; a request reads the longest one an earlier request made
  (``prompt_tokens_details.cached_tokens`` / ``input_tokens_details.cached_tokens``), nothing when
  it is shorter than ``min_tokens``. No write is reported.
* **Anthropic**: block caching. An entry is written for the prefix ending at each block marked
  ``cache_control`` (at most four; a top-level ``cache_control`` marks the last block) when that
  prefix holds at least ``min_tokens``; a request reads the longest entry found at a block boundary
  up to ``lookback_blocks`` blocks back from one of its breakpoints. ``cache_read_input_tokens`` is
  what was read, ``cache_creation_input_tokens`` what was written past it (up to the last
  breakpoint), ``input_tokens`` the rest.

Entries live ``ttl_seconds`` after their last use (a hit refreshes them, as the providers do),
measured at each request's arrival on the server's time: ``clock`` plus an offset that only
:meth:`CachingServer.advance` (or ``POST /_admin/advance``, body ``{"seconds": s}``) moves, so a
test makes time pass past a TTL without waiting for it (and a TTL far longer than any real gap
between calls keeps real time out of the outcome). :meth:`CachingServer.evict` (or
``POST /_admin/evict``, body ``{}`` or ``{"model": "..."}``) drops entries as a provider may.

**What is counted.** A request is read in wire order, tools, system, messages, as pieces of text
(:func:`pieces`): each tool as the canonical JSON of its name, description and parameters (as
callctx's tools segment writes them); the system part (OpenAI's leading system or developer
messages or ``instructions``, Anthropic's ``system`` blocks); then every message's texts (a
content part, a tool call as its name and arguments, a tool result's content). Tokens are
``o200k_base`` (callctx's offline vocabulary, ``callctx.components.tokens``), counted piece by
piece, so ``prompt_tokens`` is the sum of ``tokens.counter("o200k_base").count`` over the pieces.
A piece's kind (role, block type) is part of the cache key but adds no tokens. A piece's
``index`` is its place in its part: which tool, which system message or block, which message (the
content parts or blocks of one message share its index).

Every model request is kept as a :class:`Served` (arrival time, body, the usage answered), every
eviction as an :class:`Eviction`, so a test can compare what a trace and a ledger say with what the
provider did::

    with CachingServer(openai=CacheRules.from_table("openai", "gpt-4.1", ttl_seconds=600)) as server:
        client = OpenAI(api_key="test", base_url=server.base_url)      # Anthropic: base_url=server.url
        ...
        server.advance(660)                                             # the next request finds nothing
        server.served[-1].cache_read

**Scenarios**, for the tests that hold a cache ledger (``callctx cache LOG --why``) to what the
server did: :func:`long_prompt` (a stable system prompt over a minimum), :class:`Step` and
:func:`expected_calls` (one agent run per step; the reason, the call compared with and the first
difference each call must get), :func:`served_problems` (the busters busted, the clean calls hit),
:func:`ledger` (the command's rows) and the checks of its rows (``*_problems``: reasons, first
differences, reported usage, losses). Each check returns the mismatches, one line each.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from callctx.components import tokens
from callctx.components.cache import by_model, load_rules
from callctx.components.cache_ledger import common_prefix
from helpers.fake_openai import chat_completion, example_arguments, final_text, response

ENCODING = "o200k_base"
Api = Literal["chat", "responses", "messages"]
Part = Literal["tools", "system", "messages"]
ROUTES: dict[str, Api] = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}
EVICT = "/_admin/evict"
ADVANCE = "/_admin/advance"


# ---- the rules ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CacheRules:
    """How one model's cache behaves. ``step_tokens`` applies to prefix caching (OpenAI),
    ``lookback_blocks`` and ``max_breakpoints`` to block caching (Anthropic)."""

    min_tokens: int
    ttl_seconds: float
    step_tokens: int = 128
    lookback_blocks: int = 20
    max_breakpoints: int = 4

    @classmethod
    def from_table(cls, provider: str, model: str, *, ttl_seconds: float | None = None) -> CacheRules:
        """The row of callctx's ``cache_rules.yaml`` for ``model`` (``ttl_seconds`` overrides the TTL)."""
        row = load_rules()[provider]
        return cls(
            min_tokens=int(by_model(row["min_tokens"], model)),
            ttl_seconds=float(ttl_seconds if ttl_seconds is not None else by_model(row["ttl_seconds"], model)),
            step_tokens=int(by_model(row.get("step_tokens", 1), model)),
            lookback_blocks=int(by_model(row.get("lookback_blocks", 20), model)),
            max_breakpoints=int(by_model(row.get("max_breakpoints", 4), model)),
        )


RulesFor = CacheRules | Callable[[str], CacheRules]  # one set for every model, or the set of a model


def table_rules(provider: str, *, ttl_seconds: float | None = None) -> Callable[[str], CacheRules]:
    """Per model, the rules callctx's table gives it (the TTL overridden when given)."""
    known: dict[str, CacheRules] = {}

    def rules(model: str) -> CacheRules:
        if model not in known:
            known[model] = CacheRules.from_table(provider, model, ttl_seconds=ttl_seconds)
        return known[model]

    return rules


# ---- what a request is made of ------------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """One text of a request, in wire order. For Anthropic each piece is a content block."""

    part: Part
    index: int  # which tool, system message or block, or message, within the part
    text: str
    kind: str  # role or block type: part of the cache key, not of the count
    breakpoint: bool = False  # Anthropic: the block carries cache_control


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _tool_text(name: Any, description: Any, parameters: Any) -> str:
    return _json({"name": name, "description": description or "", "parameters": parameters or {}})


def _texts(content: Any) -> list[str]:
    """The texts of an OpenAI message's content: a string, or a list of parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        out = []
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                out.append(p["text"])
            elif isinstance(p, dict):
                out.append(_json(p))
            else:
                out.append(str(p))
        return out
    return [_json(content)]


def _chat_pieces(body: Mapping[str, Any]) -> list[Piece]:
    out: list[Piece] = []
    for i, t in enumerate(body.get("tools") or []):
        fn = t.get("function") or {}
        out.append(Piece("tools", i, _tool_text(fn.get("name"), fn.get("description"), fn.get("parameters")), "tool"))
    messages = list(body.get("messages") or [])
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    for i, m in enumerate(messages[:lead]):
        out.extend(Piece("system", i, text, m["role"]) for text in _texts(m.get("content")))
    for i, m in enumerate(messages[lead:]):
        role = str(m.get("role"))
        out.extend(Piece("messages", i, text, role) for text in _texts(m.get("content")))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append(Piece("messages", i, f"{fn.get('name')}{fn.get('arguments') or ''}", "tool_call"))
    return out


def _responses_pieces(body: Mapping[str, Any]) -> list[Piece]:
    out: list[Piece] = []
    for i, t in enumerate(body.get("tools") or []):
        text = _tool_text(t.get("name"), t.get("description"), t.get("parameters")) if t.get("name") else _json(t)
        out.append(Piece("tools", i, text, "tool"))
    raw = body.get("input")
    items: list[Any] = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
    system: list[Piece] = []
    if body.get("instructions"):
        system.append(Piece("system", 0, str(body["instructions"]), "instructions"))
    lead = 0
    while lead < len(items) and isinstance(items[lead], dict) and items[lead].get("role") in ("system", "developer"):
        n = len(system)
        system.extend(Piece("system", n, text, items[lead]["role"]) for text in _texts(items[lead].get("content")))
        lead += 1
    out.extend(system)
    for i, item in enumerate(items[lead:]):
        if not isinstance(item, dict):
            out.append(Piece("messages", i, str(item), "message"))
            continue
        kind = str(item.get("type") or "message")
        if kind == "function_call":
            out.append(Piece("messages", i, f"{item.get('name')}{item.get('arguments') or ''}", kind))
        elif kind == "function_call_output":
            out.extend(Piece("messages", i, text, kind) for text in _texts(item.get("output")))
        elif "content" in item:
            out.extend(Piece("messages", i, text, str(item.get("role"))) for text in _texts(item["content"]))
        else:
            out.append(Piece("messages", i, _json(item), kind))
    return out


def _anthropic_block_text(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"{block.get('name')}{_json(block.get('input') or {})}"
    if kind == "tool_result":
        content = block.get("content")
        return "".join(_texts(content)) if content is not None else ""
    return _json({k: v for k, v in block.items() if k != "cache_control"})


def _anthropic_pieces(body: Mapping[str, Any]) -> list[Piece]:
    out: list[Piece] = []
    for i, t in enumerate(body.get("tools") or []):
        text = _tool_text(t.get("name"), t.get("description"), t.get("input_schema"))
        out.append(Piece("tools", i, text, "tool", "cache_control" in t))
    system = body.get("system")
    if isinstance(system, str):
        out.append(Piece("system", 0, system, "text"))
    else:
        for i, b in enumerate(system or []):
            out.append(Piece("system", i, _anthropic_block_text(b), str(b.get("type")), "cache_control" in b))
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content")
        role = str(m.get("role"))
        if isinstance(content, str):
            out.append(Piece("messages", i, content, role))
            continue
        for b in content or []:
            out.append(Piece("messages", i, _anthropic_block_text(b), f"{role}:{b.get('type')}", "cache_control" in b))
    if body.get("cache_control") and out and not out[-1].breakpoint:  # automatic caching: the last block
        last = out[-1]
        out[-1] = Piece(last.part, last.index, last.text, last.kind, True)
    return out


def pieces(api: Api, body: Mapping[str, Any]) -> list[Piece]:
    """A request's texts in wire order (tools, system, messages), as the server counts them."""
    if api == "chat":
        return _chat_pieces(body)
    if api == "responses":
        return _responses_pieces(body)
    return _anthropic_pieces(body)


def text_of(api: Api, body: Mapping[str, Any], part: Part, index: int) -> str:
    """The text of one tool, system message or block, or message, as :func:`pieces` reads it."""
    return "".join(p.text for p in pieces(api, body) if p.part == part and p.index == index)


# ---- the caches ---------------------------------------------------------------------------------
class _Tokens:
    """Token ids of texts (o200k, offline), memoized: the same texts come back on every request."""

    def __init__(self) -> None:
        self._encode = tokens.encoding(ENCODING).encode_ordinary
        self._memo: dict[str, tuple[int, ...]] = {}

    def __call__(self, text: str) -> tuple[int, ...]:
        ids = self._memo.get(text)
        if ids is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            ids = self._memo[text] = tuple(self._encode(text))
        return ids


def _marker(piece: Piece) -> bytes:
    return b"\x00" + f"{piece.part}:{piece.kind}".encode() + b"\x00"


def _ids_bytes(ids: Iterable[int]) -> bytes:
    return b"".join(i.to_bytes(4, "little") for i in ids)


class _Entries:
    """Cache entries of one model: prefix digest -> time of last use."""

    def __init__(self) -> None:
        self.last_use: dict[bytes, float] = {}

    def alive(self, key: bytes, now: float, ttl: float) -> bool:
        t = self.last_use.get(key)
        return t is not None and now - t <= ttl


def prefix_cache(entries: _Entries, rules: CacheRules, ps: list[Piece], ids: list[tuple[int, ...]], now: float) -> int:
    """OpenAI: read the longest cached prefix at a point (``min_tokens``, then every ``step_tokens``),
    then cache every point of this request. Returns the tokens read."""
    total = sum(len(t) for t in ids)
    points = list(range(rules.min_tokens, total + 1, max(1, rules.step_tokens))) if rules.min_tokens > 0 else []
    keys: list[bytes] = []
    h = hashlib.blake2b(digest_size=16)
    pos = 0
    todo = iter(points)
    want = next(todo, None)
    for piece, piece_ids in zip(ps, ids, strict=True):
        h.update(_marker(piece))
        at = 0
        while want is not None and want - pos <= len(piece_ids) - at:  # a point inside this piece
            cut = at + (want - pos)
            h.update(_ids_bytes(piece_ids[at:cut]))
            keys.append(h.copy().digest())
            pos, at = want, cut
            want = next(todo, None)
        h.update(_ids_bytes(piece_ids[at:]))
        pos += len(piece_ids) - at
    read = 0
    for point, key in zip(reversed(points), reversed(keys), strict=True):
        if entries.alive(key, now, rules.ttl_seconds):
            read = point
            break
    for key in keys:
        entries.last_use[key] = now
    return read


class BadRequest(ValueError):
    """A request the provider would refuse (answered 400)."""


def block_cache(
    entries: _Entries, rules: CacheRules, ps: list[Piece], ids: list[tuple[int, ...]], now: float
) -> tuple[int, int]:
    """Anthropic: read the longest entry at a block boundary within ``lookback_blocks`` of a
    breakpoint, then write an entry at every breakpoint whose prefix reaches ``min_tokens``.
    Returns (tokens read, tokens written past them)."""
    marks = [i for i, p in enumerate(ps) if p.breakpoint]
    if len(marks) > rules.max_breakpoints:
        raise BadRequest(f"A maximum of {rules.max_breakpoints} blocks with cache_control may be provided.")
    ends: list[int] = []
    keys: list[bytes] = []
    h = hashlib.blake2b(digest_size=16)
    pos = 0
    for piece, piece_ids in zip(ps, ids, strict=True):
        h.update(_marker(piece) + _ids_bytes(piece_ids) + b"\x01")
        pos += len(piece_ids)
        ends.append(pos)
        keys.append(h.copy().digest())
    hit = -1
    for m in marks:
        for k in range(m, max(-1, m - rules.lookback_blocks), -1):
            if entries.alive(keys[k], now, rules.ttl_seconds):
                hit = max(hit, k)
                break
    read = ends[hit] if hit >= 0 else 0
    if hit >= 0:
        entries.last_use[keys[hit]] = now
    written_to = read
    for m in marks:
        if ends[m] >= rules.min_tokens:
            entries.last_use[keys[m]] = now
            written_to = max(written_to, ends[m])
    return read, written_to - read


# ---- what the server keeps ----------------------------------------------------------------------
@dataclass(frozen=True)
class Served:
    """One model request and what the cache did with it."""

    n: int  # its number among the model requests, from 0
    path: str
    api: Api
    model: str
    at: float  # on the server's time (clock plus what advance added), at arrival
    body: dict[str, Any]
    prompt_tokens: int  # every input token, cached or not
    cache_read: int
    cache_write: int  # Anthropic only
    usage: dict[str, Any]  # as answered


@dataclass(frozen=True)
class Eviction:
    at: float
    model: str | None  # None: every model
    entries: int  # how many were dropped


class CachingServer:
    """The server, in a background thread (loopback, port 0 by default). ``base_url`` is what an
    OpenAI client takes, ``url`` what an Anthropic client takes."""

    def __init__(
        self,
        *,
        openai: RulesFor = CacheRules(min_tokens=1024, ttl_seconds=300),
        anthropic: RulesFor = CacheRules(min_tokens=1024, ttl_seconds=300),
        clock: Callable[[], float] = time.monotonic,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._rules: dict[str, RulesFor] = {"openai": openai, "anthropic": anthropic}
        self.clock = clock
        self._offset = 0.0  # seconds advance() added to the clock
        self._served: list[Served] = []
        self._evictions: list[Eviction] = []
        self._caches: dict[tuple[str, str], _Entries] = {}
        self._per_route: dict[str, int] = {}
        self._tokens = _Tokens()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- where it is --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    # ---- what it did --------------------------------------------------------------------------
    @property
    def served(self) -> list[Served]:
        with self._lock:
            return list(self._served)

    @property
    def evictions(self) -> list[Eviction]:
        with self._lock:
            return list(self._evictions)

    def rules(self, provider: str, model: str) -> CacheRules:
        r = self._rules[provider]
        return r if isinstance(r, CacheRules) else r(model)

    def evict(self, model: str | None = None) -> int:
        """Drop the cache of one model, or of every model; returns the entries dropped."""
        with self._lock:
            dropped = 0
            for (_, m), entries in self._caches.items():
                if model is None or m == model:
                    dropped += len(entries.last_use)
                    entries.last_use.clear()
            self._evictions.append(Eviction(self._now(), model, dropped))
            return dropped

    # ---- its time -----------------------------------------------------------------------------
    def _now(self) -> float:
        return self.clock() + self._offset

    def now(self) -> float:
        """The server's time: ``clock`` plus what :meth:`advance` added."""
        with self._lock:
            return self._now()

    def advance(self, seconds: float) -> float:
        """Move the server's time forward by ``seconds`` (a pause, without waiting for it); returns
        the new time. Raises ``ValueError`` for a negative or non-finite number."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < float("inf"):
            raise ValueError(f"seconds must be a finite number >= 0, not {seconds!r}")
        with self._lock:
            self._offset += float(seconds)
            return self._now()

    # ---- serving ------------------------------------------------------------------------------
    def serve(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to one model request (raises :class:`BadRequest`)."""
        api = ROUTES[path]
        model = str(body.get("model") or "")
        if not model:
            raise BadRequest("model is required")
        if body.get("stream"):
            raise BadRequest("this server answers stream=false requests only")
        provider = "anthropic" if api == "messages" else "openai"
        rules = self.rules(provider, model)
        ps = pieces(api, body)
        ids = [self._tokens(p.text) for p in ps]
        total = sum(len(t) for t in ids)
        with self._lock:
            now = self._now()
            entries = self._caches.setdefault((provider, model), _Entries())
            if api == "messages":
                read, write = block_cache(entries, rules, ps, ids, now)
            else:
                read, write = prefix_cache(entries, rules, ps, ids, now), 0
            n = self._per_route.get(path, 0)
            self._per_route[path] = n + 1
            answer = self._answer(api, body, n, total, read, write)
            self._served.append(
                Served(len(self._served), path, api, model, now, body, total, read, write, answer["usage"])
            )
        return answer

    def _count(self, text: str) -> int:
        return len(self._tokens(text))

    def _answer(self, api: Api, body: dict[str, Any], n: int, total: int, read: int, write: int) -> dict[str, Any]:
        if api == "chat":
            answer = chat_completion(body, n)
            message = answer["choices"][0]["message"]
            produced = message.get("content") or _json(message.get("tool_calls"))
            out = self._count(produced)
            answer["usage"] = {
                "prompt_tokens": total,
                "completion_tokens": out,
                "total_tokens": total + out,
                "prompt_tokens_details": {"cached_tokens": read, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
            }  # fmt: skip
            return answer
        if api == "responses":
            answer = response(body, n)
            out = self._count(_json(answer["output"]))
            answer["usage"] = {
                "input_tokens": total,
                "input_tokens_details": {"cached_tokens": read},
                "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": total + out,
            }
            return answer
        answer = anthropic_message(body, n)
        out = self._count(_json(answer["content"]))
        answer["usage"] = {
            "input_tokens": total - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "output_tokens": out,
        }
        return answer

    # ---- lifetime -----------------------------------------------------------------------------
    def start(self) -> CachingServer:
        serve = self._server.serve_forever
        self._thread = threading.Thread(target=serve, args=(0.05,), name="caching-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> CachingServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---- the Anthropic answer -----------------------------------------------------------------------
def _has_tool_result(body: Mapping[str, Any]) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
        for m in body.get("messages") or []
    )


def anthropic_message(body: Mapping[str, Any], n: int) -> dict[str, Any]:
    """The answer to the ``n``-th Messages request (0-based): the first offered tool while no tool
    result is in the conversation, else a final text (usage filled in by the server)."""
    tools = [t for t in body.get("tools") or [] if t.get("name")]
    messages = body.get("messages") or []
    content: list[dict[str, Any]]
    if tools and not _has_tool_result(body):
        tool = tools[0]
        content = [{"type": "tool_use", "id": f"toolu_fake_{n}", "name": tool["name"],
                    "input": example_arguments(tool.get("input_schema"))}]  # fmt: skip
        stop = "tool_use"
    else:
        results = [
            "".join(_texts(b.get("content")))
            for m in messages
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        content = [{"type": "text", "text": final_text(results[-1] if results else None, len(messages))}]
        stop = "end_turn"
    return {
        "id": f"msg_fake_{n}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {},
    }


# ---- HTTP ---------------------------------------------------------------------------------------
def _handler(server: CachingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, path: str) -> None:
            if path == "/v1/messages":
                self._send(status, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            else:
                self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": None}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self._error(400, "body is not JSON", path)
            if not isinstance(body, dict):
                return self._error(400, "body is not a JSON object", path)
            if path == EVICT:
                model = body.get("model")
                return self._send(200, {"evicted": server.evict(str(model) if model else None)})
            if path == ADVANCE:
                try:
                    return self._send(200, {"now": server.advance(body.get("seconds"))})
                except ValueError as e:
                    return self._error(400, str(e), path)
            if path not in ROUTES:
                return self._error(404, f"the caching server does not serve {path}", path)
            try:
                answer = server.serve(path, body)
            except BadRequest as e:
                return self._error(400, str(e), path)
            self._send(200, answer)

        def do_GET(self) -> None:
            self._error(404, f"the caching server does not serve GET {self.path}", self.path)

    return Handler


# ---- a stable system prompt ---------------------------------------------------------------------
_TOPICS = (
    "a delivery date", "a refund", "an invoice", "a broken sensor", "a firmware update", "a warranty claim",
    "a calibration", "an exchange", "a lost password", "a bulk order", "a shipping address", "a spare part",
)  # fmt: skip
_CHECKS = (
    "confirm the order number", "look the customer up by e-mail", "quote the section of the policy",
    "check the serial number", "read the last three messages of the thread", "ask which station they run",
)  # fmt: skip
_NEVER = (
    "promise a date you cannot check", "share another customer's data", "guess a price",
    "blame the carrier", "close the ticket yourself", "answer in more than five sentences",
)  # fmt: skip
OPENING = "You are the support assistant of a shop that sells weather stations."


def long_prompt(at_least: int, *, opening: str = OPENING) -> str:
    """A deterministic system prompt of at least ``at_least`` tokens (o200k): an opening line, then
    numbered house rules. Its first paragraph (the opening line) is a prompt of its own."""
    count = tokens.counter(ENCODING).count
    lines = [opening, "", "House rules, in the order you apply them:"]
    i = 0
    estimate = sum(count(line) for line in lines)  # each line counted once; the whole checked at the end
    while estimate < at_least or count("\n".join(lines)) < at_least:
        topic, check, never = _TOPICS[i % len(_TOPICS)], _CHECKS[i % len(_CHECKS)], _NEVER[(i // 2) % len(_NEVER)]
        i += 1
        lines.append(f"{i}. When a customer writes about {topic}, {check} first, and never {never}.")
        estimate += count(lines[-1])
    return "\n".join(lines)


# ---- what a cache ledger must say about the calls made against this server ----------------------
Reason = Literal["hit", "first", "prefix_changed", "tools_changed", "model_changed", "ttl_expired",
                 "below_minimum", "no_breakpoint", "evicted", "unknown"]  # fmt: skip
UNCHECKED: Literal["unchecked"] = "unchecked"
Read = Literal["none", "partial", "some"]  # what the server must read for a run's first call


@dataclass(frozen=True)
class Difference:
    """Where a call first differs from the call it is compared with."""

    part: Part
    index: int
    offset: int | None = None  # characters into that tool, system part or message; None: not checked


@dataclass(frozen=True)
class Step:
    """One agent run of a scenario (one question: a tool round, then the answer): what was
    injected before it, and what its first call must show."""

    injected: str  # what was done before the run ("nothing" for a clean run)
    reason: Reason  # the ledger's reason for the run's first call
    difference: Difference | Literal["unchecked"] | None = UNCHECKED  # ... and its first difference
    served: Read = "some"  # what the server read for that call
    calls: int = 2
    short: bool = False  # the run is under the minimum: every call of it is below_minimum


@dataclass(frozen=True)
class Expected:
    """What the ledger must say about one call."""

    call: int  # from 1, in start order
    reason: Reason
    compared_with: int | None
    difference: Difference | Literal["unchecked"] | None
    step: int  # which step of the scenario made it
    continues: bool = False  # a later call of its run: it extends the call before

    @property
    def busted(self) -> bool:
        """Did the call send again what an earlier call had cached? Not a first call, nor a hit,
        nor one under the minimum: no cache would have served a prefix that short."""
        return self.reason not in ("hit", "first", "below_minimum")


def expected_calls(steps: list[Step]) -> list[Expected]:
    """Per call, what the ledger must say. A run's first call gets its step's reason and is
    compared with the last call of the latest long run (a short run's first call: of the latest
    short run, if any); the later calls of a run extend the call before, so they are compared with
    it and are hits (below_minimum in a short run)."""
    out: list[Expected] = []
    last_long: int | None = None
    last_short: int | None = None
    for s, step in enumerate(steps):
        for k in range(step.calls):
            n = len(out) + 1
            if k == 0:
                before = (last_short or last_long) if step.short else last_long
                out.append(Expected(n, step.reason, before, step.difference if before else None, s))
            else:
                out.append(Expected(n, "below_minimum" if step.short else "hit", n - 1, UNCHECKED, s, True))
        if step.short:
            last_short = len(out)
        else:
            last_long = len(out)
    return out


def served_problems(steps: list[Step], served: list[Served], rules: Callable[[Served], CacheRules]) -> list[str]:
    """Whether the server did what the scenario says it injected: a clean call read at least the
    minimum, a busted one nothing or only part (a step less than its prompt, at least), a short
    one was under the minimum; every gap under the TTL but the one it was made to exceed."""
    expected = expected_calls(steps)
    problems: list[str] = []
    if len(served) != len(expected):
        return [f"the server answered {len(served)} model calls, the scenario makes {len(expected)}"]
    for e, s in zip(expected, served, strict=True):
        r = rules(s)
        step = steps[e.step]
        first = e.call == 1 or expected[e.call - 2].step != e.step
        what = f"call {e.call} ({step.injected}, {s.model})"
        if step.short:
            if not (s.prompt_tokens < r.min_tokens and s.cache_read == 0):
                problems.append(f"{what}: {s.prompt_tokens} tokens, read {s.cache_read}; must be under {r.min_tokens}")
        elif e.reason == "first" or (first and step.served == "none"):
            if s.cache_read != 0:
                problems.append(f"{what}: read {s.cache_read}, must read nothing")
        elif first and step.served == "partial":
            if not 0 < s.cache_read <= s.prompt_tokens - r.step_tokens:
                problems.append(f"{what}: read {s.cache_read} of {s.prompt_tokens}, must read only a part")
        elif s.cache_read < min(r.min_tokens, s.prompt_tokens) or s.cache_read == 0:
            problems.append(f"{what}: read {s.cache_read} of {s.prompt_tokens}, must be a hit")
        if not step.short and s.prompt_tokens < r.min_tokens:
            problems.append(f"{what}: {s.prompt_tokens} tokens, under the minimum {r.min_tokens}")
        if e.compared_with is not None:
            gap = s.at - served[e.compared_with - 1].at
            over = e.reason == "ttl_expired"
            if (gap > r.ttl_seconds) != over:
                problems.append(f"{what}: {gap:.2f} s after call {e.compared_with}, TTL {r.ttl_seconds} s")
    return problems


def ledger(log: Any, ttl: float) -> list[dict[str, Any]]:
    """The rows of ``callctx cache LOG --why --json --ttl TTL``, run in-process (one JSON object a
    line); ``log`` may be a store URL (``chdb:PATH?table=T``: read with ``--store``). Fails the test
    with the command's error when it does not succeed."""
    import contextlib
    import io

    from callctx.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            source = ["--store", log] if str(log).startswith("chdb:") else [str(log)]
            code = main(["cache", *source, "--why", "--json", "--ttl", str(ttl)], out, err)
    except SystemExit as e:  # argparse refuses an option it does not know
        code = e.code if isinstance(e.code, int) else 2
    assert code == 0, f"callctx cache --why --json exited {code}: {err.getvalue().strip()[-2000:]}"
    rows = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    assert all(isinstance(r, dict) and "call" in r for r in rows), out.getvalue()[:2000]
    return rows


def _misnumbered(rows: list[dict[str, Any]], n: int) -> list[str]:
    """A problem when the rows are not calls 1 to ``n`` in order (the checks pair them by position)."""
    numbers = [r.get("call") for r in rows]
    return [] if numbers == list(range(1, n + 1)) else [f"the ledger lists calls {numbers}, the run made 1 to {n}"]


def _shared(a: Served, b: Served) -> int:
    """Characters of the two requests' pieces, in wire order, that are the same before the first difference."""
    n = 0
    for x, y in zip(pieces(a.api, a.body), pieces(b.api, b.body), strict=False):
        if (x.part, x.index, x.kind) != (y.part, y.index, y.kind):
            break
        if x.text != y.text:
            return n + common_prefix(x.text, y.text)
        n += len(x.text)
    return n


def as_good_as_the_one_before(served: list[Served], call: int, ttl: float) -> set[int]:
    """The calls (from 1) a continuing call may be compared with: the one before it, and any
    earlier one of its model, still within the TTL, sharing at least as long a prefix with it
    (the same question asked again makes the same request)."""
    me, before = served[call - 1], served[call - 2]
    need = _shared(before, me)
    return {call - 1} | {
        k + 1 for k, s in enumerate(served[: call - 1])
        if s.model == me.model and me.at - s.at <= ttl and _shared(s, me) >= need
    }  # fmt: skip


def reason_problems(
    rows: list[dict[str, Any]], expected: list[Expected], served: list[Served], ttl: float
) -> list[str]:
    """Every call: its number, its reason, and the call it was compared with (for a call that
    continues its run, any call :func:`as_good_as_the_one_before`)."""
    if wrong := _misnumbered(rows, len(expected)):
        return wrong
    problems = []
    for r, e in zip(rows, expected, strict=True):
        allowed = as_good_as_the_one_before(served, e.call, ttl) if e.continues else {e.compared_with}
        if r.get("reason") != e.reason or r.get("compared_with") not in allowed:
            problems.append(
                f"call {e.call}: reason {r.get('reason')!r} compared with {r.get('compared_with')!r}; "
                f"injected {e.reason!r}, compared with {sorted(allowed, key=str)!r}"
            )
    return problems


def difference_problems(rows: list[dict[str, Any]], expected: list[Expected]) -> list[str]:
    """Every call whose first difference the scenario knows: its part, index and offset (or none)."""
    if wrong := _misnumbered(rows, len(expected)):
        return wrong
    problems = []
    for r, e in zip(rows, expected, strict=True):
        if e.difference == UNCHECKED:
            continue
        got = r.get("first_difference")
        if e.difference is None:
            if got is not None:
                problems.append(f"call {e.call}: first difference {got}, expected none")
            continue
        want = {"part": e.difference.part, "index": e.difference.index}
        if e.difference.offset is not None:
            want["offset"] = e.difference.offset
        seen = {k: got.get(k) for k in want} if isinstance(got, dict) else got
        if seen != want:
            problems.append(f"call {e.call}: first difference {got}, expected {want}")
    return problems


def reported_problems(rows: list[dict[str, Any]], served: list[Served]) -> list[str]:
    """Every call: the usage reported is what the server answered (input counts cached tokens)."""
    if wrong := _misnumbered(rows, len(served)):
        return wrong
    problems = []
    for r, s in zip(rows, served, strict=True):
        rep = r.get("reported")
        want = {"cache_read": s.cache_read, "cache_write": s.cache_write, "input": s.prompt_tokens}
        got = {k: (rep.get(k) or 0) for k in want} if isinstance(rep, dict) else rep
        if got != want:
            problems.append(f"call {r.get('call')}: reported {rep}, the server answered {want}")
    return problems


def loss_problems(rows: list[dict[str, Any]], expected: list[Expected], ttl: float) -> list[str]:
    """A loss (tokens and dollars) exactly on the busted calls; a gap over the TTL exactly on the
    expired ones; an eviction shows a possible read above the reported one."""
    if wrong := _misnumbered(rows, len(expected)):
        return wrong
    problems = []
    for r, e in zip(rows, expected, strict=True):
        lost, usd = r.get("lost_tokens"), r.get("lost_usd")
        if not isinstance(lost, int) or (lost > 0) != e.busted:
            problems.append(f"call {e.call} ({e.reason}): lost_tokens {lost!r}, must be {'> 0' if e.busted else '0'}")
        if not isinstance(usd, int | float) or (usd > 0) != e.busted:
            problems.append(f"call {e.call} ({e.reason}): lost_usd {usd!r}, must be {'> 0' if e.busted else '0'}")
        gap = r.get("gap_seconds")
        if e.compared_with is not None and (
            not isinstance(gap, int | float) or (gap > ttl) != (e.reason == "ttl_expired")
        ):
            problems.append(f"call {e.call} ({e.reason}): gap_seconds {gap!r} against a TTL of {ttl} s")
        if e.reason == "evicted":
            possible, reported = r.get("possible") or {}, r.get("reported") or {}
            if not (possible.get("cache_read") or 0) > (reported.get("cache_read") or 0):
                problems.append(f"call {e.call} (evicted): possible {possible}, reported {reported}")
    return problems

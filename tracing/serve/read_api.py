"""``callctx serve``'s read API, independent of the HTTP server that carries it: a GET path and
its query in, an :class:`Answer` out, read through any :class:`~callctx.store.model.Store`.

* ``/api/traces``: sessions and traces (filters: service, session, since, until, function,
  model, status; pages: offset, limit), with services, times, status, counts and token totals;
* ``/api/traces/{id}/tree``: a session's or trace's whole call tree (YAML; ``?view=all``: every
  span people read, tool calls too, where the model's tree keeps only agentic calls);
* ``/api/spans/{id}/tree``: the tree as span ``id`` saw it when it started (``?final=1``: as
  it stands);
* ``/api/calls``: model calls of every dialect (the same filters and pages);
* ``/api/calls/{n}/context``: call ``n``'s context, rebuilt and verified or reconstructed;
* ``/api/calls/{n}/cache``: call ``n``'s line of the cache ledger (reported, possible, why).

What leaves is shaped by the caller's ``shape`` (secrets redacted). Errors: a missing thing is
a 404 and a bad parameter a 400, each as ``{"error": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from callctx.projection.calls import ModelCall
from callctx.projection.errors import BadInput, NotFound
from callctx.store import params
from callctx.store.contexts import Unrebuildable, as_json, context_of
from callctx.store.ledger import entry_json
from callctx.store.model import Page, Store, TreeRow

JSON = "application/json"
YAML = "application/yaml"


class Answer(NamedTuple):
    status: int
    content_type: str
    body: bytes


def answer(store: Store, parts: list[str], query: Mapping[str, str], shape: Callable[[str], str] | None) -> Answer:
    """Answer GET ``/`` + ``"/".join(parts)`` (``parts[0]`` is ``api``)."""
    try:
        kind, value = _route(store, parts[1:], query)
    except NotFound as e:
        return _error(404, str(e))
    except BadInput as e:
        return _error(400, str(e))
    text = value if kind == YAML else json.dumps(value, ensure_ascii=False)
    return Answer(200, kind, (shape(text) if shape else text).encode())


def _route(store: Store, parts: list[str], q: Mapping[str, str]) -> tuple[str, Any]:
    rr = q.get("render_range")
    render_range = params.whole(rr, "render_range") if rr else None
    match parts:
        case ["traces"]:
            offset, limit = params.page(q)
            return JSON, trees_json(store.trees(params.filter_of(q), offset=offset, limit=limit))
        case ["traces", key, "tree"]:
            return YAML, store.tree(key, render_range=render_range, view=params.view(q))
        case ["spans", span_id, "tree"]:
            return YAML, store.span_tree(span_id, final=params.flag(q, "final"), render_range=render_range)
        case ["calls"]:
            offset, limit = params.page(q)
            page = store.calls(params.filter_of(q), offset=offset, limit=limit)
            return JSON, {"total": page.total, "calls": [call_json(c) for c in page.items], **_paging(page)}
        case ["calls", n, "cache"]:
            return JSON, entry_json(store.cache(params.call_number(n)))
        case ["calls", n, "context"]:
            call = store.call(params.call_number(n))
            try:
                return JSON, as_json(context_of(store.recorded(call)))
            except Unrebuildable as e:  # texts that never arrived, or arrived altered
                raise NotFound(str(e)) from None
    raise NotFound(f"no route /api/{'/'.join(parts)}")


def trees_json(page: Page[TreeRow]) -> dict[str, Any]:
    rows = []
    for t in page.items:
        rows.append({
            "id": t.key, "kind": t.kind, "services": t.services, "start_ns": t.start_ns, "end_ns": t.end_ns,
            "spans": t.spans, "status": t.status, "calls": t.calls, "usage": t.usage.counts(), "models": t.models,
            "functions": t.functions,
        })  # fmt: skip
    return {"total": page.total, "traces": rows, **_paging(page)}


def call_json(c: ModelCall) -> dict[str, Any]:
    """A model call as the read API lists it."""
    return {
        "index": c.index, "span_id": c.span_id, "trace_id": c.trace_id, "tree": c.tree, "function": c.function,
        "call_path": c.call_path, "excerpt": c.excerpt, "service": c.service, "session": c.session, "model": c.model,
        "provider": c.provider, "status": c.status, "error": c.error, "start_ns": c.start_ns,
        "latency_ms": c.latency_ms, "usage": c.usage.counts(), "reconstructed": c.foreign,
    }  # fmt: skip


def _paging(page: Page[Any]) -> dict[str, Any]:
    return {"offset": page.offset, "limit": page.limit, "next_offset": page.next_offset}


def _error(status: int, message: str) -> Answer:
    return Answer(status, JSON, json.dumps({"error": message}).encode())


__all__ = ["Answer", "answer", "call_json", "trees_json"]

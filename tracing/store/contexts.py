"""What a model call saw, from what a store holds of it: callctx's own calls rebuilt from
their manifest and texts and checked against the request hash recorded when they were sent;
other instrumentations' calls reconstructed from their spans (not verified).

Shared by every reader (``callctx context``, ``callctx serve``'s read API, the page) and
every store: a store gives :class:`~callctx.store.model.Recorded`, this module the context.
Pure functions; errors: :class:`Unrebuildable` for one of our calls whose texts are missing or
altered, or whose rebuilt request does not match its hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from callctx.components import record, wire
from callctx.components.context import Context
from callctx.components.wire.exchange import Exchange
from callctx.projection.calls import ModelCall
from callctx.projection.errors import CallctxError
from callctx.projection.events import SpanEnded, SpanStarted
from callctx.projection.llm import Reconstructed, messages_of
from callctx.projection.manifest import ManifestError
from callctx.projection.manifest import decode as decode_manifest

from .model import Recorded


class Unrebuildable(CallctxError, ValueError):
    """A call whose request cannot be rebuilt: no manifest, a missing or altered text, or a
    rebuilt body that does not match the recorded hash."""


class Rebuilt(msgspec.Struct, frozen=True):
    """One of callctx's own calls, restored: its context, its tool loop so far, the request as
    sent (in its own wire format), and whether that request matches the recorded hash."""

    call: ModelCall
    manifest: record.Manifest
    context: Context
    exchanges: list[Exchange]
    body: dict[str, Any]
    verified: bool


class Foreign(msgspec.Struct, frozen=True):
    """A call another instrumentation traced: the messages its span carries."""

    call: ModelCall
    messages: Reconstructed


def rebuild(rec: Recorded) -> Rebuilt:
    """Restore one of our calls and check its request; raises :class:`Unrebuildable`."""
    call = rec.call
    if call.manifest is None:
        raise Unrebuildable(f"call {call.index} carries no recorded context (made by another instrumentation?)")
    try:
        m = record.manifest(call.manifest)
        context, exchanges = record.restore(m, rec.texts)
        body = wire.build(m.wire, context, exchanges, m.params)
    except (record.RecordError, ValueError) as e:
        raise Unrebuildable(f"cannot rebuild call {call.index}: {e}") from None
    return Rebuilt(call, m, context, exchanges, body, wire.request_hash(body) == m.request)


def restore(call: ModelCall, texts: Mapping[str, str]) -> tuple[Context, list[Exchange]]:
    """One of our calls' context and tool loop, from the texts its manifest names (no request
    body is built, nothing is verified but each text's hash); raises :class:`Unrebuildable`."""
    if call.manifest is None:
        raise Unrebuildable(f"call {call.index} carries no recorded context (made by another instrumentation?)")
    try:
        return record.restore(record.manifest(call.manifest), texts)
    except (record.RecordError, ValueError) as e:
        raise Unrebuildable(f"cannot rebuild call {call.index}: {e}") from None


def text_hashes(call: ModelCall) -> list[str]:
    """The hashes of the texts one of our calls was built from (none for another's)."""
    if call.manifest is None:
        return []
    try:
        return decode_manifest(call.manifest).text_hashes()
    except ManifestError:
        return []


def reconstruct(rec: Recorded) -> Foreign:
    """The messages a foreign call's span carries (start and end attributes)."""
    found = _messages(rec.start, rec.end)
    if not (found.system or found.messages) and rec.around is not None:  # the wrapper above carries what was sent
        up = _messages(*rec.around)
        found = msgspec.structs.replace(
            up, output=found.output or up.output, tools=found.tools or up.tools, source=up.source
        )
    return Foreign(rec.call, found)


def _messages(start: SpanStarted, end: SpanEnded | None) -> Reconstructed:
    events = end.events if end is not None else ()
    return messages_of(start.attributes, end.attributes if end is not None else {}, events=events)


def context_of(rec: Recorded) -> Rebuilt | Foreign:
    """The call's context: rebuilt and checked when it is ours, else reconstructed."""
    return reconstruct(rec) if rec.call.foreign else rebuild(rec)


def request_in(rebuilt: Rebuilt, wire_name: str | None) -> dict[str, Any]:
    """The call's request as it would go out in another wire format (its own when None)."""
    if wire_name is None or wire.resolve(wire_name) == rebuilt.manifest.wire:
        return rebuilt.body
    return wire.build(wire.resolve(wire_name), rebuilt.context, rebuilt.exchanges, rebuilt.manifest.params)


def as_json(found: Rebuilt | Foreign) -> dict[str, Any]:
    """The call's context as the read API serves it."""
    call = found.call
    if isinstance(found, Foreign):
        return {"index": call.index, "reconstructed": True, "verified": False, "function": call.function,
                "model": call.model, "usage": call.usage.counts(), **msgspec.to_builtins(found.messages)}  # fmt: skip
    m, context = found.manifest, found.context
    return {
        "index": call.index,
        "reconstructed": False,
        "wire": m.wire,
        "model": m.params.model,
        "request_sha256": m.request,
        "verified": found.verified,
        "tokens": context.tokens,
        "cacheable_tokens": context.cacheable_tokens,
        "segments": [
            {"component": s.component, "layer": s.layer, "section": s.section, "tokens": s.tokens,
             "breakpoint": s.breakpoint, "text": s.text}
            for s in context.segments
        ],
        "request": found.body,
    }  # fmt: skip

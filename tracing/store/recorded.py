"""A recorded model call, restored from the texts a log (or a receiver) holds: its blocks and
its request body, rebuilt and checked against the hash recorded when it was sent.

Shared by the command line (``callctx context``) and ``callctx serve``'s read API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from callctx.components import record, wire
from callctx.components.context import Context
from callctx.projection.calls import ModelCall
from callctx.projection.errors import CallctxError


class Unrebuildable(CallctxError, ValueError):
    """A call whose request cannot be rebuilt: no manifest, a missing or altered text, or a
    rebuilt body that does not match the recorded hash."""


class Rebuilt(msgspec.Struct, frozen=True):
    """One recorded call, restored and verified."""

    manifest: record.Manifest
    context: Context
    body: dict[str, Any]  # the request as sent, in its own wire format
    verified: bool


def rebuild(call: ModelCall, blobs: Mapping[str, str]) -> Rebuilt:
    """Restore ``call``'s context and request; raises :class:`Unrebuildable`."""
    if call.manifest is None:
        raise Unrebuildable(f"call {call.index} carries no recorded context (made by another instrumentation?)")
    try:
        m = record.manifest(call.manifest)
        context, _ = record.restore(m, blobs)
        body = record.rebuild(m, blobs)
    except (record.RecordError, ValueError) as e:
        raise Unrebuildable(f"cannot rebuild call {call.index}: {e}") from None
    return Rebuilt(m, context, body, wire.request_hash(body) == m.request)


def as_json(rebuilt: Rebuilt) -> dict[str, Any]:
    """The call as the read API serves it: its blocks, and the request rebuilt and checked."""
    m, context = rebuilt.manifest, rebuilt.context
    return {
        "wire": m.wire,
        "model": m.params.model,
        "request_sha256": m.request,
        "verified": rebuilt.verified,
        "tokens": context.tokens,
        "cacheable_tokens": context.cacheable_tokens,
        "segments": [
            {"component": s.component, "layer": s.layer, "section": s.section, "tokens": s.tokens,
             "breakpoint": s.breakpoint, "text": s.text}
            for s in context.segments
        ],
        "request": rebuilt.body,
    }  # fmt: skip

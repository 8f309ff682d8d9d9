"""What a model call saw, content-addressed, so it can be rebuilt byte for byte from the log.

Every text (each segment, the tool schemas, the tool loop so far, attachments) is stored
once per log under its sha256; the call itself carries a small manifest of hashes plus the
wire format, the parameters, and the hash of the final request body. Rebuilding runs the
same wire adapter over the restored ``Context`` and checks the result against that hash.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
from collections.abc import Mapping
from typing import Any

import msgspec

from . import wire
from .context import Context, Problem, Segment
from .ctx import Attachment
from .wire import exchange as wire_exchange
from .wire.exchange import Exchange
from .wire.params import Params

VERSION = 2


class RecordError(ValueError):
    """A recorded call cannot be restored (a missing text, a bad manifest)."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Manifest(msgspec.Struct, frozen=True, omit_defaults=True):
    """The per-call record: hashes of everything the request was built from."""

    wire: str
    params: Params
    encoding: str
    segments: list[tuple[str, str, str, str, int, bool, bool, list[int] | None, int | None]]
    request: str  # sha256 of the canonical request body
    tools: str | None = None
    exchanges: str | None = None
    media: list[tuple[str, str, str]] = []
    problems: list[tuple[str, str]] = []
    v: int = VERSION


_manifest_decoder = msgspec.json.Decoder(Manifest)


def record(
    context: Context, exchanges: list[Exchange], wire_name: str, params: Params, body: dict[str, Any]
) -> tuple[str, dict[str, str]]:
    """(manifest JSON, blobs by hash) for one call whose request body is ``body``."""
    blobs: dict[str, str] = {}

    def put(text: str) -> str:
        h = digest(text)
        blobs[h] = text
        return h

    segments = []
    for s in context.segments:
        cuts = None
        if s.blocks:
            cuts, pos = [], 0
            for b in s.blocks[:-1]:
                pos += len(b)
                cuts.append(pos)
        segments.append(
            (s.component, s.layer, s.section, put(s.text), s.tokens, s.cacheable, s.breakpoint, cuts, s.anchor)
        )
    tools = put(json.dumps(context.tools, sort_keys=True, ensure_ascii=False)) if context.tools else None
    ex = put(wire_exchange.encode(exchanges)) if exchanges else None
    media = [(a.name, a.mime, put(base64.b64encode(a.data or b"").decode())) for a in context.media]
    manifest = Manifest(
        wire=wire.resolve(wire_name),
        params=params,
        encoding=context.encoding,
        segments=segments,
        request=wire.request_hash(body),
        tools=tools,
        exchanges=ex,
        media=media,
        problems=[(p.component, p.error) for p in context.problems],
    )
    return msgspec.json.encode(manifest).decode(), blobs


def manifest(text: str) -> Manifest:
    try:
        return _manifest_decoder.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise RecordError(f"unreadable context manifest: {e}") from None


def restore(m: Manifest, blobs: Mapping[str, str]) -> tuple[Context, list[Exchange]]:
    """The Context and tool loop a call was built from."""

    def get(h: str) -> str:
        try:
            text = blobs[h]
        except KeyError:
            raise RecordError(f"the log holds no text for {h[:12]}…; it is incomplete") from None
        if digest(text) != h:
            raise RecordError(f"the text stored under {h[:12]}… does not match its hash")
        return text

    segments = []
    for component, layer, section, h, tokens, cacheable, breakpoint, cuts, anchor in m.segments:
        text = get(h)
        blocks = None
        if cuts is not None:
            edges = [0, *cuts, len(text)]
            blocks = [text[a:b] for a, b in itertools.pairwise(edges)]
        segments.append(Segment(component, layer, section, text, tokens, cacheable, breakpoint, blocks, anchor))  # type: ignore[arg-type]
    tools = json.loads(get(m.tools)) if m.tools else []
    exchanges = wire_exchange.decode(get(m.exchanges)) if m.exchanges else []
    media = [Attachment(name, mime, data=base64.b64decode(get(h))) for name, mime, h in m.media]
    context = Context(
        tools=tools,
        segments=segments,
        problems=[Problem(c, e) for c, e in m.problems],
        encoding=m.encoding,
        media=media,
    )
    return context, exchanges


def rebuild(m: Manifest, blobs: Mapping[str, str], wire_name: str | None = None) -> dict[str, Any]:
    """The request body of a recorded call (for another provider's wire format if asked)."""
    context, exchanges = restore(m, blobs)
    return wire.build(wire_name or m.wire, context, exchanges, m.params)

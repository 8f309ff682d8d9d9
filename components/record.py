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

from callctx.projection.manifest import (
    Manifest,
    ManifestError,
    RecordedMedia,
    RecordedProblem,
    RecordedSegment,
)
from callctx.projection.manifest import decode as _decode_manifest
from callctx.projection.manifest import encode as _encode_manifest

from . import wire
from .context import Context, Problem, Segment
from .inputs import Attachment
from .wire import exchange as wire_exchange
from .wire.exchange import Exchange
from .wire.params import Params

RecordError = ManifestError
"""A recorded call cannot be restored (a missing text, a bad manifest)."""


def manifest(text: str) -> Manifest:
    """The manifest a chat span carries; raises :class:`RecordError` when it is unreadable."""
    return _decode_manifest(text)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_DIGESTS_ENTRIES = 4096
_DIGESTS_CHARS = 16 << 20
_digests: dict[str, str] = {}  # the texts of recent calls and their hashes: most repeat from call to call
_digests_size = 0


def _digest(text: str) -> str:
    """``digest(text)``, remembered for the texts the next calls send again."""
    global _digests_size
    h = _digests.get(text)
    if h is None:
        h = digest(text)
        if len(_digests) >= _DIGESTS_ENTRIES or _digests_size > _DIGESTS_CHARS:
            _digests.clear()
            _digests_size = 0
        _digests[text] = h
        _digests_size += len(text)
    return h


def record(
    context: Context, exchanges: list[Exchange], wire_name: str, params: Params, body: dict[str, Any]
) -> tuple[str, dict[str, str]]:
    """(manifest JSON, blobs by hash) for one call whose request body is ``body``."""
    blobs: dict[str, str] = {}

    def put(text: str) -> str:
        h = _digest(text)
        blobs[h] = text
        return h

    segments = []
    for s in context.segments:
        cuts = list(itertools.accumulate(map(len, s.blocks[:-1]))) if s.blocks else None
        segments.append(
            RecordedSegment(
                s.component, s.layer, s.section, put(s.text), s.tokens, s.cacheable, s.breakpoint, cuts,
                s.breakpoint_block, s.parent_block, s.reuse_block,
            )
        )  # fmt: skip
    listed = context.segment("tools")  # the schemas as the assembly wrote them (sorted JSON): stored as they are
    tools = put(listed.text if listed is not None else _tools_text(context.tools)) if context.tools else None
    ex = put(wire_exchange.encode(exchanges)) if exchanges else None
    media = [RecordedMedia(a.name, a.mime, put(base64.b64encode(a.data or b"").decode())) for a in context.media]
    recorded = Manifest(
        wire=wire.resolve(wire_name),
        params=params,
        encoding=context.encoding,
        segments=segments,
        request=wire.request_hash(body),
        tools=tools,
        exchanges=ex,
        media=media,
        problems=[RecordedProblem(p.component, p.error, p.origin) for p in context.problems],
    )
    return _encode_manifest(recorded), blobs


def _tools_text(tools: list[dict[str, Any]]) -> str:
    return json.dumps(tools, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


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
    for seg in m.segments:
        text = get(seg.text)
        blocks = None
        if seg.cuts is not None:
            edges = [0, *seg.cuts, len(text)]
            blocks = [text[a:b] for a, b in itertools.pairwise(edges)]
        segments.append(
            Segment(
                seg.component, seg.layer, seg.section, text, seg.tokens, seg.cacheable,  # type: ignore[arg-type]
                seg.breakpoint, blocks, seg.breakpoint_block, seg.parent_block, seg.reuse_block,
            )
        )  # fmt: skip
    tools = json.loads(get(m.tools)) if m.tools else []
    exchanges = wire_exchange.decode(get(m.exchanges)) if m.exchanges else []
    media = [Attachment(x.name, x.mime, data=base64.b64decode(get(x.data))) for x in m.media]
    context = Context(
        tools=tools,
        segments=segments,
        problems=[Problem(p.component, p.error, p.origin) for p in m.problems],
        encoding=m.encoding,
        media=media,
    )
    return context, exchanges


def rebuild(m: Manifest, blobs: Mapping[str, str], wire_name: str | None = None) -> dict[str, Any]:
    """The request body of a recorded call (for another provider's wire format if asked)."""
    context, exchanges = restore(m, blobs)
    return wire.build(wire_name or m.wire, context, exchanges, m.params)

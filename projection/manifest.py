"""The manifest a chat span carries (``callctx.context``): what a model call was built from,
as hashes of texts the log stores once each, plus the hash of the request body.

Written by the recorder (``callctx.components.record``), read by it to rebuild a call, and by
the span codecs to know which texts travel with a span. One set of Structs serves both
sides; the lists are ``array_like`` so the bytes on disk stay compact (and unchanged from
the tuples earlier versions wrote).
"""

from __future__ import annotations

import msgspec

from .errors import BadInput

VERSION = 2


class Params(msgspec.Struct, frozen=True, omit_defaults=True):
    """Request parameters other than the content: model name and sampling knobs."""

    model: str = ""
    max_tokens: int | None = None
    temperature: float | None = None


class RecordedSegment(msgspec.Struct, frozen=True, array_like=True, omit_defaults=True):
    """One segment of the context: who made it, where it sits, its text's hash, its tokens and
    cache flags, and (for text the wire splits into blocks) the block cuts, the index of the
    block the cache breakpoint closes, of the one a second breakpoint closes, and of the one
    that ends where an earlier call put a breakpoint (what an OpenAI request marks to find it)."""

    component: str
    layer: str
    section: str
    text: str  # sha256 of the text
    tokens: int
    cacheable: bool
    breakpoint: bool
    cuts: list[int] | None
    breakpoint_block: int | None
    parent_block: int | None = None
    reuse_block: int | None = None


class RecordedMedia(msgspec.Struct, frozen=True, array_like=True):
    name: str
    mime: str
    data: str  # sha256 of the base64 text


class RecordedProblem(msgspec.Struct, frozen=True, array_like=True, omit_defaults=True):
    component: str
    error: str
    origin: str | None = None


class Manifest(msgspec.Struct, frozen=True, omit_defaults=True):
    """The per-call record: hashes of everything the request was built from."""

    wire: str
    params: Params
    encoding: str
    segments: list[RecordedSegment]
    request: str  # sha256 of the canonical request body
    tools: str | None = None
    exchanges: str | None = None
    media: list[RecordedMedia] = []
    problems: list[RecordedProblem] = []
    v: int = VERSION

    def text_hashes(self) -> list[str]:
        """Every text hash the manifest points to, in order."""
        refs = [s.text for s in self.segments]
        refs += [h for h in (self.tools, self.exchanges) if h is not None]
        refs += [m.data for m in self.media]
        return refs


class ManifestError(BadInput):
    """A manifest that cannot be read."""


_decoder = msgspec.json.Decoder(Manifest)
_encoder = msgspec.json.Encoder()


def decode(text: str | bytes) -> Manifest:
    try:
        return _decoder.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise ManifestError(f"unreadable context manifest: {e}") from None


def encode(manifest: Manifest) -> str:
    return _encoder.encode(manifest).decode()

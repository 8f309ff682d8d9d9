"""Texts that travel in parts: how a model call's recorded texts ride on spans, and how a
receiver puts them back together.

A chat span carries each text it was sent, so a receiver far from the log (``callctx serve``, a
store) can rebuild the call, as ``callctx.blob`` events: ``{"hash": sha256, "text": text}``.
What leaves the process is bounded (a value, a span, a request; see
:mod:`callctx.export.shaping`), so a text longer than a value may be travels in parts:
``{"hash", "text": part, "part": i, "parts": n}`` (``i`` from 0), each part a value, on the chat
span while it has room and then on carrier spans named ``callctx.blob`` (children of the chat
span, in the same trace), which may reach the receiver in other requests.

:func:`split` cuts a text into its events; :class:`BlobPart` is one part as decoded;
:class:`Assembler` collects parts and hands back each text once all its parts arrived and
their join matches the hash. A text whose parts never all arrive is never used (the call
reads as not rebuildable), and one whose join does not match (altered, redacted or cut on
the way) is dropped with a warning.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from typing import Any

import msgspec

from .events import Blob

log = logging.getLogger(__name__)

CARRIER = "callctx.blob"  # the name of the spans that carry the parts a chat span had no room for
MAX_PARTS = 4096  # a part count beyond this is not a text of ours
PENDING_CHARS = 64 << 20  # characters of incomplete texts an assembler keeps, at most


class BlobPart(msgspec.Struct, frozen=True, gc=False):
    """One part of a text (``part`` of ``parts``, from 0) under its sha256 ``hash``."""

    hash: str
    part: int
    parts: int
    text: str


def split(hash: str, text: str, size: int) -> list[dict[str, Any]]:
    """The ``callctx.blob`` event attributes that carry ``text``: one event when it fits in
    ``size`` characters, else one per part of ``size`` characters."""
    if len(text) <= size:
        return [{"hash": hash, "text": text}]
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    n = len(pieces)
    return [{"hash": hash, "text": p, "part": i, "parts": n} for i, p in enumerate(pieces)]


def part_of(attributes: Any) -> Blob | BlobPart | None:
    """What one ``callctx.blob`` event carries: a whole text (verified against its hash), a
    part (verified once joined), or None when it is not a well-formed one."""
    h, text = attributes.get("hash"), attributes.get("text")
    if not isinstance(h, str) or not isinstance(text, str):
        return None
    parts = _count(attributes.get("parts"))
    if attributes.get("parts") is None:
        return Blob(h, text) if hashlib.sha256(text.encode()).hexdigest() == h else None
    part = _count(attributes.get("part"))
    if parts is None or part is None or not 0 <= part < parts <= MAX_PARTS:
        return None
    return BlobPart(h, part, parts, text)


def _count(value: Any) -> int | None:
    """A part number as sent: an integer, or its decimal text (stores that keep attributes as
    strings give it back so)."""
    if type(value) is int:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 6:
        return int(value)
    return None


class Assembler:
    """Collects the parts of texts until each is whole.

    Thread-safe (one lock). Bounded: at most ``max_chars`` characters of incomplete texts wait;
    past that the oldest incomplete text is dropped (said once per assembler).
    """

    def __init__(self, max_chars: int = PENDING_CHARS) -> None:
        self.max_chars = max_chars
        self._pending: OrderedDict[tuple[str, int], dict[int, str]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self._warned = False

    def add(self, part: BlobPart) -> Blob | None:
        """Take one part; the whole text once its last part arrived and the join matches."""
        key = (part.hash, part.parts)
        with self._lock:
            have = self._pending.get(key)
            if have is None:
                have = self._pending[key] = {}
            if part.part in have:
                return None
            have[part.part] = part.text
            self._chars += len(part.text)
            if len(have) < part.parts:
                self._bound()
                return None
            del self._pending[key]
            self._chars -= sum(len(t) for t in have.values())
        text = "".join(have[i] for i in range(part.parts))
        if hashlib.sha256(text.encode()).hexdigest() != part.hash:
            log.warning("callctx: the parts of text %s… do not join to it (altered on the way)", part.hash[:12])
            return None
        return Blob(part.hash, text)

    def _bound(self) -> None:
        while self._chars > self.max_chars and len(self._pending) > 1:
            (h, _), dropped = self._pending.popitem(last=False)
            self._chars -= sum(len(t) for t in dropped.values())
            if not self._warned:
                self._warned = True
                log.warning(
                    "callctx: more than %d characters of texts wait for their other parts; the oldest "
                    "(%s…) is dropped, and its call cannot be rebuilt here (said once)", self.max_chars, h[:12],
                )  # fmt: skip

    @property
    def waiting(self) -> int:
        """Texts still waiting for parts."""
        with self._lock:
            return len(self._pending)

"""Encoded payloads: what encoded runs look like, how to decode them, and the orders to decode
something and follow it.

* ``DECODE_CUE``: asking to decode something and follow it (an "encoded instruction" in itself).
* ``RUN`` and :func:`run_text`: runs that may be base64 (standard or URL-safe), base32 or hex,
  decoded when they give text that reads like words (not a hash, a key or an image).
* ``ESCAPES``: runs of escaped characters (``\\x`` hex, %-escapes, HTML entities, ``\\u``
  escapes), each with its decoder.
* ``LINE_CODES``: hints that a line reads as instructions once ROT13'd or reversed (a keyword such
  as "ignore" or "password" encoded), each with its decoder.

Decoders raise nothing: what does not decode gives None.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import urllib.parse
from collections.abc import Callable

from .matching import Regex, Rule

DECODE_CUE = Rule(
    r"\b(?:decod|decipher|deciph|un-?hex|unescap|base64-decod|rot-?13|reverse|read\b[^.\n]{0,30}\bbackwards)\w*\b"
    r"[^.\n]{0,100}?\b(?:and|then|,)\s+(?:then\s+)?(?:follow|execute|obey|run|do\s+what|carry\s+out|apply|comply|"
    r"act\s+on|treat\s+it\s+as|perform)",
    r"\b(?:follow|execute|obey|carry\s+out)\b[^.\n]{0,40}\bafter\s+decoding\b",
    r"(?:解码|解密|译码)[^。\n]{0,20}?(?:并|后|然后|再)?(?:执行|遵循|照做|按照|服从)",
    r"\bdecodific\w*[^.\n]{0,80}?\by\s+(?:sigue|ejecuta|obedece|cumple)",
    r"\bdécod\w*[^.\n]{0,80}?\bet\s+(?:exécute|suis|obéis|applique)",
    r"\bdekodier\w*[^.\n]{0,80}?\b(?:aus|befolge|folge|befolgen|ausführen)\b",
    r"(?:расшифру|декодиру|раскодиру)\w*[^.\n]{0,80}?(?:выполни|следуй|исполни)",
    r"デコードして[^。\n]{0,40}(?:従|実行)",
)
# Runs that may be base64 (standard or URL-safe), base32 or hex; each is tried in turn.
# (searched in the text with a space in front, so that a run can start it)
RUN = Regex(r"[^A-Za-z0-9+/_=-]([A-Za-z0-9+/_-]{16,}={0,6})(?![A-Za-z0-9+/_=-])")
_HEX_ESC = Regex(r"\\x[0-9A-Fa-f]{2}(?:\\x[0-9A-Fa-f]{2}){5,}")
_PCT = Regex(r"%[0-9A-Fa-f]{2}(?:[\w.~-]{0,3}%[0-9A-Fa-f]{2}){5,}")
_ENTITIES = Regex(r"&#(?:\d{2,7}|x[0-9A-Fa-f]{2,6});(?:&#(?:\d{2,7}|x[0-9A-Fa-f]{2,6});){3,}")
_UESC = Regex(r"\\u[0-9A-Fa-f]{4}(?:\\u[0-9A-Fa-f]{4}){3,}")
_KEYWORDS = ("ignore", "disregard", "instructions", "previous", "system prompt", "reveal", "password", "api key")
ROT13_HINT = Rule(*(codecs.encode(w, "rot13") for w in _KEYWORDS))
REVERSED_HINT = Rule(*(w[::-1] for w in _KEYWORDS))


def _try(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except (ValueError, binascii.Error, UnicodeError):
        return None


def _bytes_text(raw: object) -> str | None:
    """``raw`` as text, when it is UTF-8 that reads like words (not a hash, key or image)."""
    if not isinstance(raw, bytes) or len(raw) < 8:
        return None
    try:
        t = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if sum(c.isprintable() or c in "\n\t" for c in t) < 0.95 * len(t):
        return None
    return t if sum(c.isalpha() or c.isspace() for c in t) >= 0.6 * len(t) else None


_HEX_RUN = Regex(r"(?:[0-9A-Fa-f]{2})+")
_B32_RUN = Regex(r"[A-Z2-7]+=*")
_UPPER, _LOWER_CASE, _B32_DIGIT = Regex("[A-Z]"), Regex("[a-z]"), Regex("[2-7]")


def run_text(run: str) -> tuple[str, str] | None:
    """A run of base64/base32/hex characters decoded to text, with the encoding's name."""
    if _HEX_RUN.fullmatch(run):
        t = _bytes_text(_try(lambda: bytes.fromhex(run)))
        if t:
            return t, "hex"
    if _B32_RUN.fullmatch(run) and _B32_DIGIT.search(run):
        s = run.rstrip("=")
        t = _bytes_text(_try(lambda: base64.b32decode(s + "=" * (-len(s) % 8))))
        if t:
            return t, "base32"
    if _LOWER_CASE.search(run) and _UPPER.search(run):
        s = run.rstrip("=")
        alt = b"-_" if ("-" in s or "_" in s) else None
        t = _bytes_text(_try(lambda: base64.b64decode(s + "=" * (-len(s) % 4), altchars=alt)))
        if t:
            return t, "base64"
    return None


def _decoder(fn: Callable[[str], object]) -> Callable[[str], str | None]:
    """``fn`` as a decoder: the text it gives, or None when it fails or gives no text."""

    def decode(s: str) -> str | None:
        t = _try(lambda: fn(s))
        return t if isinstance(t, str) and t else None

    return decode


# (runs of escapes, the encoding's name, its decoder)
ESCAPES: tuple[tuple[Regex, str, Callable[[str], str | None]], ...] = (
    (_HEX_ESC, "hex", _decoder(lambda s: _bytes_text(_try(lambda: bytes.fromhex(s.replace("\\x", "")))))),
    (_PCT, "%-escapes", _decoder(urllib.parse.unquote)),
    (_ENTITIES, "HTML entities", _decoder(html.unescape)),
    (_UESC, "\\u escapes", _decoder(lambda s: s.encode().decode("unicode_escape"))),
)
# (hint that a line is encoded, the encoding's name, its decoder)
LINE_CODES: tuple[tuple[Rule, str, Callable[[str], str]], ...] = (
    (ROT13_HINT, "ROT13", lambda s: codecs.decode(s, "rot13")),
    (REVERSED_HINT, "reversed text", lambda s: s[::-1]),
)

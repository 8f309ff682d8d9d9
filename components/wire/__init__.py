"""Wire formats: a provider-neutral ``Context`` (plus the tool loop so far) as the exact JSON
body each provider's API receives.

The body built here is what goes over the wire, key for key (tests send it through the
official SDKs against a capturing transport and compare). Its canonical hash is recorded
with every model call, so a request can be rebuilt from the log and checked byte for byte.
The formats, and the provider names that stand for one, are the provider table's
(``callctx.components.providers``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import msgspec

from .. import providers
from ..context import Context
from .exchange import Exchange
from .params import Params

Builder = Callable[[Context, list[Exchange], Params], dict[str, Any]]


def _builders() -> dict[providers.Wire, Builder]:
    global _BUILDERS
    if _BUILDERS is None:
        from . import anthropic, gemini, openai

        _BUILDERS = {
            "anthropic": anthropic.build,
            "openai-chat": openai.build_chat,
            "openai-responses": openai.build_responses,
            "gemini": gemini.build,
        }
    return _BUILDERS


_BUILDERS: dict[providers.Wire, Builder] | None = None


WIRES = providers.WIRES
ALIASES = providers.ALIASES


def resolve(wire: str) -> providers.Wire:
    """The wire format a name gives: a format's own name, or a provider's name or alias (the
    format its client speaks). ``ValueError`` for any other name."""
    if wire in ALIASES:
        return ALIASES[wire]
    for name in WIRES:
        if name == wire:
            return name
    raise ValueError(f"unknown provider wire format {wire!r}; known: {', '.join(WIRES)} (or {', '.join(ALIASES)})")


def build(wire: str, context: Context, exchanges: list[Exchange] | None = None, params: Params | None = None) -> dict:
    """The request body for ``wire`` (``anthropic``, ``openai-chat``, ``openai-responses``, ``gemini``)."""
    return _builders()[resolve(wire)](context, list(exchanges or ()), params or Params())


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes hashed for a request: sorted keys, no whitespace, UTF-8.

    Byte for byte ``json.dumps(body, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False).encode()``, made faster. First msgspec's sorted encoder, kept only when
    its bytes read back equal to ``body`` (so ``body`` held JSON's own types: no tuples, sets,
    bytes, NaN or non-string keys, which msgspec writes its own way) and hold no float that it
    writes differently from ``json`` (an exponent, or below 1e-4). Otherwise an encoder that
    escapes the strings a session sends again and again (the system blocks, the sealed tree
    blocks, the keys) once; anything but plain dicts with string keys, lists, tuples, strings,
    ints, floats, booleans and None is left to ``json`` itself (as are its errors)."""
    try:
        fast = _sorted(body)
        if _read(fast) == body:
            return fast
    except (_Unusual, TypeError, ValueError, OverflowError, RecursionError, UnicodeEncodeError, msgspec.DecodeError):
        pass
    out: list[bytes] = []
    try:
        _encode(body, out.append)
    except (_Unusual, RecursionError, UnicodeEncodeError):
        return _reference(body)
    return b"".join(out)


def _reference(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _plain_float(text: str) -> float:
    """A float as msgspec wrote it, when ``json`` writes it the same (``repr``): not with an
    exponent, nor below 1e-4 (which ``repr`` writes with one)."""
    if "e" in text or text.lstrip("-").startswith("0.0000"):
        raise _Unusual
    return float(text)


_sorted = msgspec.json.Encoder(order="sorted").encode
_read = msgspec.json.Decoder(float_hook=_plain_float).decode


class _Unusual(Exception):
    """A value the fast encoder leaves to ``json``."""


_escape = json.encoder.encode_basestring  # json's own escaper (its C version when there is one)
_MEMO_ENTRIES = 8192
_MEMO_BYTES = 16 << 20
_escaped: dict[str, bytes] = {}  # strings as JSON, in UTF-8: most of a request was in the one before
_escaped_size = 0


def _encode(value: Any, out: Callable[[bytes], None]) -> None:
    t = type(value)
    if t is str:
        out(_escaped.get(value) or _string(value))
    elif t is dict:
        if not value:
            out(b"{}")
            return
        keys = _first_keys  # '{"key":', then ',"key":'
        for key in sorted(value):
            if type(key) is not str:
                raise _Unusual
            out(keys.get(key) or _key(key, keys))
            keys = _next_keys
            item = value[key]
            if type(item) is str:  # most values: no call of their own
                out(_escaped.get(item) or _string(item))
            else:
                _encode(item, out)
        out(b"}")
    elif t is list or t is tuple:
        if not value:
            out(b"[]")
            return
        sep = b"["
        for item in value:
            out(sep)
            sep = b","
            if type(item) is str:
                out(_escaped.get(item) or _string(item))
            else:
                _encode(item, out)
        out(b"]")
    elif t is int:
        out(int.__repr__(value).encode())
    elif value is None:
        out(b"null")
    elif t is bool:
        out(b"true" if value else b"false")
    elif t is float and value - value == 0.0:  # finite (json writes NaN and Infinity its own way)
        out(float.__repr__(value).encode())
    else:
        raise _Unusual


def _string(text: str) -> bytes:
    global _escaped_size
    done = _escape(text).encode()
    if len(_escaped) >= _MEMO_ENTRIES or _escaped_size > _MEMO_BYTES:
        _escaped.clear()
        _escaped_size = 0
    _escaped[text] = done
    _escaped_size += len(done)
    return done


_first_keys: dict[str, bytes] = {}
_next_keys: dict[str, bytes] = {}


def _key(key: str, keys: dict[str, bytes]) -> bytes:
    piece = (b"{" if keys is _first_keys else b",") + _escape(key).encode() + b":"
    if len(keys) >= _MEMO_ENTRIES:
        keys.clear()
    keys[key] = piece
    return piece


def request_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(body)).hexdigest()


__all__ = ["WIRES", "Exchange", "Params", "build", "canonical", "request_hash", "resolve"]

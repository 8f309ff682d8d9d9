"""A call's input and output as span attributes: bound by signature, encoded once with msgspec.

Input is the mapping of parameter name to argument for the arguments actually passed
(``self`` / ``cls`` dropped), JSON-encoded. Values msgspec cannot encode fall back to their
``repr``, so capturing never fails because of an odd argument.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from callctx.projection import schema as s

log = logging.getLogger(__name__)

_P = inspect.Parameter


def _fallback(obj: Any) -> Any:
    return repr(obj)


_encoder = msgspec.json.Encoder(enc_hook=_fallback)


def to_json(value: Any) -> str:
    """JSON text of any value; unknown types by ``repr``, unencodable structures by ``repr``."""
    try:
        return _encoder.encode(value).decode()
    except Exception:  # noqa: BLE001 - e.g. cycles, unsupported keys: fall back, never fail the call
        if isinstance(value, dict):
            return _encoder.encode({str(k): _safe(v) for k, v in value.items()}).decode()
        return _encoder.encode(repr(value)).decode()


def _safe(value: Any) -> Any:
    try:
        _encoder.encode(value)
        return value
    except Exception:  # noqa: BLE001
        return repr(value)


class Binder:
    """Maps a call's arguments to parameter names, fast for the common signatures."""

    __slots__ = ("names", "signature", "simple", "skip")

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        self.signature = sig
        params = list(sig.parameters.values()) if sig else []
        self.skip = 1 if params and params[0].name in ("self", "cls") else 0
        self.simple = sig is not None and all(p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY) for p in params)
        self.names = tuple(p.name for p in params if p.kind is not _P.KEYWORD_ONLY)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.simple and len(args) <= len(self.names):
            bound = dict(zip(self.names, args, strict=False))
            if kwargs:
                bound.update(kwargs)
        elif self.signature is not None:
            try:
                bound = dict(self.signature.bind_partial(*args, **kwargs).arguments)
            except TypeError:  # the call itself is wrong; the function will say so
                return {"args": list(args[self.skip :]), "kwargs": kwargs}
        else:
            return {"args": list(args), "kwargs": kwargs}
        if self.skip and self.names:
            bound.pop(self.names[0], None)
        return bound


def output_attributes(value: Any) -> dict[str, str]:
    """Text stays text (readable in Phoenix and Jaeger); everything else becomes JSON."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {s.OUTPUT_VALUE: value, s.OUTPUT_MIME: s.MIME_TEXT}
    return {s.OUTPUT_VALUE: to_json(value), s.OUTPUT_MIME: s.MIME_JSON}

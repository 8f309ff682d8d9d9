"""Wire formats: a provider-neutral ``Context`` (plus the tool loop so far) as the exact JSON
body each provider's API receives.

The body built here is what goes over the wire, key for key (tests send it through the
official SDKs against a capturing transport and compare). Its canonical hash is recorded
with every model call, so a request can be rebuilt from the log and checked byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from ..context import Context
from .exchange import Exchange
from .params import Params

Builder = Callable[[Context, list[Exchange], Params], dict[str, Any]]


def _builders() -> dict[str, Builder]:
    from . import anthropic, gemini, openai

    return {
        "anthropic": anthropic.build,
        "openai-chat": openai.build_chat,
        "openai-responses": openai.build_responses,
        "gemini": gemini.build,
    }


WIRES = ("anthropic", "openai-chat", "openai-responses", "gemini")
ALIASES = {"openai": "openai-chat", "google": "gemini", "claude": "anthropic"}


def resolve(wire: str) -> str:
    name = ALIASES.get(wire, wire)
    if name not in WIRES:
        raise ValueError(f"unknown provider wire format {wire!r}; known: {', '.join(WIRES)} (or {', '.join(ALIASES)})")
    return name


def build(wire: str, context: Context, exchanges: list[Exchange] | None = None, params: Params | None = None) -> dict:
    """The request body for ``wire`` (``anthropic``, ``openai-chat``, ``openai-responses``, ``gemini``)."""
    return _builders()[resolve(wire)](context, list(exchanges or ()), params or Params())


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes hashed for a request: sorted keys, no whitespace, UTF-8."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(body)).hexdigest()


__all__ = ["WIRES", "Exchange", "Params", "build", "canonical", "request_hash", "resolve"]

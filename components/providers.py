"""The provider table: every model provider callctx knows, one row each, and what the rest of
the package reads from it.

A row names a provider as ``provider:model`` specs and ``--provider`` options spell it, the
wire formats it speaks (``wire``), the client class that calls it (an import path, so this
layer never imports the clients), the rows of ``cache_rules.yaml`` that model its prompt
cache and price its calls, and the words that recognise it in a span written by anyone
(``gen_ai.provider.name`` values such as ``gcp.gemini`` or ``azure.ai.openai``, model names
such as ``claude-…``). Readers: ``callctx.models.resolve`` (the client), ``wire.WIRES`` /
``ALIASES`` / ``resolve`` (the formats), the prices and the debugger page's choices
(``callctx.ui.prices``), and the CLI's ``--provider`` options.

The table is a module constant of frozen records, built at import: safe to read from any
thread. Lookups of an unknown name raise ``KeyError``.
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

Wire = Literal["anthropic", "openai-chat", "openai-responses", "gemini"]
"""A wire format: the JSON body one provider API receives (built by ``callctx.components.wire``)."""

CacheRow = Literal["anthropic", "openai", "openai-explicit", "gemini"]
"""A row of ``cache_rules.yaml``: one prompt-cache model with its prices."""

InputCount = Literal["with-cached", "without-cached"]
"""What the input tokens a provider reports count: its cached tokens too (OpenAI, Gemini), or
only the fresh ones, cache reads and writes reported apart (Anthropic)."""

WIRES: tuple[Wire, ...] = get_args(Wire)


class Provider(msgspec.Struct, frozen=True, kw_only=True):
    """One provider.

    ``wires``: the formats it speaks, its client's default first. ``cache_rows``: the rules
    rows that model its prompt cache, the one simulated by default first. ``prices``: the
    rules row whose prices cost its calls. ``words``: lower-case words that, found in a span's
    provider name (else in its model name), say the call went to this provider. ``offline``:
    no provider behind it (the scripted model): a spec needs no model name, and it speaks
    whatever wire it is given, so it names no wire alias."""

    name: str
    wires: tuple[Wire, ...]
    client: str  # "module:Class", a callctx.models client
    aliases: tuple[str, ...] = ()
    cache_rows: tuple[CacheRow, ...] = ()
    prices: CacheRow | None = None
    input_count: InputCount = "with-cached"
    words: tuple[str, ...] = ()
    offline: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a spec or an option may give it: its own, then its aliases."""
        return (self.name, *self.aliases)


TABLE: tuple[Provider, ...] = (
    Provider(
        name="anthropic",
        wires=("anthropic",),
        client="callctx.models.anthropic:AnthropicMessages",
        aliases=("claude",),
        cache_rows=("anthropic",),
        prices="anthropic",
        input_count="without-cached",
        words=("anthropic", "claude"),
    ),
    Provider(
        name="openai",
        wires=("openai-chat",),
        client="callctx.models.openai:OpenAIChat",
        cache_rows=("openai", "openai-explicit"),
        prices="openai",
        words=("openai", "gpt-"),
    ),
    Provider(
        name="openai-responses",
        wires=("openai-responses",),
        client="callctx.models.openai:OpenAIResponses",
        cache_rows=("openai", "openai-explicit"),
        prices="openai",
        # no words: its calls' spans name the provider "openai", which the row above recognises
    ),
    Provider(
        name="gemini",
        wires=("gemini",),
        client="callctx.models.gemini:Gemini",
        aliases=("google",),
        cache_rows=("gemini",),
        prices="gemini",
        words=("gemini", "google", "vertex"),
    ),
    Provider(
        name="scripted",
        wires=WIRES,
        client="callctx.models.scripted:ScriptedModel",
        offline=True,
    ),
)

_BY_NAME: dict[str, Provider] = {n: p for p in TABLE for n in p.names}

NAMES: tuple[str, ...] = tuple(_BY_NAME)
"""Every provider name and alias a ``provider:model`` spec accepts."""

ALIASES: dict[str, Wire] = {n: p.wires[0] for p in TABLE if not p.offline for n in p.names if n not in WIRES}
"""Provider names and aliases that are not wire names, each to the wire its client speaks."""

WIRE_NAMES: tuple[str, ...] = (*WIRES, *ALIASES)
"""What a ``--provider`` that picks a wire format accepts: the formats, then the aliases."""

SIMULATED: tuple[CacheRow, ...] = tuple(dict.fromkeys(p.cache_rows[0] for p in TABLE if p.cache_rows))
"""Each provider's default cache-rules row, once each in table order: the caches the page simulates."""

CACHE_ROWS: tuple[CacheRow, ...] = tuple(dict.fromkeys(r for p in TABLE for r in p.cache_rows))
"""Every cache-rules row the table maps a provider to, in table order."""


def named(name: str) -> Provider:
    """The provider a spec or option names (its name or an alias). ``KeyError`` when none does."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(NAMES)}") from None


def recognise(provider: str | None, model: str | None = None) -> Provider | None:
    """The provider a span's provider name says (``gcp.gemini``, ``azure.ai.openai``...), else
    its model's name (``claude-…``, ``gpt-…``, ``gemini-…``) when the provider name is not one
    (a gateway, a scripted model). None when neither is."""
    for text in (provider, model):
        t = (text or "").lower()
        for p in TABLE:
            if any(w in t for w in p.words):
                return p
    return None


def cache_row(provider: str | None, model: str | None = None) -> CacheRow | None:
    """The cache-rules row that models the prompt cache of a span's provider (or model) by
    default; None when neither names a provider of the table."""
    p = recognise(provider, model)
    return p.cache_rows[0] if p is not None and p.cache_rows else None


__all__ = [
    "ALIASES",
    "CACHE_ROWS",
    "NAMES",
    "SIMULATED",
    "TABLE",
    "WIRES",
    "WIRE_NAMES",
    "CacheRow",
    "InputCount",
    "Provider",
    "Wire",
    "cache_row",
    "named",
    "recognise",
]

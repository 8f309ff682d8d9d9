"""What a model call cost, from its reported usage and the cache rules' price table.

Conventions: ``input`` is the provider's reported input. Anthropic reports cache reads and
writes apart from it; OpenAI and Gemini count cached tokens inside their prompt total, so for
them the cached part is taken out of ``input`` before pricing it. Output is priced at the
table's ``output_price_per_mtok`` (0 when the table has none). A call whose provider has no
row, or that has no model, has no cost (None).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callctx.components import cache

PROVIDERS = ("anthropic", "openai", "gemini")


def provider_row(provider: str | None, model: str | None = None) -> str | None:
    """The cache-rules row of a span's provider name (``gcp.gemini``, ``azure.ai.openai``...),
    else of its model's name (``claude-…``, ``gpt-…``, ``gemini-…``) when the provider is not
    one (a gateway, a scripted model)."""
    for text in (provider, model):
        t = (text or "").lower()
        for name, words in (("anthropic", ("anthropic", "claude")), ("openai", ("openai", "gpt-")),
                            ("gemini", ("gemini", "google", "vertex"))):  # fmt: skip
            if any(w in t for w in words):
                return name
    return None


class Prices:
    """Prices per provider and model, from the cache rules (the packaged table by default)."""

    def __init__(self, rules: Mapping[str, Any] | None = None) -> None:
        self.rules = rules if rules is not None else cache.load_rules()

    def cost(self, usage: Mapping[str, int], provider: str | None, model: str | None) -> float | None:
        row = provider_row(provider, model)
        if row is None or not model or row not in self.rules:
            return None
        r = self.rules[row]
        price = float(cache.by_model(r.get("price_per_mtok", 0.0), model) or 0.0) / 1e6
        out_price = float(cache.by_model(r.get("output_price_per_mtok", 0.0), model) or 0.0) / 1e6
        read_mult = float(cache.by_model(r.get("read_multiplier", 1.0), model))
        write_mult = float(cache.by_model(r.get("write_multiplier", 1.0), model))
        read, write = usage.get("cache_read", 0), usage.get("cache_write", 0)
        fresh = usage.get("input", 0)
        if row != "anthropic":
            fresh = max(0, fresh - read - write)
        return price * (fresh + read * read_mult + write * write_mult) + out_price * usage.get("output", 0)

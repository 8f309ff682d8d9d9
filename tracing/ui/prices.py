"""What a model call cost, from its reported usage and the cache rules' price table, and the
cache-rules rows the debugger page offers.

Conventions: ``input`` is the provider's reported input. Anthropic reports cache reads and
writes apart from it; OpenAI and Gemini count cached tokens inside their prompt total, so for
them the cached part is taken out of ``input`` before pricing it (each provider's
``input_count`` in the provider table). Output is priced at the table's
``output_price_per_mtok`` (0 when the table has none). A call whose provider has no row, or
that has no model, has no cost (None). Which provider a call went to, and which rows model and
price it, is the provider table's (``callctx.components.providers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from callctx.components import cache, providers

PROVIDERS = providers.SIMULATED
DEFAULT = PROVIDERS[0]  # the cache simulated for a call whose provider is not recognised (a scripted one)


class Prices:
    """Prices per provider and model, from the cache rules (the packaged table by default)."""

    def __init__(self, rules: Mapping[str, Any] | None = None) -> None:
        self.rules = rules if rules is not None else cache.shipped()

    def cost(self, usage: Mapping[str, int], provider: str | None, model: str | None) -> float | None:
        p = providers.recognise(provider, model)
        if p is None or p.prices is None or not model or p.prices not in self.rules:
            return None
        r = self.rules[p.prices]
        price = float(cache.by_model(r.get("price_per_mtok", 0.0), model) or 0.0) / 1e6
        out_price = float(cache.by_model(r.get("output_price_per_mtok", 0.0), model) or 0.0) / 1e6
        read_mult = float(cache.by_model(r.get("read_multiplier", 1.0), model))
        write_mult = float(cache.by_model(r.get("write_multiplier", 1.0), model))
        read, write = usage.get("cache_read", 0), usage.get("cache_write", 0)
        fresh = usage.get("input", 0)
        if p.input_count == "with-cached":
            fresh = max(0, fresh - read - write)
        return price * (fresh + read * read_mult + write * write_mult) + out_price * usage.get("output", 0)

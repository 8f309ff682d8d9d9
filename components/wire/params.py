"""Request parameters other than the content: model name and sampling knobs."""

from __future__ import annotations

import msgspec


class Params(msgspec.Struct, frozen=True, omit_defaults=True):
    model: str = ""
    max_tokens: int | None = None
    temperature: float | None = None

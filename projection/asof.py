"""The call tree as it stood at a moment: what a span saw when it started (see
:meth:`callctx.projection.Projection.as_seen_by` for the rule)."""

from __future__ import annotations

from collections.abc import Iterable

from .events import Record
from .fold import Projection


def tree_as_seen_by(records: Iterable[Record], span_id: str, *, render_range: int | None = None) -> str:
    """The call tree (YAML) exactly as ``span_id`` saw it when it started."""
    return Projection.as_seen_by(records, span_id).view(span_id, render_range=render_range).text

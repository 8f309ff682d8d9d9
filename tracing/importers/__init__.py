"""Trace stores as a source: spans pulled from a running Arize Phoenix (``phoenix``) or Jaeger v2
(``jaeger``) into an event log (``callctx import --from phoenix|jaeger``). What to pull is a
:class:`Query`; an unreachable store, or an answer its API does not document, raises
:class:`StoreError`; spans that cannot be read are counted as rejected, the rest kept."""

from .jaeger import jaeger
from .phoenix import phoenix, phoenix_span
from .query import Query, StoreError

__all__ = ["Query", "StoreError", "jaeger", "phoenix", "phoenix_span"]

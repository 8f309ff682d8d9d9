"""Trace stores as a source: spans pulled from a running Arize Phoenix or Jaeger v2 into an
event log (``callctx import --from phoenix|jaeger``)."""

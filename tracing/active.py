"""Which runtime the decorated functions report to.

``setup()`` makes its runtime the active one. Before any ``setup()``, decorated functions
still make spans, through the global OpenTelemetry tracer, so a program that configured
OpenTelemetry itself sees them in its own pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace

if TYPE_CHECKING:
    from .runtime import Runtime

SCOPE = "callctx"

runtime: Runtime | None = None
fallback = trace.get_tracer(SCOPE)

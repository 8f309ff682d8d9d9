"""The ``opentelemetry_post_instrument`` entry point: programs run under
``opentelemetry-instrument`` get the call tree with no code change."""

from __future__ import annotations

import logging

from callctx.engine.runtime import setup

log = logging.getLogger(__name__)


def instrument() -> None:
    """Runs after ``opentelemetry-instrument`` set up the SDK: adds the projection processor to
    the provider it configured (log from ``$CALLCTX_LOG``). Never raises into the program."""
    try:
        setup()
    except Exception:
        log.exception("callctx: could not attach the call tree to the instrumented program")

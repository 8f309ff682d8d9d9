"""The active runtime: the one ``@agentic`` functions and ``Agent`` methods report to.

This module is its only owner: ``setup()`` makes a runtime active with :func:`activate`,
``Runtime.close()`` gives the place up with :func:`deactivate`, and everything else reads it
with :func:`current`. Before any ``setup()``, decorated functions still make spans through
the global OpenTelemetry tracer, so a program that configured OpenTelemetry itself sees
them in its own pipeline. Reads and writes are single reference assignments: safe from any
thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Tracer

log = logging.getLogger(__name__)

SCOPE = "callctx"


class ActiveRuntime(Protocol):
    """What decorated functions and agents need from the runtime they report to."""

    tracer: Tracer
    session_id: str | None

    def exec(
        self,
        prompt: str,
        *,
        schema: Any = None,
        tools: Sequence[Callable[..., Any]] = (),
        position: str | None = None,
        output: str | None = None,
        attachments: Sequence[Any] = (),
        agent: Any = None,
        stream: Callable[[str], None] | None = None,
    ) -> Any: ...

    async def aexec(
        self,
        prompt: str,
        *,
        schema: Any = None,
        tools: Sequence[Callable[..., Any]] = (),
        position: str | None = None,
        output: str | None = None,
        attachments: Sequence[Any] = (),
        agent: Any = None,
        stream: Callable[[str], Any] | None = None,
    ) -> Any: ...


_runtime: ActiveRuntime | None = None
fallback: Tracer = trace.get_tracer(SCOPE)


def current() -> ActiveRuntime | None:
    """The active runtime, or None before ``setup()``."""
    return _runtime


def activate(runtime: ActiveRuntime) -> None:
    global _runtime
    if _runtime is not None and _runtime is not runtime:
        log.info("callctx: a new runtime replaces the active one")
    _runtime = runtime


def deactivate(runtime: ActiveRuntime) -> None:
    """Give the place up, if ``runtime`` still holds it."""
    global _runtime
    if _runtime is runtime:
        _runtime = None

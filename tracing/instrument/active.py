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
from typing import Any, Protocol, TypedDict, Unpack

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Tracer

from callctx.components.inputs import Attachment

log = logging.getLogger(__name__)

SCOPE = "callctx"


class AgentOptions(TypedDict, total=False):
    """What an agent's ``exec`` / ``aexec`` take besides the prompt (``Runtime.exec`` says
    what each does)."""

    schema: Any  # a msgspec type or Struct the output must fit
    tools: Sequence[Callable[..., Any]]
    position: str | None
    output: str | None
    attachments: Sequence[Attachment]
    stream: Callable[[str], Any] | None
    model: Any  # a model client or ``provider:model``: this call's model, over the agent's and the runtime's


class ExecOptions(AgentOptions, total=False):
    """What ``Runtime.exec`` / ``aexec`` take besides the prompt: an agent's options, and the
    agent asking."""

    agent: Any


class ActiveRuntime(Protocol):
    """What decorated functions and agents need from the runtime they report to."""

    tracer: Tracer
    session_id: str | None

    def start_span(self, name: str, attributes: dict[str, Any], context: Context | None = None) -> Span:
        """A span of ``tracer`` with attributes callctx built (a fresh dict of strings and numbers)."""
        ...

    def exec(self, prompt: str, **options: Unpack[ExecOptions]) -> Any: ...

    async def aexec(self, prompt: str, **options: Unpack[ExecOptions]) -> Any: ...


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

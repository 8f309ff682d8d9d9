"""``setup()`` and the ``Runtime`` it returns: the projection, its log and the tracer feeding them.

``setup`` joins the TracerProvider the program already has (so spans from other
instrumentations fold into the same tree) or creates one, and adds the projection processor
to it, synchronous, never behind a batch processor.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from projection import Projection
from projection.fold import DEFAULT_OUTPUT_LIMIT
from projection.log import EventLog, FsyncPolicy

from . import active
from .processor import ProjectionProcessor

log = logging.getLogger("callctx.runtime")

LOG_ENV = "CALLCTX_LOG"


class Runtime:
    """One agent program's view of its own execution: the live call tree and its log."""

    def __init__(
        self,
        provider: TracerProvider,
        projection: Projection,
        processor: ProjectionProcessor,
        *,
        session_id: str | None = None,
        owns_provider: bool = False,
    ) -> None:
        self.provider = provider
        self.projection = projection
        self.processor = processor
        self.session_id = session_id
        self.owns_provider = owns_provider
        self.tracer = provider.get_tracer(active.SCOPE)
        self._closed = False

    @property
    def log_path(self) -> Path | None:
        return self.processor.log.path if self.processor.log is not None else None

    def current_span_id(self) -> str | None:
        """Hex id of the current span, or None outside any span."""
        ctx = trace.get_current_span().get_span_context()
        return format(ctx.span_id, "016x") if ctx.is_valid else None

    def call_tree(self, *, render_range: int | None = None) -> str:
        """The call tree (YAML) as the current call sees it.

        Outside any call: the tree of this runtime's session, or ``""`` when there is none.
        """
        span_id = self.current_span_id()
        if span_id is not None and span_id in self.projection.nodes:
            return self.projection.tree(span_id, render_range=render_range)
        if self.session_id is not None and self.session_id in self.projection.trees:
            return self.projection.session_tree(self.session_id, render_range=render_range)
        return ""

    def close(self) -> None:
        """Flush and close the log; shuts the provider down if this runtime created it."""
        if self._closed:
            return
        self._closed = True
        if active.runtime is self:
            active.runtime = None
        if self.owns_provider:
            self.provider.shutdown()
        else:
            self.processor.shutdown()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def setup(
    log_path: str | os.PathLike[str] | None = None,
    *,
    provider: TracerProvider | None = None,
    session_id: str | None = None,
    fsync: FsyncPolicy = "never",
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
) -> Runtime:
    """Start recording agentic calls; returns the active :class:`Runtime`.

    ``log_path`` (default: ``$CALLCTX_LOG``, else no log) is the append-only event log the
    tree can be rebuilt from. ``provider``: the TracerProvider to join; by default the global
    one when it is an SDK provider, else a new one that becomes the global provider.
    ``session_id`` groups every root call of this runtime into one tree
    (``gen_ai.conversation.id``).
    """
    path = log_path if log_path is not None else os.environ.get(LOG_ENV) or None
    event_log = EventLog(path, fsync=fsync) if path else None
    projection = Projection(output_limit=output_limit)
    processor = ProjectionProcessor(projection, event_log)

    owns = False
    if provider is None:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider) and not getattr(current, "_callctx_owned", False):
            provider = current
        else:
            provider = TracerProvider(resource=Resource.create())
            provider._callctx_owned = True  # type: ignore[attr-defined]
            owns = True
            if not isinstance(current, TracerProvider):
                trace.set_tracer_provider(provider)
    provider.add_span_processor(processor)

    rt = Runtime(provider, projection, processor, session_id=session_id, owns_provider=owns)
    previous = active.runtime
    if previous is not None and not previous._closed:
        log.info("callctx: a new runtime replaces the active one")
    active.runtime = rt
    return rt

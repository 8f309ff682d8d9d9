"""The call tree as it stood at a moment: what a span saw when it started.

A log written in process is in time order, so "when span S started" is "right after S's
start record". A log of received spans is not: a span arrives whole (its start and its end
together, often after its children), so the moment is taken from the clocks instead. Both
reduce to one rule, applied here: a span counts as started if it started no later than S
(by start time, then span id), as ended if it ended no later than S started and is not S or
one of S's ancestors (they are running while S runs). Collapses of the tree (which carry no
clock) count if the log wrote them before S's start record.
"""

from __future__ import annotations

from collections.abc import Iterable

from .events import Collapsed, Record, SpanEnded, SpanStarted
from .fold import Projection


def fold_as_seen_by(records: Iterable[Record], span_id: str) -> Projection:
    """A projection of ``records`` as they stood when ``span_id`` started; raises
    ``KeyError`` when no record starts that span."""
    records = list(records)
    starts: dict[str, SpanStarted] = {}
    viewer_at = -1
    for i, r in enumerate(records):
        if type(r) is SpanStarted and r.span_id not in starts:
            starts[r.span_id] = r
            if r.span_id == span_id:
                viewer_at = i
    viewer = starts.get(span_id)
    if viewer is None:
        raise KeyError(f"unknown span {span_id!r}")
    moment = (viewer.start_ns, viewer.span_id)
    running: set[str] = set()
    sid: str | None = span_id
    while sid is not None and sid in starts and sid not in running:
        running.add(sid)
        sid = starts[sid].parent_id
    proj = Projection()
    for i, r in enumerate(records):
        t = type(r)
        if t is SpanStarted:
            if (r.start_ns, r.span_id) <= moment:  # type: ignore[union-attr]
                proj.apply_locked(r)
        elif t is SpanEnded:
            if r.span_id not in running and r.end_ns <= viewer.start_ns and r.span_id in starts:  # type: ignore[union-attr]
                proj.apply_locked(r)
        elif t is Collapsed and i < viewer_at:
            proj.apply_locked(r)
    return proj


def tree_as_seen_by(records: Iterable[Record], span_id: str, *, render_range: int | None = None) -> str:
    """The call tree (YAML) exactly as ``span_id`` saw it when it started."""
    return fold_as_seen_by(records, span_id).view(span_id, render_range=render_range).text

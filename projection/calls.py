"""The model calls a log recorded: each ``chat`` span with the manifest of what it was sent,
and the texts the manifests point to."""

from __future__ import annotations

import os
from typing import Any, Literal

import msgspec

from . import schema as s
from .events import Blob, SpanEnded, SpanStarted
from .log import Damage, read_log


class ModelCall(msgspec.Struct):
    """One model call, numbered from 1 in the order the calls started."""

    index: int
    trace_id: str
    span_id: str
    parent_id: str | None
    start_ns: int
    provider: str | None = None
    model: str | None = None
    function: str | None = None
    call_path: str | None = None
    manifest: str | None = None
    status: Literal["running", "ok", "error"] = "running"
    error: str | None = None
    usage: dict[str, int] = msgspec.field(default_factory=dict)


_USAGE = {
    s.USAGE_INPUT: "input",
    s.USAGE_OUTPUT: "output",
    s.USAGE_CACHE_READ: "cache_read",
    s.USAGE_CACHE_WRITE: "cache_write",
}


def _is_chat(attrs: dict[str, Any]) -> bool:
    return attrs.get(s.OPERATION) == s.OP_CHAT


def read_calls(
    path: str | os.PathLike[str], *, damage: list[Damage] | None = None
) -> tuple[list[ModelCall], dict[str, str]]:
    """(the model calls, the stored texts by hash) of a log."""
    calls: dict[str, ModelCall] = {}
    ended: dict[str, SpanEnded] = {}
    blobs: dict[str, str] = {}
    for rec in read_log(path, damage=damage):
        t = type(rec)
        if t is Blob:
            blobs[rec.hash] = rec.text
        elif t is SpanStarted:
            a = rec.attributes
            if _is_chat(a) and rec.span_id not in calls:
                calls[rec.span_id] = ModelCall(
                    index=0,
                    trace_id=rec.trace_id,
                    span_id=rec.span_id,
                    parent_id=rec.parent_id,
                    start_ns=rec.start_ns,
                    provider=a.get(s.PROVIDER),
                    model=a.get(s.REQUEST_MODEL),
                    function=a.get(s.FUNCTION),
                    call_path=a.get(s.CALL_PATH),
                    manifest=a.get(s.CONTEXT),
                )
        elif t is SpanEnded:
            ended.setdefault(rec.span_id, rec)
    out = sorted(calls.values(), key=lambda c: (c.start_ns, c.span_id))
    for i, call in enumerate(out, start=1):
        call.index = i
        end = ended.get(call.span_id)
        if end is not None:
            call.status = "error" if end.status == "error" else "ok"
            call.error = end.error
            call.usage = {short: int(end.attributes[key]) for key, short in _USAGE.items() if key in end.attributes}
    return out, blobs

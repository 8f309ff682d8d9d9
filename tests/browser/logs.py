"""Event logs for the page's browser tests: the demo's, and a session of ten thousand calls
made of copies of it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from callctx import setup
from callctx.cli.research_agent import run
from callctx.projection.events import Blob, LogHeader, SpanEnded, SpanStarted, encode
from callctx.projection.log_reader import read_log


def demo_log(folder: Path) -> Path:
    """The demo's event log (11 calls in session ``demo``)."""
    path = folder / "events.jsonl"
    rt = setup(path, session_id="demo")
    run(rt)
    rt.close()
    return path


def _id(old: str, copy: int) -> str:
    return hashlib.sha256(f"{copy}:{old}".encode()).hexdigest()[: len(old)]


def many_calls(source: Path, target: Path, calls: int) -> int:
    """Write ``target``: the traces of ``source`` copied (new trace and span ids, later start
    times, the same session and texts) until it holds at least ``calls`` model calls. Returns
    how many it holds."""
    records = list(read_log(source))
    spans = [r for r in records if type(r) in (SpanStarted, SpanEnded)]
    per_copy = sum(1 for r in spans if type(r) is SpanStarted and r.name.startswith("chat"))
    first = min(r.start_ns for r in spans if type(r) is SpanStarted)
    last = max(r.end_ns for r in spans if type(r) is SpanEnded)
    step = last - first + 1_000
    copies = -(-calls // per_copy)
    with open(target, "wb") as f:
        f.writelines(encode(r) for r in records if type(r) in (LogHeader, Blob))
        for k in range(copies):
            shift = k * step
            for r in spans:
                changes = {"trace_id": _id(r.trace_id, k), "span_id": _id(r.span_id, k)}
                if type(r) is SpanStarted:
                    changes["start_ns"] = r.start_ns + shift
                    changes["parent_id"] = _id(r.parent_id, k) if r.parent_id else None
                else:
                    changes["end_ns"] = r.end_ns + shift
                f.write(encode(msgspec.structs.replace(r, **changes)))
    return copies * per_copy

"""What to pull from a trace store (a trace, a session, a time range), how it is fetched, and
the one error an unreachable or misbehaving store gives."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime

import msgspec

from callctx.projection.batch import Batch
from callctx.projection.dialects import conversation
from callctx.projection.errors import CallctxError

PAGE = 1000


class StoreError(CallctxError, RuntimeError):
    """The trace store could not be reached, or answered in a shape its API does not document."""


class Query(msgspec.Struct, frozen=True):
    """Which spans to pull: a trace, a session, or those that started within a time range."""

    trace_id: str | None = None
    session_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    service: str | None = None  # Jaeger searches by service

    def select(self, batch: Batch) -> Batch:
        """The spans asked for: those of the trace, or of every trace in which a span names the
        session (spans under a session's calls, model calls say, often do not name it); the
        rejected as they were."""
        spans = batch.spans
        if self.trace_id is not None:
            spans = [r for r in spans if r.trace_id == self.trace_id.lower()]
        if self.session_id is not None:
            traces = {r.trace_id for r in spans if conversation(r.started.attributes) == self.session_id}
            spans = [r for r in spans if r.trace_id in traces]
        return Batch(spans, batch.rejected, batch.errors)


def fetch(url: str, token: str | None, timeout: float) -> bytes:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return b""
        raise StoreError(f"{url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        raise StoreError(f"cannot reach {url}: {getattr(e, 'reason', e)}") from None

"""A failed span's one-line error: the SDK's ``Type: message`` for an exception without a
message ends at the type, with no dangling colon."""

from __future__ import annotations

import pytest

from callctx.projection.events import SpanEnded
from callctx.projection.log_reader import read_log


@pytest.mark.parametrize("error", [ValueError(), TimeoutError(""), KeyError("k")])
def test_an_exception_without_a_message_reads_as_its_type(runtime, error):
    tracer = runtime.provider.get_tracer("user code")
    with pytest.raises(type(error)), tracer.start_as_current_span("work"):
        raise error
    runtime.flush()
    (ended,) = [r for r in read_log(runtime.log_path) if isinstance(r, SpanEnded)]
    name = type(error).__name__
    assert ended.status == "error"
    assert ended.error == (f"{name}: 'k'" if isinstance(error, KeyError) else name)

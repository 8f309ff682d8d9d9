"""The in-process processor records the OTLP span kind the SDK's own OTLP encoder sends, and
leaves the default (internal) out of the log."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from callctx.projection import otlp, read_log
from callctx.projection.events import SpanStarted
from callctx.projection.spans import from_log


def test_kinds_in_the_log_are_what_the_otlp_exporter_sends(runtime):
    exporter = InMemorySpanExporter()
    runtime.provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = runtime.provider.get_tracer("kinds")
    for kind in SpanKind:
        with tracer.start_as_current_span(f"span {kind.name}", kind=kind):
            pass
    runtime.close()
    request = encode_spans(exporter.get_finished_spans())
    sent = {r.started.name: r.started.kind for r in otlp.decode_request(request).spans}
    logged = {r.name: r.kind for r in read_log(runtime.log_path) if type(r) is SpanStarted}
    assert logged == sent == {"span INTERNAL": 1, "span SERVER": 2, "span CLIENT": 3, "span PRODUCER": 4,
                              "span CONSUMER": 5}  # fmt: skip
    lines = [line for line in runtime.log_path.read_bytes().splitlines() if b'"e":"start"' in line]
    assert [b'"kind"' in line for line in lines] == [False, True, True, True, True]  # internal: the default
    assert {s.name: s.kind for s in from_log(runtime.log_path)} == sent

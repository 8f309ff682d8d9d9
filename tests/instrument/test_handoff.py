"""Spans callctx starts hand their attributes to the projection's processor directly when no
sampler, processor or limit can tell; every reader sees the same attributes either way."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision, Sampler, SamplingResult

from callctx import agentic, setup
from callctx.projection import schema as s
from callctx.projection.events import SpanStarted
from callctx.projection.log_reader import read_log as read_records

TEXT = "a long argument " * 20


class Peek:
    """A processor that keeps the attributes each span has when it starts and when it ends."""

    def __init__(self) -> None:
        self.started: list[dict] = []
        self.ended: list[dict] = []

    def on_start(self, span, parent_context=None):
        self.started.append(dict(span.attributes))

    def on_end(self, span):
        self.ended.append(dict(span.attributes))

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=0):
        return True


class ByInput(Sampler):
    """Samples only spans whose input mentions "keep": a sampler that reads attributes."""

    def __init__(self) -> None:
        self.seen: list[dict] = []

    def should_sample(self, parent_context, trace_id, name, kind=None, attributes=None, links=None, trace_state=None):
        self.seen.append(dict(attributes or {}))
        keep = "keep" in str((attributes or {}).get(s.INPUT_VALUE, ""))
        return SamplingResult(Decision.RECORD_AND_SAMPLE if keep else Decision.DROP, attributes)

    def get_description(self):
        return "ByInput"


@agentic
def echo(text: str) -> str:
    return text.upper()


def _started(path):
    return [r.attributes for r in read_records(path) if isinstance(r, SpanStarted)]


def _run(tmp_path, provider):
    rt = setup(tmp_path / "events.jsonl", provider=provider)
    spans = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    try:
        echo(TEXT)
        rt.flush()
    finally:
        rt.close()
    return spans.get_finished_spans(), _started(tmp_path / "events.jsonl")


@pytest.mark.parametrize("sampler", [None, ALWAYS_ON], ids=["default", "always-on"])
def test_handed_attributes_reach_the_log_and_every_exporter(tmp_path, sampler):
    provider = TracerProvider(sampler=sampler) if sampler is not None else TracerProvider()
    (span,), (logged,) = _run(tmp_path, provider)
    assert span.attributes[s.INPUT_VALUE] == f'{{"text":"{TEXT}"}}'
    assert span.attributes[s.OUTPUT_VALUE] == TEXT.upper()
    assert logged == {k: v for k, v in span.attributes.items() if k not in (s.OUTPUT_VALUE, s.OUTPUT_MIME)}


def test_a_sampler_that_reads_attributes_still_gets_them(tmp_path):
    sampler = ByInput()
    provider = TracerProvider(sampler=sampler)
    rt = setup(tmp_path / "events.jsonl", provider=provider)
    try:
        echo("keep this one")
        echo("drop this one")
        rt.flush()
    finally:
        rt.close()
    assert [a[s.INPUT_VALUE] for a in sampler.seen] == ['{"text":"keep this one"}', '{"text":"drop this one"}']
    assert [a[s.INPUT_VALUE] for a in _started(tmp_path / "events.jsonl")] == ['{"text":"keep this one"}']


def test_a_processor_before_ours_sees_the_attributes_at_the_start(tmp_path):
    provider = TracerProvider()
    first = Peek()
    provider.add_span_processor(first)
    _run(tmp_path, provider)
    assert first.started[0][s.INPUT_VALUE] == f'{{"text":"{TEXT}"}}'


def test_an_attribute_limit_cuts_what_the_span_and_the_log_hold_alike(tmp_path):
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=12))
    (span,), (logged,) = _run(tmp_path, provider)
    assert span.attributes[s.INPUT_VALUE] == '{"text":"a l'
    assert logged[s.INPUT_VALUE] == '{"text":"a l'


def test_the_handed_attributes_are_the_starting_spans_alone(tmp_path):
    """A span another processor starts inside ``on_start`` gets none of them."""
    provider = TracerProvider()
    rt = setup(tmp_path / "events.jsonl", provider=provider)
    inner: list[dict] = []

    class StartsAnother(Peek):
        def on_start(self, span, parent_context=None):
            if span.name.startswith("invoke_agent"):
                with provider.get_tracer("other").start_as_current_span("side") as side:
                    inner.append(dict(side.attributes))

    provider.add_span_processor(StartsAnother())
    try:
        assert echo("x") == "X"
        rt.flush()
    finally:
        rt.close()
    assert inner == [{}]
    starts = {r.name: r.attributes for r in read_records(tmp_path / "events.jsonl") if isinstance(r, SpanStarted)}
    assert starts["side"] == {} and starts["invoke_agent echo"][s.INPUT_VALUE] == '{"text":"x"}'


def test_which_samplers_decide_without_attributes():
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased

    from callctx.instrument.processor import blind

    assert blind(TracerProvider().sampler) and blind(ALWAYS_ON) and blind(ALWAYS_OFF)
    assert blind(TraceIdRatioBased(0.5)) and blind(ParentBased(TraceIdRatioBased(0.5)))
    assert not blind(ByInput()) and not blind(ParentBased(ByInput()))
    assert not blind(ParentBased(ALWAYS_ON, local_parent_sampled=ByInput()))

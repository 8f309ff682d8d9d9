"""@agentic on every kind of function: spans, io, errors, generators, methods, options."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import pytest
from helpers.trees import parse
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from callctx import Agent, agentic
from callctx.projection import schema as s


@pytest.fixture
def spans(runtime):
    exporter = InMemorySpanExporter()
    runtime.provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


def by_name(exporter, name):
    return [sp for sp in exporter.get_finished_spans() if sp.name == name]


def test_sync_span_schema(runtime, spans):
    @agentic(position="step 1", output="parsed into a decision")
    def decide(topic: str, n: int = 3) -> dict:
        """Pick an action. More text here."""
        return {"action": "go"}

    assert decide("agents", n=2) == {"action": "go"}
    (sp,) = by_name(spans, "invoke_agent decide")
    a = sp.attributes
    assert a[s.OPERATION] == "invoke_agent" and a[s.AGENT_NAME] == "decide" and a[s.SPAN_KIND] == "AGENT"
    assert json.loads(a[s.INPUT_VALUE]) == {"topic": "agents", "n": 2}
    assert a[s.INPUT_MIME] == "application/json"
    assert json.loads(a[s.OUTPUT_VALUE]) == {"action": "go"}
    assert a[s.DOC] == "Pick an action. More text here."
    assert a[s.POSITION] == "step 1" and a[s.OUTPUT_CONTRACT] == "parsed into a decision"
    assert len(a) < 128


def test_identity_and_input_set_at_creation(runtime):
    seen = []

    class Peek:
        def on_start(self, span, parent_context=None):
            seen.append(dict(span.attributes))

        def on_end(self, span):
            pass

        def shutdown(self):
            pass

        def force_flush(self, timeout_millis=0):
            return True

    runtime.provider.add_span_processor(Peek())

    @agentic
    def f(x):
        return x

    f(41)
    start = next(a for a in seen if a.get(s.AGENT_NAME) == "f")
    assert start[s.INPUT_VALUE] == '{"x":41}'
    assert s.OUTPUT_VALUE not in start


def test_text_output_stays_text(runtime, spans):
    @agentic
    def write() -> str:
        return "line one\nline two"

    write()
    (sp,) = by_name(spans, "invoke_agent write")
    assert sp.attributes[s.OUTPUT_VALUE] == "line one\nline two"
    assert sp.attributes[s.OUTPUT_MIME] == "text/plain"


def test_unknown_types_fall_back_to_repr(runtime, spans):
    class Thing:
        def __repr__(self):
            return "<Thing 7>"

    @agentic
    def use(thing, items):
        return Thing()

    use(Thing(), items={1, 2})
    (sp,) = by_name(spans, "invoke_agent use")
    assert json.loads(sp.attributes[s.INPUT_VALUE])["thing"] == "<Thing 7>"
    assert json.loads(sp.attributes[s.OUTPUT_VALUE]) == "<Thing 7>"


def test_methods_drop_self_and_name_the_agent(runtime, spans):
    class Researcher(Agent):
        @agentic
        def plan(self, goal):
            return goal.upper()

    r = Researcher()
    assert r.plan("x") == "X"
    (sp,) = by_name(spans, "invoke_agent plan")
    assert json.loads(sp.attributes[s.INPUT_VALUE]) == {"goal": "x"}
    assert sp.attributes[s.AGENT] == "researcher"


def test_exception_marks_error_and_passes_unchanged(runtime, spans):
    class Boom(Exception):
        pass

    err = Boom("bad thing\nsecond line")

    @agentic
    def fails():
        raise err

    with pytest.raises(Boom) as info:
        fails()
    assert info.value is err
    (sp,) = by_name(spans, "invoke_agent fails")
    assert sp.status.status_code is StatusCode.ERROR
    assert sp.status.description == "Boom: bad thing"
    assert [e.name for e in sp.events] == ["exception"]


def test_error_node_in_tree(runtime):
    seen = {}

    @agentic
    def fails():
        raise ValueError("no route to the model")

    @agentic
    def parent():
        with contextlib.suppress(ValueError):
            fails()
        seen["tree"] = runtime.call_tree()

    parent()
    tree = parse(seen["tree"])
    assert tree[0]["children"] == [
        {"function": "fails", "status": "error", "error": "ValueError: no route to the model"}
    ]


def test_instrumentation_failure_never_reaches_the_function(runtime, caplog):
    class Broken:
        def start_span(self, *a, **k):
            raise RuntimeError("tracer exploded")

    runtime.tracer = Broken()

    @agentic
    def f(x):
        return x * 2

    with caplog.at_level(logging.ERROR, logger="callctx.instrument.decorator"):
        assert f(21) == 42
    assert "running it untraced" in caplog.text


def test_processor_failure_is_logged_not_raised(runtime, caplog):
    def explode(event):
        raise RuntimeError("fold exploded")

    runtime.projection.apply_locked = explode

    @agentic
    def f():
        return 1

    with caplog.at_level(logging.ERROR, logger="callctx.instrument.processor"):
        assert f() == 1
    assert "could not record" in caplog.text


def test_summarize_failure_costs_only_the_summary(runtime, spans):
    @agentic(summarize=lambda out: 1 / 0)
    def f():
        return "ok"

    assert f() == "ok"
    (sp,) = by_name(spans, "invoke_agent f")
    assert s.SUMMARY not in sp.attributes and sp.attributes[s.OUTPUT_VALUE] == "ok"


def test_capture_io_false(runtime, spans):
    @agentic(capture_io=False)
    def secret(password):
        return "token"

    secret("hunter2")
    (sp,) = by_name(spans, "invoke_agent secret")
    assert s.INPUT_VALUE not in sp.attributes and s.OUTPUT_VALUE not in sp.attributes


def test_options_are_validated_at_decoration():
    with pytest.raises(ValueError, match="expose"):
        agentic(expose="everything")(lambda: None)
    with pytest.raises(ValueError, match="render_range"):
        agentic(render_range=-1)(lambda: None)


def test_name_option(runtime, spans):
    @agentic(name="planner")
    def f():
        return None

    f()
    assert by_name(spans, "invoke_agent planner")


def test_async(runtime, spans):
    @agentic
    async def fetch(x):
        await asyncio.sleep(0)
        return x + 1

    assert asyncio.run(fetch(1)) == 2
    (sp,) = by_name(spans, "invoke_agent fetch")
    assert sp.attributes[s.OUTPUT_VALUE] == "2"


def test_async_exception(runtime, spans):
    @agentic
    async def fetch():
        raise KeyError("k")

    with pytest.raises(KeyError):
        asyncio.run(fetch())
    (sp,) = by_name(spans, "invoke_agent fetch")
    assert sp.status.status_code is StatusCode.ERROR


def _current_name():
    span = trace.get_current_span()
    return getattr(span, "name", None)


def test_generator_span_covers_iteration_without_leaking(runtime, spans):
    inside = []

    @agentic
    def numbers(n):
        for i in range(n):
            inside.append(_current_name())
            yield i

    @agentic
    def consumer():
        outside = []
        for _ in numbers(3):
            outside.append(_current_name())
        return outside

    outside = consumer()
    assert inside == ["invoke_agent numbers"] * 3
    assert outside == ["invoke_agent consumer"] * 3  # the generator's span never leaks across a yield
    (gen,) = by_name(spans, "invoke_agent numbers")
    (cons,) = by_name(spans, "invoke_agent consumer")
    assert gen.parent.span_id == cons.context.span_id
    assert json.loads(gen.attributes[s.OUTPUT_VALUE]) == [0, 1, 2]
    assert gen.end_time <= cons.end_time


def test_generator_break_ends_span(runtime, spans):
    closed = []

    @agentic
    def numbers():
        try:
            yield from range(100)
        finally:
            closed.append(True)

    for x in numbers():
        if x == 2:
            break
    (sp,) = by_name(spans, "invoke_agent numbers")  # ended by the break (close on collection)
    assert closed == [True]
    assert sp.status.status_code is not StatusCode.ERROR
    assert json.loads(sp.attributes[s.OUTPUT_VALUE]) == [0, 1, 2]


def test_generator_send_and_throw(runtime, spans):
    @agentic
    def echo():
        got = []
        try:
            while True:
                x = yield len(got)
                got.append(x)
        except ValueError:
            yield "caught"

    g = echo()
    assert next(g) == 0
    assert g.send("a") == 1
    assert g.throw(ValueError("v")) == "caught"
    g.close()
    assert by_name(spans, "invoke_agent echo")


def test_generator_exception_marks_error(runtime, spans):
    @agentic
    def bad():
        yield 1
        raise RuntimeError("mid-stream")

    with pytest.raises(RuntimeError):
        list(bad())
    (sp,) = by_name(spans, "invoke_agent bad")
    assert sp.status.status_code is StatusCode.ERROR


def test_async_generator_and_aclose(runtime, spans):
    inside = []

    @agentic
    async def stream(n):
        for i in range(n):
            inside.append(_current_name())
            yield i

    @agentic
    async def consumer():
        outside = []
        async for _ in stream(3):
            outside.append(_current_name())
        agen = stream(10)
        async for x in agen:
            if x == 1:
                break
        await agen.aclose()
        return outside

    outside = asyncio.run(consumer())
    assert outside == ["invoke_agent consumer"] * 3
    assert set(inside) == {"invoke_agent stream"}
    streams = by_name(spans, "invoke_agent stream")
    assert len(streams) == 2
    assert sorted(json.loads(sp.attributes[s.OUTPUT_VALUE]) for sp in streams) == [[0, 1], [0, 1, 2]]


def test_without_setup_functions_still_run():
    from callctx.instrument import active

    saved = active.current()
    active.deactivate(saved)
    try:

        @agentic
        def f(x):
            return x

        assert f(3) == 3
    finally:
        active.activate(saved)

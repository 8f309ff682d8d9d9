"""OTLP protobuf straight to the fold's records (``callctx.projection.otlp_events``): the same
records, byte for byte, as decoding to SpanData and then ``to_records``; the same spans rejected
for the same reasons."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from callctx.projection import otlp, otlp_events
from callctx.projection.events import encode
from callctx.projection.spans import BLOB_EVENT, INTERRUPTED, to_records

TRACE = bytes.fromhex("ab" * 16)


def old_records(req: ExportTraceServiceRequest) -> tuple[list, int, list[str]]:
    """What the receiver made of a request before: SpanData first, then its records."""
    decoded = otlp.decode_request(req)
    return [rec for sp in decoded.spans for rec in to_records(sp)], decoded.rejected, decoded.errors


def assert_same(req: ExportTraceServiceRequest) -> otlp_events.Batch:
    records, rejected, errors = old_records(req)
    batch = otlp_events.decode_request(req)
    got = otlp_events.records(batch)
    assert got == records
    assert [encode(r) for r in got] == [encode(r) for r in records]
    assert (batch.rejected, batch.errors) == (rejected, errors)
    assert batch.message == otlp.Decoded([], rejected, errors).message
    # and the facts the index lists besides
    old = otlp.decode_request(req).spans
    assert [(r.span_id, r.trace_id, r.start_ns, r.end_ns, r.status, r.error) for r in batch.spans] == [
        (sp.span_id, sp.trace_id, sp.start_ns, sp.end_ns, sp.status, sp.error) for sp in old
    ]
    return batch


def set_value(v: AnyValue, value) -> None:
    if isinstance(value, bool):
        v.bool_value = value
    elif isinstance(value, int):
        v.int_value = value
    elif isinstance(value, float):
        v.double_value = value
    elif isinstance(value, bytes):
        v.bytes_value = value
    elif isinstance(value, str):
        v.string_value = value
    elif isinstance(value, list):
        v.array_value.SetInParent()
        for x in value:
            set_value(v.array_value.values.add(), x)
    elif isinstance(value, dict):
        v.kvlist_value.SetInParent()
        for k, x in value.items():
            kv = v.kvlist_value.values.add()
            kv.key = k
            set_value(kv.value, x)
    # None: the value is left unset


def put(target, attrs) -> None:
    for key, value in attrs:
        kv = target.add()
        kv.key = key
        set_value(kv.value, value)


def nested(depth: int):
    value = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def blob_event(span, text: str, *, good: bool = True) -> None:
    ev = span.events.add()
    ev.name = BLOB_EVENT
    ev.time_unix_nano = 5
    h = hashlib.sha256(text.encode()).hexdigest() if good else "0" * 64
    put(ev.attributes, [("hash", h), ("text", text)])


def varied_request() -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    put(rs.resource.attributes, [("service.name", "svc"), ("host.cpus", 4), ("labels", ["a", "b"])])
    ss = rs.scope_spans.add()
    ss.scope.name = "scope-a"
    every_type = [
        ("s", "text"), ("empty", ""), ("b", True), ("f", False), ("i", -(1 << 63)), ("big", (1 << 63) - 1),
        ("d", 2.5), ("nan-ish", float("inf")), ("raw", b"\x00\xffbytes"), ("arr", [1, "two", [3.0, False]]),
        ("map", {"k": {"deeper": [1, 2]}, "e": ""}), ("unset", None), ("", "no key: skipped"), ("dup", 1),
        ("dup", "last wins"), ("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "root"),
        ("input.value", '{"q": 1}'), ("input.mime_type", "application/json"),
    ]  # fmt: skip
    root = ss.spans.add()
    root.trace_id, root.span_id, root.name = TRACE, bytes.fromhex("01" * 8), "invoke_agent root"
    root.start_time_unix_nano, root.end_time_unix_nano, root.kind = 10, 100, 2
    put(root.attributes, every_type)
    root.status.code = 1

    chat = ss.spans.add()
    chat.trace_id, chat.span_id, chat.parent_span_id = TRACE, bytes.fromhex("02" * 8), root.span_id
    chat.name, chat.start_time_unix_nano, chat.end_time_unix_nano = "chat m", 20, 30
    put(chat.attributes, [("gen_ai.operation.name", "chat"), ("gen_ai.request.model", "m"),
                          ("gen_ai.usage.input_tokens", 12), ("callctx.context", "not a manifest")])  # fmt: skip
    blob_event(chat, "a text the model saw")
    blob_event(chat, "altered on the way", good=False)
    ev = chat.events.add()
    ev.name, ev.time_unix_nano = "log", 25
    put(ev.attributes, [("message", "hello"), ("n", 3)])
    lk = chat.links.add()
    lk.trace_id, lk.span_id = bytes.fromhex("cd" * 16), bytes.fromhex("0f" * 8)
    put(lk.attributes, [("why", "follows"), ("deep", nested(20))])  # too deep in a valid link: rejected
    chat.status.code = 2

    failed = ss.spans.add()  # an error told by its exception event, not its status message
    failed.trace_id, failed.span_id, failed.parent_span_id = TRACE, bytes.fromhex("03" * 8), root.span_id
    failed.name, failed.start_time_unix_nano, failed.end_time_unix_nano = "execute_tool t", 40, 35  # ends early
    put(failed.attributes, [("gen_ai.operation.name", "execute_tool")])
    blob_event(failed, "a text the tool saw")
    ev = failed.events.add()
    ev.name = "exception"
    put(ev.attributes, [("exception.type", "ValueError"), ("exception.message", "bad\nsecond line")])
    bad_link = failed.links.add()  # wrong lengths: dropped, its attributes never read
    bad_link.trace_id, bad_link.span_id = b"\x01", b"\x02"
    put(bad_link.attributes, [("deep", nested(20))])
    failed.status.code = 2

    described = ss.spans.add()
    described.trace_id, described.span_id, described.parent_span_id = TRACE, bytes.fromhex("04" * 8), b"\x00" * 8
    described.name, described.start_time_unix_nano, described.end_time_unix_nano = "plain", 50, 60
    described.status.code, described.status.message = 2, "the status says why"
    described.kind = 5

    odd = ss.spans.add()  # an unknown status code, a parent id of the wrong length
    odd.trace_id, odd.span_id, odd.parent_span_id = TRACE, bytes.fromhex("05" * 8), b"\x07" * 3
    odd.name, odd.start_time_unix_nano, odd.end_time_unix_nano = "odd", 70, 80
    odd.status.code = 7  # type: ignore[assignment]
    odd.status.message = "kept as sent, not shown"

    interrupted = ss.spans.add()
    interrupted.trace_id, interrupted.span_id = TRACE, bytes.fromhex("06" * 8)
    interrupted.name, interrupted.start_time_unix_nano, interrupted.end_time_unix_nano = "cut", 90, 95
    put(interrupted.attributes, [(INTERRUPTED, True)])
    blob_event(interrupted, "still stored")

    not_interrupted = ss.spans.add()
    not_interrupted.trace_id, not_interrupted.span_id = TRACE, bytes.fromhex("07" * 8)
    not_interrupted.name = "said as a string"
    put(not_interrupted.attributes, [(INTERRUPTED, "true")])

    rejected = [
        (b"\x01" * 15, bytes.fromhex("11" * 8), []),  # trace id too short
        (b"\x00" * 16, bytes.fromhex("12" * 8), []),  # all zeros
        (TRACE, b"\x01" * 9, []),  # span id too long
        (TRACE, b"\x00" * 8, []),  # all zeros
        (b"", b"", []),  # no ids at all
        (TRACE, bytes.fromhex("13" * 8), [("deep", nested(17))]),  # attribute value nested too deeply
    ]
    for trace_id, span_id, attrs in rejected:
        sp = ss.spans.add()
        sp.trace_id, sp.span_id, sp.name = trace_id, span_id, "rejected"
        put(sp.attributes, attrs)
    deep_event = ss.spans.add()
    deep_event.trace_id, deep_event.span_id = TRACE, bytes.fromhex("14" * 8)
    ev = deep_event.events.add()
    put(ev.attributes, [("deep", {"k": nested(16)})])

    just_deep_enough = ss.spans.add()
    just_deep_enough.trace_id, just_deep_enough.span_id = TRACE, bytes.fromhex("15" * 8)
    put(just_deep_enough.attributes, [("deep", nested(16))])

    rs2 = req.resource_spans.add()  # a resource that cannot be read: its spans are kept, resource empty
    put(rs2.resource.attributes, [("deep", nested(18)), ("service.name", "lost")])
    ss2 = rs2.scope_spans.add()  # no scope name
    other = ss2.spans.add()
    other.trace_id, other.span_id, other.name = bytes.fromhex("ef" * 16), bytes.fromhex("21" * 8), "elsewhere"
    other.start_time_unix_nano = 1 << 63  # past int64
    other.end_time_unix_nano = (1 << 64) - 1
    rs3 = req.resource_spans.add()  # no resource, no scopes: nothing
    rs3.SetInParent()
    return req


def test_varied_spans_give_the_same_records():
    batch = assert_same(varied_request())
    assert batch.rejected == 8 and len(batch.spans) == 8
    assert [r.ended is None for r in batch.spans].count(True) == 1  # the interrupted one stays open
    assert {b.text for r in batch.spans for b in r.blobs} == {"a text the tool saw", "still stored"}
    assert "nested too deeply" in batch.message and "(and 5 more)" in batch.message


def test_an_empty_request_and_a_body_that_is_not_a_request():
    assert_same(ExportTraceServiceRequest())
    assert otlp_events.decode_protobuf(b"") == otlp_events.Batch([])
    for body in (b"\xff\xff\xff", b"\x0a\x05abc", varied_request().SerializeToString()[:-3]):
        with pytest.raises(ValueError, match="not an OTLP protobuf trace request") as new:
            otlp_events.decode_protobuf(body)
        with pytest.raises(ValueError) as old:
            otlp.decode_protobuf(body)
        assert str(new.value) == str(old.value)


def test_serialized_round_trip_equals_the_old_path():
    body = varied_request().SerializeToString()
    req = ExportTraceServiceRequest.FromString(body)
    assert otlp_events.decode_protobuf(body) == otlp_events.decode_request(req)
    assert_same(req)


def test_from_spans_is_to_records():
    spans = otlp.decode_request(varied_request()).spans
    batch = otlp_events.from_spans(spans, 2, ["x", "y"])
    assert otlp_events.records(batch) == [rec for sp in spans for rec in to_records(sp)]
    assert (batch.rejected, batch.errors) == (2, ["x", "y"])


# ---- property: any request the strategies make ---------------------------------------------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.binary(max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)
attrs = st.lists(st.tuples(st.sampled_from(["", "a", "b", "input.value", "gen_ai.operation.name",
                                            "gen_ai.request.model", "session.id", INTERRUPTED]) | st.text(max_size=6),
                           values | st.sampled_from(["chat", "invoke_agent", "execute_tool", True])),
                 max_size=5)  # fmt: skip
ids16 = st.sampled_from([TRACE, bytes(16), b"\x01" * 15, b""]) | st.binary(min_size=16, max_size=16)
ids8 = st.sampled_from([b"\x01" * 8, b"\x02" * 8, bytes(8), b"\x03", b""]) | st.binary(min_size=8, max_size=8)
times = st.integers(0, (1 << 64) - 1)
events = st.lists(
    st.tuples(st.sampled_from(["exception", BLOB_EVENT, "log", ""]), times, attrs, st.text(max_size=8)), max_size=3
)
links = st.lists(st.tuples(ids16, ids8, attrs), max_size=2)
spans = st.lists(
    st.tuples(ids16, ids8, ids8, st.text(max_size=10), times, times, st.integers(0, 6), st.integers(0, 3),
              st.text(max_size=6), attrs, events, links),
    max_size=6,
)  # fmt: skip
resources = st.lists(st.tuples(attrs, st.lists(st.tuples(st.text(max_size=5), spans), max_size=2)), max_size=3)


def build(resource_list) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    for resource_attrs, scopes in resource_list:
        rs = req.resource_spans.add()
        put(rs.resource.attributes, resource_attrs)
        for scope, span_list in scopes:
            ss = rs.scope_spans.add()
            ss.scope.name = scope
            for tid, sid, pid, name, start, end, kind, code, message, span_attrs, evs, lks in span_list:
                sp = ss.spans.add()
                sp.trace_id, sp.span_id, sp.parent_span_id, sp.name = tid, sid, pid, name
                sp.start_time_unix_nano, sp.end_time_unix_nano, sp.kind = start, end, kind
                sp.status.code, sp.status.message = code, message
                put(sp.attributes, span_attrs)
                for ev_name, ev_time, ev_attrs, text in evs:
                    ev = sp.events.add()
                    ev.name, ev.time_unix_nano = ev_name, ev_time
                    if ev_name == BLOB_EVENT and text:
                        ev_attrs = [*ev_attrs, ("hash", hashlib.sha256(text.encode()).hexdigest()), ("text", text)]
                    put(ev.attributes, ev_attrs)
                for lt, ls, la in lks:
                    lk = sp.links.add()
                    lk.trace_id, lk.span_id = lt, ls
                    put(lk.attributes, la)
    return req


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resources)
def test_any_request_gives_the_same_records(resource_list):
    req = build(resource_list)
    assert_same(req)
    assert_same(ExportTraceServiceRequest.FromString(req.SerializeToString()))

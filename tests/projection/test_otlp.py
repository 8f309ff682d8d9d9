"""OTLP requests to records (``callctx.projection.otlp``): the protobuf and the OTLP/JSON decoders
give the same batch, record for record, for the same request (hand-built, made by the official
SDK and its OTLP encoder, or any request the strategies make), the same spans rejected for the
same reasons; and the checks at the edge (ids, times, kinds)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from google.protobuf.json_format import MessageToDict
from helpers.otlp_requests import build, put
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from callctx.projection import otlp
from callctx.projection.batch import Batch, records
from callctx.projection.errors import BadInput
from callctx.projection.events import KIND_CLIENT, KIND_CONSUMER, KIND_INTERNAL, KIND_SERVER, encode
from callctx.projection.otlpjson import ids_to_hex
from callctx.projection.schema import BLOB_EVENT, INTERRUPTED

TRACE = bytes.fromhex("ab" * 16)
_IDS = ("traceId", "spanId", "parentSpanId")


def spec_json(req: ExportTraceServiceRequest) -> dict:
    """OTLP/JSON as the spec (and the Collector's file exporter, and callctx's) writes it: hex
    ids, integer enums."""
    return ids_to_hex(MessageToDict(req, use_integers_for_enums=True))


def json_forms(req: ExportTraceServiceRequest) -> dict[str, bytes]:
    """The same request in every JSON form the decoder reads."""
    spec = spec_json(req)
    upper = json.loads(json.dumps(spec))
    for rs in upper.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                for obj in (span, *span.get("links", ())):
                    obj.update({k: obj[k].upper() for k in _IDS if k in obj})
    lines = b"\n".join(json.dumps({"resourceSpans": [rs]}).encode() for rs in spec.get("resourceSpans", ()))
    forms = {
        "spec": json.dumps(spec).encode(),
        "protobuf mapping": json.dumps(MessageToDict(req)).encode(),  # base64 ids, enum names
        "upper-case hex": json.dumps(upper).encode(),
    }
    if len(spec.get("resourceSpans", ())) > 1:
        forms["json lines"] = lines + b"\n"  # one request per line, as the Collector's file exporter writes
    return forms


def assert_same(req: ExportTraceServiceRequest) -> Batch:
    """Protobuf (parsed, and as a body) and every JSON form give one batch, record for record,
    with the same rejections."""
    batch = otlp.decode_request(req)
    assert otlp.decode_protobuf(req.SerializeToString()) == batch
    want = [encode(r) for r in records(batch)]
    for form, body in json_forms(req).items():
        got = otlp.decode_json(body)
        assert (got.rejected, got.errors) == (batch.rejected, batch.errors), form
        assert got == batch, form
        assert [encode(r) for r in records(got)] == want, form
    assert batch.rejected == len(batch.errors)
    return batch


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
    other.start_time_unix_nano = (1 << 63) - 1  # the last time of the window
    other.end_time_unix_nano = (1 << 63) - 1
    late = ss2.spans.add()  # past the window (2262): rejected, with the reason
    late.trace_id, late.span_id, late.name = bytes.fromhex("ef" * 16), bytes.fromhex("22" * 8), "too late"
    late.start_time_unix_nano = 1 << 63
    late.end_time_unix_nano = (1 << 64) - 1
    rs3 = req.resource_spans.add()  # no resource, no scopes: nothing
    rs3.SetInParent()
    return req


def test_varied_spans_give_the_same_batch_in_both_encodings():
    batch = assert_same(varied_request())
    assert batch.rejected == 9 and len(batch.spans) == 8
    assert batch.errors == [
        "span 0202020202020202: attribute value nested too deeply",  # in a valid link
        "span 1111111111111111: trace id must be 32 hex characters",
        "span 1212121212121212: trace id is all zeros",
        "span 010101010101010101: span id must be 16 hex characters",
        "span 0000000000000000: span id is all zeros",
        "span ?: trace id must be 32 hex characters",
        "span 1313131313131313: attribute value nested too deeply",
        "span 1414141414141414: attribute value nested too deeply",  # in an event
        "span 2222222222222222: start time must be a whole number of ns from 0 to 2**63 - 1 (1970 to 2262)",
    ]
    assert "nested too deeply" in batch.message and "(and 6 more)" in batch.message
    by = {r.span_id: r for r in batch.spans}
    root = by["01" * 8]
    assert root.started.kind == KIND_SERVER and root.ended is not None and root.ended.status == "ok"
    a = root.started.attributes
    assert a["raw"] == "AP9ieXRlcw==" and a["unset"] is None and a["dup"] == "last wins" and "" not in a
    assert a["map"] == {"k": {"deeper": [1, 2]}, "e": ""} and a["arr"] == [1, "two", [3.0, False]]
    assert root.started.resource == {"service.name": "svc", "host.cpus": 4, "labels": ["a", "b"]}
    assert root.started.scope == "scope-a"
    failed = by["03" * 8]  # ends before it starts: read as ending at its start; the error told by its exception
    assert (failed.end_ns, failed.ended.end_ns, failed.ended.error) == (40, 40, "ValueError: bad\nsecond line")
    assert failed.ended.links == [] and [b.text for b in failed.blobs] == ["a text the tool saw"]
    assert by["04" * 8].started.parent_id is None and by["04" * 8].ended.error == "the status says why"
    assert by["04" * 8].started.kind == KIND_CONSUMER
    odd = by["05" * 8]  # an unknown status code reads as unset; a parent id of the wrong length as none
    assert (odd.status, odd.error, odd.ended.error, odd.started.parent_id) == ("unset", "kept as sent, not shown",
                                                                              None, None)  # fmt: skip
    assert by["06" * 8].ended is None and [b.text for b in by["06" * 8].blobs] == ["still stored"]
    assert by["07" * 8].ended is not None  # INTERRUPTED said as a string is not the flag
    assert by["21" * 8].started.resource == {} and by["21" * 8].started.scope is None
    assert by["21" * 8].end_ns == (1 << 63) - 1


def sdk_request() -> ExportTraceServiceRequest:
    """Spans made by the official SDK, encoded by the OTLP exporters' encoder: every span kind,
    attribute values of every type, events (an exception, a text a model call was sent), links,
    error and ok statuses, two resources."""
    requests = []
    for service in ("agent", "gateway"):
        sink = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service, "service.instance.id": "i-1"}))
        provider.add_span_processor(SimpleSpanProcessor(sink))
        tracer = provider.get_tracer(f"{service}-scope")
        attrs = {"s": "text", "b": True, "i": -7, "f": 2.5, "strs": ["a", "b"], "ints": [1, 2], "bools": [True],
                 "floats": [0.5], "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": service}  # fmt: skip
        with tracer.start_as_current_span(f"invoke_agent {service}", kind=SpanKind.SERVER, attributes=attrs) as root:
            for kind in SpanKind:
                link = Link(root.get_span_context(), {"why": "follows"})
                with tracer.start_as_current_span(f"child {kind.name}", kind=kind, links=[link]):
                    pass
            with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}) as chat:
                text = "what the model was sent"
                chat.add_event(BLOB_EVENT, {"hash": hashlib.sha256(text.encode()).hexdigest(), "text": text})
                chat.add_event("log", {"n": 3}, timestamp=12345)
                chat.set_status(Status(StatusCode.OK))
            try:
                with tracer.start_as_current_span("execute_tool t"):
                    raise ValueError("the tool broke")
            except ValueError:
                pass
            root.set_status(Status(StatusCode.ERROR, "said so"))
        requests.append(encode_spans(sink.get_finished_spans()))
    req = ExportTraceServiceRequest()
    for r in requests:
        req.resource_spans.extend(r.resource_spans)
    return req


def test_spans_of_the_official_sdk_give_the_same_batch_in_both_encodings():
    batch = assert_same(sdk_request())
    assert batch.rejected == 0 and len(batch.spans) == 2 * (len(SpanKind) + 3)
    kinds = {r.started.name: r.started.kind for r in batch.spans}
    assert kinds["child INTERNAL"] == KIND_INTERNAL and kinds["child CLIENT"] == KIND_CLIENT
    assert kinds["child CONSUMER"] == KIND_CONSUMER and kinds["chat m"] == KIND_INTERNAL
    tool = next(r for r in batch.spans if r.started.name == "execute_tool t")
    assert tool.ended.error == "ValueError: the tool broke"
    chat = next(r for r in batch.spans if r.started.name == "chat m")
    assert [b.text for b in chat.blobs] == ["what the model was sent"]
    assert [e.name for e in chat.ended.events] == ["log"]  # the texts ride as blobs, not as events
    child = next(r for r in batch.spans if r.started.name == "child SERVER")
    assert [(lk.span_id, lk.attributes) for lk in child.ended.links] == [(child.started.parent_id, {"why": "follows"})]
    assert {r.started.service for r in batch.spans} == {"agent", "gateway"}


def test_an_empty_request_and_a_body_that_is_not_a_request():
    assert_same(ExportTraceServiceRequest())
    assert otlp.decode_protobuf(b"") == Batch([])
    for body in (b"\xff\xff\xff", b"\x0a\x05abc", varied_request().SerializeToString()[:-3]):
        with pytest.raises(BadInput, match="not an OTLP protobuf trace request"):
            otlp.decode_protobuf(body)
    assert otlp.decode_json(b"{}") == otlp.decode_json(b'{"resourceSpans": []}') == Batch([])
    for body in (b"", b"not json", b"[]", b'"text"', b'{"resourceSpans": 5}', b'{"resourceSpans": [5]}',
                 b'{"resourceSpans": [{"scopeSpans": {}}]}', b'{"resourceSpans": [{"scopeSpans": [{"spans": 1}]}]}',
                 b'{"resourceSpans": []}\n\xff', b'\xef\xbb\xbf{}', '{"x": "\u00e9"}'.encode("latin-1")):  # fmt: skip
        with pytest.raises(BadInput, match="not OTLP/JSON"):
            otlp.decode_json(body)


def one_span(**fields) -> bytes:
    span = {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "s", "startTimeUnixNano": "10",
            "endTimeUnixNano": "20", **fields}  # fmt: skip
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def test_json_ids_are_exact_hex_or_base64():
    ok = otlp.decode_json(one_span(traceId="AB" * 16, spanId="0A" * 8, parentSpanId="0B" * 8))
    assert [(r.trace_id, r.span_id, r.started.parent_id) for r in ok.spans] == [("ab" * 16, "0a" * 8, "0b" * 8)]
    b64 = otlp.decode_json(one_span(traceId=base64.b64encode(TRACE).decode(), spanId="AQIDBAUGBwg="))
    assert [(r.trace_id, r.span_id) for r in b64.spans] == [("ab" * 16, "0102030405060708")]
    bad = {
        "aabb ccdd eeff00": "span id 'aabb ccdd eeff00' is neither hex nor base64",  # fromhex would skip the spaces
        " aabbccddeeff0011": "is neither hex nor base64",
        "aabbccddeeff001": "is neither hex nor base64",  # odd length
        "aabbccddeeff00112": "is neither hex nor base64",
        "aabbccddeeff0-11": "is neither hex nor base64",
        "aabbccddeeff0g11": "span id must be 16 hex characters",  # base64, of 12 bytes
        "aabbccddeeff00": "span id must be 16 hex characters",
        "0" * 16: "span id is all zeros",
        "AAAAAAAAAAA=": "span id is all zeros",  # base64 of eight zero bytes
        "": "span id must be 16 hex characters",
    }
    for value, reason in bad.items():
        got = otlp.decode_json(one_span(spanId=value))
        assert got.spans == [] and got.rejected == 1 and reason in got.errors[0], (value, got.errors)
    for value in (12, ["01"], {"id": 1}):
        assert otlp.decode_json(one_span(spanId=value)).errors == ["span ?: span id must be a string"]
    assert otlp.decode_json(one_span(traceId="0" * 32)).errors == ["span 0101010101010101: trace id is all zeros"]
    for parent in ("aabb ccdd eeff0011", "0" * 16, "01" * 9, 5):  # a broken parent link: kept, as a root
        assert [r.started.parent_id for r in otlp.decode_json(one_span(parentSpanId=parent)).spans] == [None]
    links = [{"traceId": "cd" * 16, "spanId": "02" * 8}, {"traceId": "cd" * 16, "spanId": "0" * 16},
             {"traceId": "cd cd" * 8, "spanId": "02" * 8}, {"traceId": "cd" * 16}, "not a link"]  # fmt: skip
    (r,) = otlp.decode_json(one_span(links=links)).spans
    assert [(lk.trace_id, lk.span_id) for lk in r.ended.links] == [("cd" * 16, "02" * 8)]


def test_json_times_are_non_negative_integers():
    assert [r.start_ns for r in otlp.decode_json(one_span(startTimeUnixNano=10, endTimeUnixNano=None)).spans] == [10]
    top = str((1 << 63) - 1)
    assert [r.end_ns for r in otlp.decode_json(one_span(endTimeUnixNano=top)).spans] == [(1 << 63) - 1]
    window = "must be a whole number of ns from 0 to 2**63 - 1 (1970 to 2262)"
    for value in (-1, "-1", str(1 << 63), str(1 << 64), 1 << 64, 10**23, 1.5, "1.5", "1e3", "\u0661\u0662", " 12",
                  True, [1]):  # fmt: skip
        got = otlp.decode_json(one_span(startTimeUnixNano=value))
        assert got.errors == [f"span 0101010101010101: start time {window}"], value
    got = otlp.decode_json(one_span(events=[{"name": "e", "timeUnixNano": "-5"}]))
    assert got.errors == [f"span 0101010101010101: event time {window}"]


def test_span_kinds_read_the_same_in_both_encodings():
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for kind in range(8):
        sp = ss.spans.add()
        sp.trace_id, sp.span_id, sp.name, sp.kind = TRACE, bytes([kind + 1]) * 8, f"k{kind}", kind
    batch = assert_same(req)
    assert [r.started.kind for r in batch.spans] == [1, 1, 2, 3, 4, 5, 1, 1]  # unspecified and unknown: internal
    named = otlp.decode_json(one_span(kind="SPAN_KIND_PRODUCER")), otlp.decode_json(one_span(kind="nonsense"))
    assert [b.spans[0].started.kind for b in named] == [4, 1]
    for kind in (None, -3, 99, 2.0, True):
        assert otlp.decode_json(one_span(kind=kind)).spans[0].started.kind == KIND_INTERNAL


def test_json_attribute_values_the_protobuf_cannot_say():
    def value(v):
        (r,) = otlp.decode_json(one_span(attributes=[{"key": "k", "value": v}])).spans
        return r.started.attributes["k"]

    assert value({"intValue": "-12"}) == -12 and value({"intValue": 12}) == 12
    assert value({"doubleValue": "Infinity"}) == float("inf") and value({"doubleValue": 3}) == 3.0
    assert value({"stringValue": 5}) == "5" and value({"arrayValue": {}}) == [] and value({}) is None
    for v in ({"intValue": "1.5"}, {"intValue": str(1 << 63)}, {"intValue": True}, {"doubleValue": "x"}):
        assert otlp.decode_json(one_span(attributes=[{"key": "k", "value": v}])).rejected == 1, v
    label = "span 0101010101010101: "
    assert otlp.decode_json(one_span(attributes={"k": "v"})).errors == [label + "attributes must be a list"]
    assert otlp.decode_json(one_span(events=[1])).errors == [label + "an event is not an object"]


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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resources)
def test_any_request_gives_the_same_batch_in_both_encodings(resource_list):
    req = build(resource_list)
    batch = assert_same(req)
    assert batch == otlp.decode_request(ExportTraceServiceRequest.FromString(req.SerializeToString()))

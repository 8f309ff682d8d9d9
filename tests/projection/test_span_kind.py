"""One vocabulary for a span's kind and status, one default kind (internal) for every struct and
codec, and logs written before the default changed read as they meant."""

from __future__ import annotations

import json
import typing

import msgspec
import pytest

from callctx.projection import Projection, jaeger, otlp, read_log
from callctx.projection.batch import received
from callctx.projection.events import (
    DEFAULT_KIND,
    KIND_CLIENT,
    KIND_CONSUMER,
    KIND_INTERNAL,
    KIND_PRODUCER,
    KIND_SERVER,
    KIND_UNSPECIFIED,
    KINDS,
    SpanEnded,
    SpanKind,
    SpanStarted,
    SpanStatus,
    decode,
    encode,
)
from callctx.projection.spans import SpanData, from_log

T = "ab" * 16


def test_one_vocabulary_and_one_default():
    assert typing.get_args(SpanKind) == (KIND_UNSPECIFIED, KIND_INTERNAL, KIND_SERVER, KIND_CLIENT, KIND_PRODUCER,
                                         KIND_CONSUMER) == (0, 1, 2, 3, 4, 5)  # fmt: skip
    assert typing.get_args(SpanStatus) == ("unset", "ok", "error")
    assert DEFAULT_KIND == KIND_INTERNAL and set(KINDS) == {1, 2, 3, 4, 5}
    assert SpanStarted(T, "01" * 8).kind == SpanData(T, "01" * 8, None, "s", 0, 0).kind == DEFAULT_KIND
    r = received(T, "01" * 8, None, "s", 0, 0, {}, "unset", None, DEFAULT_KIND, [], {}, None, [])
    assert r.started.kind == DEFAULT_KIND
    hints = typing.get_type_hints(SpanEnded)
    assert hints["status"] == SpanStatus


# A span start as each writer wrote it before internal became the default: the in-process
# processor left its internal spans' kind 0 out, the receiver wrote the kind it read (1 to 5).
OLD_LOG = (
    b'{"e":"start","trace_id":"' + T.encode() + b'","span_id":"0000000000000001","name":"invoke_agent main",'
    b'"start_ns":1,"attributes":{"gen_ai.operation.name":"invoke_agent","gen_ai.agent.name":"main"}}\n'
    b'{"e":"start","trace_id":"' + T.encode() + b'","span_id":"0000000000000002","parent_id":"0000000000000001",'
    b'"name":"from a receiver","start_ns":2,"kind":1}\n'
    b'{"e":"start","trace_id":"' + T.encode() + b'","span_id":"0000000000000003","parent_id":"0000000000000001",'
    b'"name":"a client call","start_ns":3,"kind":3}\n'
    b'{"e":"end","trace_id":"' + T.encode() + b'","span_id":"0000000000000003","end_ns":4}\n'
    b'{"e":"end","trace_id":"' + T.encode() + b'","span_id":"0000000000000002","end_ns":5}\n'
    b'{"e":"end","trace_id":"' + T.encode() + b'","span_id":"0000000000000001","end_ns":6,"status":"ok"}\n'
)


def test_a_log_written_before_reads_as_it_meant(tmp_path):
    log = tmp_path / "old.jsonl"
    log.write_bytes(OLD_LOG)
    starts = [r for r in read_log(log, strict=True) if type(r) is SpanStarted]
    assert [s.kind for s in starts] == [KIND_INTERNAL, KIND_INTERNAL, KIND_CLIENT]
    # written again, internal is the default and left out; nothing else about the records changes
    lines = OLD_LOG.splitlines(keepends=True)
    assert [encode(s) for s in starts] == [lines[0], lines[1].replace(b',"kind":1', b""), lines[2]]
    assert [decode(encode(s)) for s in starts] == starts
    spans = list(from_log(log))
    assert [s.kind for s in spans] == [KIND_INTERNAL, KIND_INTERNAL, KIND_CLIENT]
    doc = otlp.encode_json(spans)
    assert [s["kind"] for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]] == [1, 1, 3]
    tags = [{t["key"]: t["value"] for t in s["tags"]} for s in jaeger.encode(spans)["data"][0]["spans"]]
    assert [t["span.kind"] for t in tags] == ["internal", "internal", "client"]
    assert Projection.from_log(log).session_tree(T)  # and it folds


def test_a_kind_outside_the_enum_is_refused_by_the_log_and_read_as_internal_by_codecs():
    line = b'{"e":"start","trace_id":"' + T.encode() + b'","span_id":"0000000000000001","kind":7}'
    with pytest.raises(msgspec.ValidationError):
        decode(line)
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": T, "spanId": "01" * 8, "kind": 7}, {"traceId": T, "spanId": "02" * 8, "kind": 0},
        {"traceId": T, "spanId": "03" * 8},
    ]}]}]}  # fmt: skip
    assert [r.started.kind for r in otlp.decode_json(json.dumps(doc).encode()).spans] == [1, 1, 1]
    tagged = {"data": [{"traceID": T, "spans": [{"traceID": T, "spanID": "04" * 8, "startTime": 1, "tags": [
        {"key": "span.kind", "type": "string", "value": "unspecified"}]}]}]}  # fmt: skip
    assert [r.started.kind for r in jaeger.decode(tagged).spans] == [KIND_INTERNAL]


@pytest.mark.parametrize("kind", [1, 2, 3, 4, 5])
def test_every_kind_survives_every_codec(kind):
    span = SpanData(T, "01" * 8, None, "s", 10, 20, {"a": 1}, "error", "why", kind)
    via_json = otlp.decode_json(json.dumps(otlp.encode_json([span])).encode())
    via_protobuf = otlp.decode_protobuf(otlp.encode_protobuf([span]).SerializeToString())
    via_jaeger = jaeger.decode(jaeger.encode([span]))
    assert [b.spans[0].started.kind for b in (via_json, via_protobuf, via_jaeger)] == [kind] * 3
    assert [b.spans[0].ended.status for b in (via_json, via_protobuf, via_jaeger)] == ["error"] * 3
    assert via_json == via_protobuf

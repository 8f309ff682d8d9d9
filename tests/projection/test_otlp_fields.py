"""Every field the OTLP data model carries survives export and import: a span written to an
event log, read back, encoded (OTLP/JSON or protobuf), decoded and written again is the span it
was. And OTLP/JSON's 64-bit integers, written as decimal strings, negative ones included."""

from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callctx.projection import otlp
from callctx.projection.batch import MAX_TIME, records
from callctx.projection.events import Dropped, Origin, SpanEvent, SpanLink, encode
from callctx.projection.log import EventLog
from callctx.projection.spans import SpanData, from_log, to_records

hexes = lambda n: st.text("0123456789abcdef", min_size=n, max_size=n).filter(lambda s: set(s) != {"0"})  # noqa: E731
keys = st.text("abcdefghij.", min_size=1, max_size=8)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
scalars = st.one_of(st.text(max_size=20), st.booleans(), int64, st.floats(allow_nan=False, allow_infinity=False))
values = st.one_of(scalars, st.lists(scalars, max_size=3))
attrs = st.dictionaries(keys, values, max_size=4)
counts = st.integers(0, (1 << 32) - 1)
states = st.one_of(st.just(""), st.builds(lambda k, v: f"{k}={v}", st.text("abcxyz", min_size=1, max_size=5),
                                          st.text("0123456789", min_size=1, max_size=5)))  # fmt: skip
times = st.integers(0, MAX_TIME)
origins = st.one_of(
    st.none(),
    st.builds(Origin, trace_state=states, flags=counts, scope_version=st.text("0123456789.", max_size=6),
              scope_attributes=attrs, scope_schema_url=st.sampled_from(["", "https://opentelemetry.io/schemas/1.26.0"]),
              resource_schema_url=st.sampled_from(["", "https://opentelemetry.io/schemas/1.21.0"]),
              resource_dropped_attributes=counts).filter(lambda o: o != Origin()),  # nothing at all reads as None
)  # fmt: skip


@st.composite
def span_data(draw, trace_id: str) -> SpanData:
    start = draw(times)
    status = draw(st.sampled_from(["unset", "ok", "error"]))
    return SpanData(
        trace_id=trace_id,
        span_id=draw(hexes(16)),
        parent_id=draw(st.one_of(st.none(), hexes(16))),
        name=draw(st.text(min_size=1, max_size=12)),
        start_ns=start,
        end_ns=draw(st.integers(start, MAX_TIME)),
        attributes=draw(attrs),
        status=status,
        error=draw(st.text("abc ", min_size=1, max_size=10).map(str.strip).filter(bool)) if status == "error" else None,
        kind=draw(st.sampled_from([1, 2, 3, 4, 5])),
        events=draw(st.lists(st.builds(SpanEvent, st.text("abcdef", min_size=1, max_size=6), times, attrs, counts),
                             max_size=3)),
        resource={"service.name": draw(st.sampled_from(["api", "worker"])), **draw(attrs)},
        scope=draw(st.sampled_from(["agents", "http.client"])),
        links=draw(st.lists(st.builds(SpanLink, hexes(32), hexes(16), attrs, states, counts, counts), max_size=2)),
        origin=draw(origins),
        dropped=draw(st.one_of(st.none(), st.builds(Dropped, counts, counts, counts).filter(
            lambda d: d.attributes or d.events or d.links))),
    )  # fmt: skip


def _unique(spans: list[SpanData]) -> list[SpanData]:
    seen: set[str] = set()
    return [s for s in spans if not (s.span_id in seen or seen.add(s.span_id))]  # type: ignore[func-returns-value]


spans_of_a_trace = hexes(32).flatmap(lambda t: st.lists(span_data(t), min_size=1, max_size=4)).map(_unique)


def _logged(spans, path) -> list[SpanData]:
    with EventLog(path, buffer_bytes=0) as log:
        for sp in spans:
            for rec in to_records(sp):
                log.write(encode(rec))
    return list(from_log(path))


def _through(decoded, path) -> list[SpanData]:
    with EventLog(path, buffer_bytes=0) as log:
        for rec in records(decoded):
            log.write(encode(rec))
    return list(from_log(path))


def _canonical(spans: list[SpanData]) -> list[dict]:
    return sorted((json.loads(json.dumps(msgspec_builtins(s))) for s in spans), key=lambda d: d["span_id"])


def msgspec_builtins(span: SpanData) -> dict:
    import msgspec

    return msgspec.to_builtins(span)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans_of_a_trace)
def test_every_span_field_survives_export_and_import(tmp_path_factory, spans):
    folder = tmp_path_factory.mktemp("fields")
    logged = _logged(spans, folder / "first.jsonl")
    want = _canonical(logged)
    assert len(logged) == len(spans)
    assert [(s.origin, s.dropped, [lk.trace_state for lk in s.links]) for s in logged] == [
        (s.origin, s.dropped, [lk.trace_state for lk in s.links]) for s in spans
    ]
    as_json = otlp.decode_json(json.dumps(otlp.encode_json(logged)).encode())
    assert not as_json.rejected, as_json.errors
    assert _canonical(_through(as_json, folder / "json.jsonl")) == want
    as_protobuf = otlp.decode_protobuf(otlp.encode_protobuf(logged).SerializeToString())
    assert not as_protobuf.rejected, as_protobuf.errors
    assert _canonical(_through(as_protobuf, folder / "protobuf.jsonl")) == want
    # the protobuf's own JSON mapping (what a Collector's file exporter writes) reads the same too
    mapped = MessageToDict(otlp.encode_protobuf(logged))
    assert _canonical(_through(otlp.decode_json(json.dumps(mapped).encode()), folder / "mapped.jsonl")) == want


def test_otlp_json_integers_are_decimal_strings_negative_zero_and_extreme(tmp_path):
    ints = {"neg": "-42", "zero": "0", "min": str(-(1 << 63)), "max": str((1 << 63) - 1), "plain": 7, "negplain": -7}
    doc = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
           "scopeSpans": [{"scope": {"name": "x"}, "spans": [{
               "traceId": "ab" * 16, "spanId": "cd" * 8, "name": "n", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
               "attributes": [{"key": k, "value": {"intValue": v}} for k, v in ints.items()],
               "events": [{"name": "e", "timeUnixNano": "1",
                           "attributes": [{"key": "n", "value": {"intValue": "-1"}}]}],
           }]}]}]}  # fmt: skip
    batch = otlp.decode_json(json.dumps(doc).encode())
    assert not batch.rejected, batch.errors
    (r,) = batch.spans
    assert r.started.attributes == {k: int(v) for k, v in ints.items()}
    (span,) = _through(batch, tmp_path / "ints.jsonl")
    again = otlp.encode_json([span])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert {a["key"]: a["value"] for a in again["attributes"]} == {k: {"intValue": str(v)} for k, v in ints.items()}
    for bad in ("1e3", "+5", " 5", str(1 << 63), "--1", "4.0"):
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [{"key": "x", "value": {"intValue": bad}}]
        assert otlp.decode_json(json.dumps(doc).encode()).rejected == 1

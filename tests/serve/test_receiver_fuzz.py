"""Fuzzing the receiver with malformed and hostile bodies: it never crashes, never answers
5xx for bad input, and its log stays whole (every line decodes; replay equals the live fold)."""

from __future__ import annotations

import gzip
import http.client
import json
import zlib

import pytest
from helpers.stores import served_trees
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callctx.projection import Projection, read_log
from callctx.projection.otlp import encode_json, encode_protobuf
from callctx.projection.spans import SpanData
from callctx.serve import Receiver, serve_http


def valid_spans(n: int, payload: str = "x") -> list[SpanData]:
    return [
        SpanData(
            "cd" * 16,
            format(i + 1, "016x"),
            format(i, "016x") if i else None,
            f"invoke_agent f{i}",
            100 + i,
            200 + i,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"f{i}", "input.value": payload},
        )
        for i in range(n)
    ]


PB = encode_protobuf(valid_spans(4)).SerializeToString()
JS = json.dumps(encode_json(valid_spans(4))).encode()


def nested_json(depth: int) -> bytes:
    """An attribute value nested ``depth`` arrays deep (written by hand: too deep for json.dumps)."""
    value = '{"arrayValue":{"values":[' * depth + '{"stringValue":"leaf"}' + "]}}" * depth
    doc = json.dumps(encode_json(valid_spans(1)))
    return doc.replace('"attributes": [', '"attributes": [{"key": "deep", "value": ' + value + "}, ", 1).encode()


bodies = st.one_of(
    st.binary(max_size=2048).map(lambda b: ("application/x-protobuf", b)),
    st.binary(max_size=2048).map(lambda b: ("application/json", b)),
    st.integers(0, len(PB)).map(lambda n: ("application/x-protobuf", PB[:n])),  # truncated protobuf
    st.tuples(st.integers(0, len(PB) - 1), st.integers(0, 255)).map(
        lambda t: ("application/x-protobuf", PB[: t[0]] + bytes([t[1]]) + PB[t[0] + 1 :])
    ),  # one byte flipped
    st.binary(min_size=1, max_size=64).map(lambda b: ("application/x-protobuf", PB + b"\xfa\x07" + b)),  # unknown field
    st.integers(0, len(JS)).map(lambda n: ("application/json", JS[:n])),
    st.integers(1, 3000).map(lambda d: ("application/json", nested_json(d))),  # deep nesting
    st.text(max_size=200).map(lambda t: ("application/json", JS.replace(b'"x"', json.dumps(t).encode()))),
    st.binary(min_size=1, max_size=32).map(lambda b: ("application/json", JS.replace(b'"f1"', b'"' + b + b'"'))),
    st.sampled_from(["text/plain", "", "application/xml", "application/x-protobuf; charset=utf-8"]).map(
        lambda ct: (ct, PB)
    ),  # wrong content types
    st.integers(10_000, 300_000).map(
        lambda n: ("application/json", json.dumps(encode_json(valid_spans(1, "y" * n))).encode())
    ),  # huge attribute values (some over the limit)
    st.dictionaries(
        st.text(max_size=10),
        st.recursive(
            st.none() | st.integers() | st.text(max_size=20),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
            max_leaves=20,
        ),
        max_size=5,
    ).map(lambda d: ("application/json", json.dumps({"resourceSpans": [d]}).encode())),
)
encodings = st.sampled_from(["identity", "gzip", "deflate", "br", "gzip-but-not"])


def _encode(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    return body  # identity, and the lies: "br", "gzip-but-not" send plain bytes


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    rx = Receiver(tmp_path_factory.mktemp("fuzz") / "received.jsonl", max_body=256 * 1024)
    srv = serve_http(rx, "127.0.0.1", 0)
    yield rx, srv.server_port
    srv.shutdown()
    rx.close()


def test_fuzzed_bodies_never_crash_nor_corrupt(receiver):
    rx, port = receiver
    statuses: dict[int, int] = {}

    @settings(max_examples=1200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=bodies, encoding=encodings)
    def one(body, encoding):
        ctype, raw = body
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        headers = {"Content-Type": ctype}
        if encoding != "identity":
            headers["Content-Encoding"] = encoding
        conn.request("POST", "/v1/traces", body=_encode(raw, encoding), headers=headers)
        resp = conn.getresponse()
        resp.read()
        conn.close()
        statuses[resp.status] = statuses.get(resp.status, 0) + 1
        assert resp.status in (200, 400, 413, 415), resp.status

    one()
    assert sum(statuses.values()) >= 1000
    assert statuses.get(200) and statuses.get(400)  # the fuzzer reached both sides
    # still serving, and the log replays whole and equal to the live fold
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/health")
    assert conn.getresponse().status == 200
    records = list(read_log(rx.log.path, strict=True))
    assert records
    replayed = Projection.from_log(rx.log.path, recover=False)
    served = served_trees(rx.store)
    assert served == {k: text for k in replayed.sessions() if (text := replayed.session_tree(k))}


# ---- hostile fields of well-formed requests: ids, times, numbers, nesting, encodings ---------------
hostile_ids = st.one_of(
    st.binary(min_size=8, max_size=8).map(bytes.hex),
    st.sampled_from(
        [
            "aabb ccdd eeff00",
            "AABBCCDDEEFF0011",
            "00" * 8,
            "zz" * 8,
            "",
            "aabbcc",
            " " + "ab" * 8,
            "q83v3u/AEQ==",
            "ab" * 8 + "\n",
        ]
    ),
)
hostile_times = st.one_of(
    st.integers(0, 1 << 62),
    st.sampled_from([0, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 10**23, -1]),
    st.integers(0, 1 << 62).map(str),
    st.sampled_from(["1e9", "12.5", "-5", " 7", "\u0661"]),
)
hostile_numbers = st.one_of(
    st.integers(-(1 << 63), (1 << 63) - 1).map(str),
    st.sampled_from([str(1 << 64), "-0", "+3", "9" * 40]),
    st.integers(-(1 << 63), (1 << 63) - 1),
)
values = st.recursive(
    st.one_of(st.text(max_size=8).map(lambda t: {"stringValue": t}), hostile_numbers.map(lambda n: {"intValue": n}),
              st.floats(allow_nan=False, allow_infinity=False).map(lambda f: {"doubleValue": f})),
    lambda inner: st.one_of(st.lists(inner, max_size=3).map(lambda v: {"arrayValue": {"values": v}}),
                            st.lists(st.tuples(st.text(max_size=4), inner), max_size=3).map(
                                lambda kv: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kv]}})),
    max_leaves=24,
)  # fmt: skip
# every key a dialect reads, with values of any type (a kind name where a kind is read, or not)
ATTRIBUTE_KEYS = [
    "gen_ai.operation.name", "openinference.span.kind", "langfuse.observation.type", "traceloop.span.kind",
    "gen_ai.agent.name", "agent.name", "tool.name", "gen_ai.tool.name", "traceloop.entity.name", "input.value",
    "input.mime_type", "output.value", "output.mime_type", "gen_ai.conversation.id", "session.id",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "llm.token_count.prompt", "gen_ai.request.model",
    "llm.model_name", "gen_ai.provider.name", "callctx.expose", "callctx.render_range", "callctx.summary",
    "callctx.doc", "callctx.position", "callctx.output_contract", "callctx.context", "callctx.function",
    "callctx.call_path", "callctx.interrupted", "gen_ai.input.messages", "gen_ai.system_instructions",
    "llm.input_messages.0.message.role", "llm.input_messages.0.message.content", "k",
]  # fmt: skip
KINDS = st.sampled_from(["invoke_agent", "chat", "execute_tool", "AGENT", "LLM", "TOOL", "CHAIN", "generation",
                         "io", "hidden", "full"]).map(lambda t: {"stringValue": t})  # fmt: skip
hostile_spans = st.lists(
    st.fixed_dictionaries({
        "traceId": st.sampled_from(["cd" * 16, "CD" * 16, "ef" * 16]) | hostile_ids.map(lambda i: i * 2),
        "spanId": hostile_ids,
        "parentSpanId": st.sampled_from(["", "01" * 8]) | hostile_ids,
        "name": st.sampled_from(["invoke_agent a", "chat m", "x"]),
        "startTimeUnixNano": hostile_times,
        "endTimeUnixNano": hostile_times,
        "attributes": st.lists(st.tuples(st.sampled_from(ATTRIBUTE_KEYS), values | KINDS), max_size=6).map(
            lambda kv: [{"key": k, "value": v} for k, v in kv]),
    }),
    min_size=1, max_size=6,
)  # fmt: skip


def test_hostile_fields_are_kept_or_rejected_and_the_log_replays_and_restarts(tmp_path):
    log = tmp_path / "received.jsonl"
    rx = Receiver(log, max_body=256 * 1024)
    srv = serve_http(rx, "127.0.0.1", 0)
    port = srv.server_port
    accepted = 0

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(spans=hostile_spans, encoding=st.sampled_from(["identity", "gzip"]))
    def one(spans, encoding):
        nonlocal accepted
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        headers = {"Content-Type": "application/json"}
        if encoding == "gzip":
            headers["Content-Encoding"] = "gzip"
        conn.request("POST", "/v1/traces", body=_encode(body, encoding), headers=headers)
        resp = conn.getresponse()
        answer = resp.read()
        conn.close()
        assert resp.status in (200, 400), (resp.status, answer[:300])  # an answer always comes
        if resp.status == 200:
            rejected = int(json.loads(answer).get("partialSuccess", {}).get("rejectedSpans", 0))
            accepted += len(spans) - rejected

    try:
        one()
        assert rx.stats.spans == accepted  # what was acknowledged is what was appended
        records = list(read_log(log, strict=True))
        assert sum(type(r).__name__ == "SpanStarted" for r in records) == accepted  # nothing lost
        served = served_trees(rx.store)
    finally:
        srv.shutdown()
        rx.close()
    replayed = Projection.from_log(log, recover=False)
    assert served == {k: text for k in replayed.sessions() if (text := replayed.session_tree(k))}
    for suffix in ("", "-wal", "-shm"):  # started again with no index: made from the log, the same answers
        (tmp_path / f"received.jsonl.index.sqlite{suffix}").unlink(missing_ok=True)
    again = Receiver(log, index_every=None)
    try:
        assert served_trees(again.store) == served and again.store.state().spans >= 0
    finally:
        again.close()

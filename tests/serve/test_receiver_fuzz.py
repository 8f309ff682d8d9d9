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
    assert sorted(served) == sorted(replayed.sessions())
    for key in replayed.sessions():
        assert replayed.session_tree(key) == served[key]

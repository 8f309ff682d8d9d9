"""Export to OTLP/JSON and Jaeger JSON, import back (Collector file lines too): trees survive."""

from __future__ import annotations

import json

import pytest
from helpers.cli import cli

from callctx.cli.research_agent import run
from callctx.projection import Projection, jaeger, otlp
from callctx.projection.spans import from_log


def trees(path):
    p = Projection.from_log(path)
    views = {sid: p.view(sid).text for sid, n in p.nodes.items() if n.holds}
    return {k: p.session_tree(k) for k in p.sessions()}, views


@pytest.fixture
def demo_log(runtime):
    run(runtime)
    runtime.close()
    return runtime.log_path


@pytest.mark.parametrize("fmt", ["otlp", "jaeger"])
def test_round_trip_keeps_the_tree_and_the_contexts(demo_log, tmp_path, fmt):
    out_file = tmp_path / f"trace.{fmt}.json"
    code, _, err = cli("export", str(demo_log), "--format", fmt, "-o", str(out_file))
    assert code == 0, err
    back = tmp_path / "back.jsonl"
    code, out, err = cli("import", str(out_file), "--log", str(back))
    assert code == 0, err
    assert "(0 rejected)" in out
    assert trees(back) == trees(demo_log)
    for n in (1, 4, 11):  # the recorded contexts travelled too, and still verify
        code, out, err = cli("context", str(back), "--at", str(n))
        assert code == 0 and "verified" in out, err


def test_collector_file_exporter_lines(demo_log, tmp_path):
    spans = list(from_log(demo_log))
    lines = [json.dumps(otlp.encode_json(spans[i : i + 5])) for i in range(0, len(spans), 5)]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    back = tmp_path / "back.jsonl"
    code, _out, _ = cli("import", str(path), "--log", str(back))
    assert code == 0
    assert trees(back) == trees(demo_log)


def test_jaeger_api_shape_and_ids(demo_log):
    doc = jaeger.encode(list(from_log(demo_log)), "research-agent")
    (trace,) = doc["data"]
    assert trace["processes"]["p1"]["serviceName"] == "research-agent"
    span = trace["spans"][0]
    assert {"traceID", "spanID", "operationName", "references", "startTime", "duration", "tags", "logs"} <= set(span)
    batch = jaeger.decode(doc)
    assert batch.rejected == 0 and len(batch.spans) == len(trace["spans"])
    # Jaeger may drop leading zeros of ids; they are restored
    trace["spans"][0]["spanID"] = trace["spans"][0]["spanID"].lstrip("0") or "1"
    batch = jaeger.decode(doc)
    assert batch.rejected == 0 and len(batch.spans[0].span_id) == 16


def test_interrupted_spans_survive_the_round_trip(tmp_path):
    from callctx.projection.events import SpanEnded, SpanStarted, encode

    log = tmp_path / "crashed.jsonl"
    recs = [
        SpanStarted("ab" * 16, "0" * 15 + "1", None, "invoke_agent main", 1, {"gen_ai.operation.name": "invoke_agent",
                                                                              "gen_ai.agent.name": "main"}),
        SpanStarted("ab" * 16, "0" * 15 + "2", "0" * 15 + "1", "invoke_agent step", 2,
                    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "step"}),
        SpanEnded("ab" * 16, "0" * 15 + "2", 3, "ok"),
    ]  # fmt: skip
    log.write_bytes(b"".join(encode(r) for r in recs))
    out_file = tmp_path / "t.json"
    assert cli("export", str(log), "-o", str(out_file))[0] == 0
    back = tmp_path / "back.jsonl"
    assert cli("import", str(out_file), "--log", str(back))[0] == 0
    assert trees(back) == trees(log)
    assert "status: interrupted" in next(iter(trees(back)[0].values()))


def test_import_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json")
    code, _, err = cli("import", str(bad))
    assert code == 2 and "not an OTLP/JSON or Jaeger JSON" in err
    assert cli("import", str(tmp_path / "missing.json"))[0] == 2
    assert cli("export", str(tmp_path / "missing.jsonl"))[0] == 2


@pytest.mark.parametrize("fmt", ["otlp", "jaeger"])
def test_import_writes_the_records_the_decoder_gives(demo_log, tmp_path, fmt):
    from callctx.projection import read_log
    from callctx.projection.batch import Batch, records
    from callctx.projection.events import LogHeader

    spans = list(from_log(demo_log))
    if fmt == "otlp":
        doc = otlp.encode_json(spans)
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"] += [
            {"traceId": "ab" * 16, "spanId": "aabb ccdd eeff0011"},  # not hex: bytes.fromhex would skip the spaces
            {"traceId": "0" * 32, "spanId": "01" * 8},
        ]
    else:
        doc = jaeger.encode(spans)
        doc["data"][0]["spans"] += [{"traceID": "ab" * 16, "spanID": "aabb ccdd eeff0011"},
                                    {"traceID": "0" * 32, "spanID": "01" * 8}]  # fmt: skip
    path = tmp_path / f"trace.{fmt}.json"
    path.write_text(json.dumps(doc))
    back = tmp_path / "back.jsonl"
    code, out, err = cli("import", str(path), "--log", str(back))
    assert code == 0, err
    assert f"{len(spans)} spans imported (2 rejected)" in out
    assert "span aabb ccdd eeff0011: span id" in err and "span 0101010101010101: trace id is all zeros" in err
    batch = otlp.decode_json(path.read_bytes()) if fmt == "otlp" else jaeger.decode(json.loads(path.read_text()))
    want = records(Batch(sorted(batch.spans, key=lambda r: (r.start_ns, r.span_id))))
    assert [r for r in read_log(back) if type(r) is not LogHeader] == want

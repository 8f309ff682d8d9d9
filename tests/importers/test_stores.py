"""Trace stores as the event log: Jaeger v2's api/v3 (OTLP/JSON in ``{"result": ...}``, as its
documentation gives it; no Jaeger binary runs here, so a server answering in that shape stands
in for it). Phoenix's REST API is tested live in test_phoenix.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlparse

import pytest
from helpers.serving import FakeStore

from callctx import setup
from callctx.cli.main import main
from callctx.cli.research_agent import run
from callctx.projection import Projection
from callctx.projection.otlp import encode_json
from callctx.projection.spans import from_log


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    rt = setup(folder / "events.jsonl", session_id="jaeger-demo")
    run(rt)
    rt.close()
    return folder / "events.jsonl"


class FakeJaeger(FakeStore):
    """Answers ``GET /api/v3/traces/{id}`` and ``GET /api/v3/traces?query.*`` with the spans it
    holds, as Jaeger v2 does: a stream of ``{"result": TracesData}`` objects."""

    def __init__(self, spans):
        self.spans = spans
        super().__init__(self.answer)

    def answer(self, path: str) -> tuple[int, bytes]:
        url = urlparse(path)
        parts = url.path.strip("/").split("/")
        if parts[:3] != ["api", "v3", "traces"]:
            return 404, json.dumps({"error": {"message": "not found"}}).encode()
        if len(parts) == 4:
            found = [s for s in self.spans if s.trace_id == parts[3]]
        else:
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            lo = datetime.fromisoformat(q["query.start_time_min"]).timestamp() * 1e9
            hi = datetime.fromisoformat(q["query.start_time_max"]).timestamp() * 1e9
            hits = {s.trace_id for s in self.spans if lo <= s.start_ns <= hi and s.service == q["query.service_name"]}
            found = [s for s in self.spans if s.trace_id in hits]
        if not found:
            return 404, json.dumps({"error": {"httpCode": 404, "message": "trace not found"}}).encode()
        return 200, "".join(json.dumps({"result": encode_json([s])}) + "\n" for s in found).encode()  # a stream


def _with_service(spans, name):
    for s in spans:
        s.resource = {**s.resource, "service.name": name}
    return spans


def test_import_a_trace_from_jaeger(demo, tmp_path, capsys):
    spans = _with_service(list(from_log(demo)), "research-agent")
    jaeger = FakeJaeger(spans)
    try:
        trace_id = spans[0].trace_id
        out = tmp_path / "pulled.jsonl"
        assert main(["import", "--from", "jaeger", jaeger.url, "--trace", trace_id, "-o", str(out)]) == 0
        assert jaeger.seen == [f"/api/v3/traces/{trace_id}"]
        ours, theirs = Projection.from_log(demo), Projection.from_log(out)
        assert theirs.sessions() == ours.sessions() == ["jaeger-demo"]
        assert theirs.session_tree("jaeger-demo") == ours.session_tree("jaeger-demo")
        # the recorded texts ride on the chat spans: every call rebuilds and verifies
        capsys.readouterr()
        assert main(["context", str(out), "--at", "3"]) == 0
        assert "verified" in capsys.readouterr().out
    finally:
        jaeger.close()


def test_search_jaeger_by_service_and_time(demo, tmp_path):
    spans = _with_service(list(from_log(demo)), "research-agent")
    jaeger = FakeJaeger(spans)
    try:
        t0 = datetime.fromtimestamp(min(s.start_ns for s in spans) / 1e9 - 1, UTC).isoformat()
        t1 = datetime.fromtimestamp(max(s.start_ns for s in spans) / 1e9 + 1, UTC).isoformat()
        out = tmp_path / "range.jsonl"
        args = ["import", "--from", "jaeger", jaeger.url, "--service", "research-agent", "--since", t0, "--until", t1]
        assert main([*args, "-o", str(out)]) == 0
        query = parse_qs(urlparse(jaeger.seen[0]).query)
        assert query["query.service_name"] == ["research-agent"]
        assert Projection.from_log(out).session_tree("jaeger-demo") == Projection.from_log(demo).session_tree(
            "jaeger-demo"
        )
        late = datetime.fromtimestamp(max(s.start_ns for s in spans) / 1e9 + 60, UTC).isoformat()
        empty = ["import", "--from", "jaeger", jaeger.url, "--service", "research-agent", "--since", late]
        assert main([*empty, "--until", late, "-o", str(tmp_path / "none.jsonl")]) == 2  # nothing there: said so
    finally:
        jaeger.close()


def test_a_store_that_is_down_is_a_clear_error(tmp_path, capsys):
    code = main(["import", "--from", "jaeger", "http://127.0.0.1:9", "--trace", "ab" * 16, "-o", str(tmp_path / "x")])
    assert code == 2
    assert "cannot reach" in capsys.readouterr().err

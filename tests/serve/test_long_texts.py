"""Texts callctx sends so a receiver can rebuild a call travel whole: a 40 KB system prompt and
a 300 KB tool result, through export shaping and the official OTLP exporters (HTTP and gRPC),
rebuild and verify at ``callctx serve``, each span within the span cap and each request within
the request cap."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from callctx import ScriptedModel, agentic, setup, tool_call
from callctx.components.inputs import AgentInfo
from callctx.export.shaping import MAX_REQUEST, estimated_size
from callctx.projection.schema import BLOB_EVENT
from callctx.projection.texts import CARRIER
from callctx.serve import Receiver, serve_grpc, serve_http
from callctx.store.contexts import rebuild

SPAN_CAP = 256 * 1024
PROMPT = "".join(f"Rule {i}: read the whole dossier before answering, and cite it.\n" for i in range(640))
RESULT = "".join(f"line {i:06d} of the dossier: the harbour opened in {1800 + i % 200}.\n" for i in range(5600))


class Measured(SpanExporter):
    """The official exporter, with the size of each span and each request it was handed kept."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.spans: list[int] = []
        self.requests: list[int] = []
        self.names: list[str] = []

    def export(self, spans):
        sizes = [estimated_size(sp) for sp in spans]
        self.spans += sizes
        self.requests.append(sum(sizes))
        self.names += [sp.name for sp in spans]
        return self.inner.export(spans)

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis=30000):
        return self.inner.force_flush(timeout_millis)


def _strings(value):
    """Every string in a JSON-shaped value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def dossier(topic: str) -> str:
    """The whole dossier on a topic."""
    return RESULT


@pytest.fixture
def served(tmp_path):
    rx = Receiver(tmp_path / "served.jsonl", max_body=8 << 20)
    http_server, grpc_server = serve_http(rx, "127.0.0.1", 0), serve_grpc(rx, "127.0.0.1", 0)
    yield rx, http_server.server_port, grpc_server.port
    http_server.shutdown()
    grpc_server.stop(0)
    rx.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_long_prompt_and_a_long_tool_result_rebuild_at_serve(tmp_path, served, protocol):
    assert len(PROMPT) > 40_000 and len(RESULT) > 300_000
    rx, http_port, grpc_port = served
    official = (
        HttpExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces")
        if protocol == "http"
        else GrpcExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True)
    )
    measured = Measured(official)
    sent = _run_long_call(tmp_path, measured)  # closed: every span delivered, every request acknowledged

    assert max(measured.spans) <= SPAN_CAP and max(measured.requests) <= MAX_REQUEST
    assert CARRIER in measured.names  # the tool result did not fit on its chat span
    calls = rx.store.calls().items
    assert len(calls) == 2 == len(sent)
    for call, body in zip(calls, sent, strict=True):
        done = rebuild(rx.store.recorded(call))
        assert done.verified and done.body == body
    second = rebuild(rx.store.recorded(calls[1]))
    assert PROMPT.strip() in second.context.text and RESULT in list(_strings(second.body))


def _run_long_call(tmp_path, exporter) -> list:
    model = ScriptedModel({"research": [tool_call("dossier", topic="harbour"), "It opened in 1850."]})
    rt = setup(tmp_path / "events.jsonl", model=model, agent=AgentInfo(inline_prompt=PROMPT), exporters=[exporter])
    sent: list = []
    rt.observers.append(lambda call: sent.append(call.body))

    @agentic
    def research(question: str) -> str:
        return rt.exec(question, tools=[dossier])

    research("When did the harbour open?")
    rt.close()
    return sent


def test_a_long_tool_result_rebuilds_from_the_collectors_table(tmp_path, conn):
    from callctx.serve import TableReceiver
    from callctx.store.clickhouse import ClickHouseStore

    store = ClickHouseStore(conn, table="long_texts", create=True)
    rx = TableReceiver(store, follow_every=None, spool=tmp_path / "spool")
    server = serve_http(rx, "127.0.0.1", 0)
    try:
        sent = _run_long_call(tmp_path, HttpExporter(endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces"))
        rx.flush()
        calls = rx.store.calls().items
        assert len(calls) == 2
        for call, body in zip(calls, sent, strict=True):
            done = rebuild(rx.store.recorded(call))
            assert done.verified and done.body == body
    finally:
        server.shutdown()
        rx.close()


def test_parts_arrive_in_any_order_and_across_requests(tmp_path):
    """The receiver joins a text's parts whichever request and order they come in."""
    import hashlib

    from callctx.projection.texts import Assembler, BlobPart, split

    text = RESULT[:100_000]
    h = hashlib.sha256(text.encode()).hexdigest()
    pieces = split(h, text, 16 * 1024)
    assert len(pieces) == 7 and all(len(p["text"]) <= 16 * 1024 for p in pieces)
    joined = Assembler()
    got = [joined.add(BlobPart(h, p["part"], p["parts"], p["text"])) for p in reversed(pieces)]
    assert got[:-1] == [None] * 6 and got[-1].text == text
    bad = Assembler()
    for p in pieces:
        altered = p["text"].replace("harbour", "HARBOUR") if p["part"] == 3 else p["text"]
        assert bad.add(BlobPart(h, p["part"], p["parts"], altered)) is None  # altered on the way: not used
    assert bad.waiting == 0


def test_a_call_whose_texts_cannot_travel_is_named_once(tmp_path, caplog, monkeypatch):
    from callctx.export import shaping

    monkeypatch.setattr(shaping, "MAX_TEXTS", 100_000)
    monkeypatch.setattr(shaping, "_too_long_said", False)
    received = []

    class Keep(SpanExporter):
        def export(self, spans):
            received.extend(spans)
            return SpanExportResult.SUCCESS

    model = ScriptedModel({"research": [tool_call("dossier", topic="harbour"), "done"]})
    rt = setup(tmp_path / "events.jsonl", model=model, exporters=[Keep()])

    @agentic
    def research(question: str) -> str:
        return rt.exec(question, tools=[dossier])

    with caplog.at_level("WARNING", logger="callctx.export.shaping"):
        research("q")
        research("q")
        rt.close()
    said = [r for r in caplog.records if "cannot rebuild that call" in r.getMessage()]
    assert len(said) == 1 and "chat scripted" in said[0].getMessage()
    chats = [sp for sp in received if sp.name.startswith("chat ")]
    assert any(not [e for e in sp.events if e.name == BLOB_EVENT] for sp in chats)


def test_export_and_import_carry_long_texts_whole(tmp_path):
    from helpers.cli import cli_ok

    from callctx.store.local import LocalStore

    class Nowhere(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    sent = _run_long_call(tmp_path, Nowhere())
    cli_ok("export", tmp_path / "events.jsonl", "--format", "otlp", "-o", tmp_path / "trace.json")
    cli_ok("import", tmp_path / "trace.json", "-o", tmp_path / "imported.jsonl")
    with LocalStore(tmp_path / "imported.jsonl") as store:
        calls = store.calls().items
        assert [rebuild(store.recorded(c)).body for c in calls] == sent
        assert all(rebuild(store.recorded(c)).verified for c in calls)

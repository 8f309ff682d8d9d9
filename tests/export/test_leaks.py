"""Nothing secret leaves the process unshaped, on any path; the local log keeps everything.

A corpus of realistic fake secrets (tests/corpora/secrets.py) is put into every carrier an
agent has: the arguments of an agentic call, its output, the prompt sent to the model, a tool's
arguments and result, an exception's message (and so the span status). Then every way out is
read byte for byte: the exporter callctx adds (the protobuf bodies an OTLP receiver gets), the
exporter of a TracerProvider callctx joins (protobuf and OTLP/JSON), ``callctx export`` files
(OTLP/JSON and Jaeger JSON, mode 0600), and ``callctx serve``'s read API."""

from __future__ import annotations

import json
import os
import stat
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from corpora.secrets import CARRIERS, IN_CONTEXT, SECRETS, leaked
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callctx import ScriptedModel, agentic, setup, tool_call
from callctx.cli.main import main
from callctx.serve import Receiver, serve_http

ALL = SECRETS + IN_CONTEXT
SHAPES = list(CARRIERS.values())


class Boom(RuntimeError):
    pass


def lookup(key: str) -> str:
    """Look a key up in the vault."""
    return f"value for {key}"


def run_agent(rt, secrets) -> None:
    """One agentic call per secret, each carrying it in every carrier (a different text shape
    per secret, so every shape is met)."""

    @agentic
    def handle(note: str, i: int) -> str:
        rt.exec(f"Summarize this note:\n{note}", tools=[lookup])
        return f"done with\n{note}"

    @agentic
    def fail(note: str) -> None:
        raise Boom(f"could not parse\n{note}")

    for i, secret in enumerate(secrets):
        shaped = SHAPES[i % len(SHAPES)](secret.text)
        handle(shaped, i)
        with pytest.raises(Boom):
            fail(shaped)


def script(secrets):
    """The model asks for the tool with the secret as its argument, then answers with it."""
    answers = []
    for i, secret in enumerate(secrets):
        shaped = SHAPES[i % len(SHAPES)](secret.text)
        answers += [tool_call("lookup", key=shaped), f"the note says: {shaped}"]
    return ScriptedModel({"handle": answers})


class Sink(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.lock:
            self.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _text(blob: bytes) -> str:
    return blob.decode("utf-8", errors="replace")


def _leaks(text: str) -> list[str]:
    return [s.kind for s in ALL if leaked(s.sensitive, text)]


def _all_in_log(path) -> None:
    text = path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    missing = [s.kind for s in ALL if not leaked(s.sensitive, text)]
    assert missing == []  # the local log keeps full data


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The agent run once with callctx's own exporter pointed at a sink that keeps the bodies."""
    folder = tmp_path_factory.mktemp("leaks")
    Sink.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rt = setup(folder / "events.jsonl", model=script(ALL), endpoint=f"http://127.0.0.1:{server.server_port}")
    run_agent(rt, ALL)
    rt.close()
    server.shutdown()
    return folder / "events.jsonl", list(Sink.bodies)


def test_the_exporter_callctx_adds_sends_no_secret(exported):
    log, bodies = exported
    assert bodies  # something was exported
    assert _leaks("\n".join(_text(b) for b in bodies)) == []
    _all_in_log(log)


def test_a_provider_callctx_joins_gets_shaped_spans(tmp_path):
    theirs = TracerProvider()
    memory = InMemorySpanExporter()
    theirs.add_span_processor(SimpleSpanProcessor(memory))  # the program's own exporter, there first
    rt = setup(tmp_path / "events.jsonl", model=script(ALL), provider=theirs)
    assert rt.send_texts is False  # recorded texts go to a joined provider only when asked
    run_agent(rt, ALL)
    rt.close()
    spans = memory.get_finished_spans()
    assert spans
    request = encode_spans(spans)
    assert _leaks(_text(request.SerializeToString())) == []
    assert _leaks(json.dumps(MessageToDict(request))) == []
    assert not any(e.name == "callctx.blob" for sp in spans for e in sp.events)
    _all_in_log(tmp_path / "events.jsonl")


@pytest.mark.parametrize("fmt", ["otlp", "jaeger"])
def test_export_files_are_shaped_and_private(exported, tmp_path, fmt):
    log, _ = exported
    out = tmp_path / f"trace.{fmt}.json"
    assert main(["export", str(log), "--format", fmt, "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert _leaks(out.read_text()) == []
    raw = tmp_path / f"raw.{fmt}.json"
    assert main(["export", str(log), "--format", fmt, "--raw", "-o", str(raw)]) == 0
    assert stat.S_IMODE(os.stat(raw).st_mode) == 0o600
    assert len(_leaks(raw.read_text())) == len(ALL)  # --raw is everything, as recorded


def _get(port: int, path: str, token: str | None = None) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read().decode()


def test_the_read_api_serves_shaped_unless_the_token_holder_asks_for_raw(tmp_path):
    rx = Receiver(tmp_path / "received.jsonl", token="s3cret-token-for-tests")
    server = serve_http(rx, "127.0.0.1", 0)
    port = server.server_port
    try:
        exporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{port}/v1/traces", headers={"authorization": "Bearer s3cret-token-for-tests"}
        )
        rt = setup(tmp_path / "events.jsonl", model=script(ALL), shape=False, exporters=[exporter], send_texts=True)
        run_agent(rt, ALL)
        rt.close()
        _all_in_log(tmp_path / "received.jsonl")  # the receiver keeps what it received
        token = "s3cret-token-for-tests"
        traces = json.loads(_get(port, "/api/traces", token))["traces"]
        calls = json.loads(_get(port, "/api/calls?limit=1000", token))["calls"]
        assert traces and calls
        served = [_get(port, "/api/traces", token), _get(port, "/api/calls?limit=1000", token)]
        served += [_get(port, f"/api/traces/{t['id']}/tree", token) for t in traces]
        served += [_get(port, f"/api/calls/{c['index']}/context", token) for c in calls[:10]]
        served += [_get(port, f"/api/spans/{c['span_id']}/tree?final=1", token) for c in calls[:10]]
        assert _leaks("\n".join(served)) == []
        raw = "\n".join(_get(port, f"/api/traces/{t['id']}/tree?raw=1", token) for t in traces)
        raw += "\n".join(_get(port, f"/api/calls/{c['index']}/context?raw=1", token) for c in calls)
        assert len(_leaks(raw)) > len(ALL) // 2  # raw is what was received
    finally:
        server.shutdown()
        rx.close()

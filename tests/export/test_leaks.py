"""Nothing secret leaves the process unshaped, on any path; the local log keeps everything.

A corpus of realistic fake secrets (tests/corpora/secrets.py) is put into every carrier an
agent has: the arguments of an agentic call, its output, the prompt sent to the model, a tool's
arguments and result, an exception's message (and so the span status). And into every carrier
a span has besides: the resource (``service.name``, other values, the whole value under a key
that names a secret, a key), the instrumentation scope, event names, link attributes and
attribute keys (at any depth of nested maps, for spans that arrive over OTLP). Then every way
out is read byte for byte: the exporter callctx adds (the protobuf bodies an OTLP receiver
gets), the exporter of a TracerProvider callctx joins (protobuf and OTLP/JSON), ``callctx
export`` files (OTLP/JSON and Jaeger JSON, mode 0600, of an agent's log and of an imported
trace), and ``callctx serve``'s read API."""

from __future__ import annotations

import json
import os
import stat
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import pytest
from corpora.secrets import CARRIERS, IN_CONTEXT, SECRETS, Secret, leaked, leaks_in
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext

from callctx import ScriptedModel, agentic, setup, tool_call
from callctx.cli.main import main
from callctx.projection import otlp
from callctx.projection.events import SpanEvent, SpanLink
from callctx.projection.spans import SpanData
from callctx.serve import Receiver, serve_http

ALL = SECRETS + IN_CONTEXT
SHAPES = list(CARRIERS.values())
NAMED = ("api_key", "db.password", "auth_token", "client_secret", "x-api-key", "private_key")  # secret-named keys
REMOTE = SpanContext(trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0xB7AD6B7169203331, is_remote=True)


class Boom(RuntimeError):
    pass


def lookup(key: str) -> str:
    """Look a key up in the vault."""
    return f"value for {key}"


def shaped(i: int, secret: Secret, carrier: int = 0) -> str:
    """Secret ``i`` in a text of one of the carrier shapes (a different one per carrier, so
    that every secret meets several shapes and every shape many secrets)."""
    return SHAPES[(i + carrier) % len(SHAPES)](secret.text)


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
        text = shaped(i, secret)
        handle(text, i)
        with pytest.raises(Boom):
            fail(text)


def script(secrets):
    """The model asks for the tool with the secret as its argument, then answers with it."""
    answers = []
    for i, secret in enumerate(secrets):
        text = shaped(i, secret)
        answers += [tool_call("lookup", key=text), f"the note says: {text}"]
    return ScriptedModel({"handle": answers})


def _env_key(text: str) -> bool:
    """Can ``text`` be a key of ``OTEL_RESOURCE_ATTRIBUTES`` (which splits on ``,`` and ``=``)?"""
    return "," not in text and "=" not in text and text == text.strip()


def resource_of(secrets: list[Secret], start: int = 0, *, env: bool = False) -> dict[str, object]:
    """Resource attributes carrying every secret: in ``service.name``, in a value, as the whole
    value of a key that names a secret, and as a key (with ``env``, the keys the variable can
    hold; its values are URL-encoded, so they hold anything)."""
    attrs: dict[str, object] = {"service.name": "\n".join(shaped(start + i, s, 1) for i, s in enumerate(secrets))}
    for i, s in enumerate(secrets, start):
        attrs[f"deploy.note.{i}"] = shaped(i, s, 2)
        attrs[f"vendor{i}.{NAMED[i % len(NAMED)]}"] = s.sensitive
        if not env or _env_key(s.text):
            attrs[s.text] = "1"
    return attrs


def set_resource_env(mp: pytest.MonkeyPatch) -> None:
    """The resource of callctx's own provider, as the program's environment gives it."""
    attrs = resource_of(ALL, env=True)
    mp.setenv("OTEL_SERVICE_NAME", str(attrs.pop("service.name")))
    mp.setenv("OTEL_RESOURCE_ATTRIBUTES", ",".join(f"{k}={quote(str(v), safe='')}" for k, v in attrs.items()))


@pytest.fixture
def resource_env(monkeypatch) -> None:
    set_resource_env(monkeypatch)


def run_foreign(provider: TracerProvider, secrets: list[Secret]) -> None:
    """One span per secret from another library's instrumentation: its tracer (the scope) named
    by the secret, with scope attributes, an attribute keyed by it, an event named by it and a
    link carrying it (in a value, as a key, and whole under a secret-named key)."""
    for i, s in enumerate(secrets):
        tracer = provider.get_tracer(shaped(i, s, 3), "1.0", attributes={"scope.note": shaped(i, s, 6)})
        link = Link(REMOTE, {"note": shaped(i, s, 4), s.text: 1, "api_key": s.sensitive})
        attrs = {s.text: "x", "http.method": "GET"}
        with tracer.start_as_current_span("vault.lookup", attributes=attrs, links=[link]) as span:
            span.add_event(shaped(i, s, 5), {s.text: 2, "password": s.sensitive})


def _deep(i: int, s: Secret) -> dict[str, object]:
    """Maps three deep, the secret a key at each depth (and in a value at the bottom)."""
    return {"outer": {s.text: {"inner": [{s.text: shaped(i, s, 7), "n": 1}]}, "ok": True}}


def foreign_request(secrets: list[Secret]) -> dict[str, object]:
    """An OTLP/JSON request from other processes: one resource per secret, carrying it in every
    carrier a span has, nested maps included."""
    spans = []
    for i, s in enumerate(secrets):
        start = 1_714_560_000_000_000_000 + i * 1_000_000
        deep = _deep(i, s)
        spans.append(
            SpanData(
                trace_id=f"{0xFEED0000 + i:032x}",
                span_id=f"{0xBEEF0000 + i:016x}",
                parent_id=None,
                name="vault.lookup",
                start_ns=start,
                end_ns=start + 1000,
                attributes={s.text: "x", "request": deep, "api_key": s.sensitive},
                events=[SpanEvent(shaped(i, s, 5), start + 500, {s.text: 2, "detail": deep})],
                resource={**resource_of([s], i), "deploy.meta": deep},
                scope=shaped(i, s, 3),
                links=[
                    SpanLink(
                        f"{REMOTE.trace_id:032x}", f"{REMOTE.span_id:016x}", {"note": shaped(i, s, 4), "meta": deep}
                    )
                ],
            )
        )
    return otlp.encode_json(spans)


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
    check = leaks_in(text)
    return [s.kind for s in ALL if check(s.sensitive)]


def _found(text: str) -> list[str]:
    """The kinds found in a text that should hold them all (:func:`leaked` stops at the first sign)."""
    return [s.kind for s in ALL if leaked(s.sensitive, text)]


def _all_in_log(path) -> None:
    text = path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    missing = [s.kind for s in ALL if not leaked(s.sensitive, text)]
    assert missing == []  # the local log keeps full data
    assert "deploy.note.0" in text and "vault.lookup" in text  # the resource and the foreign spans came too


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Iterator[tuple[Path, list[bytes]]]:
    """The agent run once with callctx's own exporter pointed at a sink that keeps the bodies,
    its resource from the environment, spans of another instrumentation beside its own."""
    folder = tmp_path_factory.mktemp("leaks")
    Sink.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with pytest.MonkeyPatch.context() as mp:
        set_resource_env(mp)
        url = f"http://127.0.0.1:{server.server_port}"
        rt = setup(folder / "events.jsonl", model=script(ALL), endpoint=url, exit_timeout=60)
    run_agent(rt, ALL)
    run_foreign(rt.provider, ALL)
    rt.close()
    server.shutdown()
    yield folder / "events.jsonl", list(Sink.bodies)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    """An event log imported from an OTLP/JSON trace of other processes (nested maps and all)."""
    folder = tmp_path_factory.mktemp("imported")
    src = folder / "trace.json"
    src.write_text(json.dumps(foreign_request(ALL)))
    log = folder / "events.jsonl"
    assert main(["import", str(src), "--format", "otlp", "-o", str(log)]) == 0
    os.chmod(log, 0o600)
    return log


def test_the_exporter_callctx_adds_sends_no_secret(exported):
    log, bodies = exported
    assert bodies  # something was exported
    assert _leaks("\n".join(_text(b) for b in bodies)) == []
    _all_in_log(log)


def test_a_provider_callctx_joins_gets_shaped_spans(tmp_path):
    theirs = TracerProvider(resource=Resource(resource_of(ALL)))  # type: ignore[arg-type]
    memory = InMemorySpanExporter()
    theirs.add_span_processor(SimpleSpanProcessor(memory))  # the program's own exporter, there first
    rt = setup(tmp_path / "events.jsonl", model=script(ALL), provider=theirs)
    assert rt.send_texts is False  # recorded texts go to a joined provider only when asked
    run_agent(rt, ALL)
    run_foreign(theirs, ALL)
    rt.close()
    spans = memory.get_finished_spans()
    assert spans
    request = encode_spans(spans)
    assert _leaks(_text(request.SerializeToString())) == []
    assert _leaks(json.dumps(MessageToDict(request))) == []
    assert not any(e.name == "callctx.blob" for sp in spans for e in sp.events)
    _all_in_log(tmp_path / "events.jsonl")


@pytest.mark.parametrize("source", ["agent", "imported"])
@pytest.mark.parametrize("fmt", ["otlp", "jaeger"])
def test_export_files_are_shaped_and_private(request, tmp_path, fmt, source):
    log = request.getfixturevalue("exported")[0] if source == "agent" else request.getfixturevalue("imported")
    _all_in_log(log)
    out = tmp_path / f"trace.{fmt}.json"
    assert main(["export", str(log), "--format", fmt, "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert _leaks(out.read_text()) == []
    json.loads(out.read_text())
    raw = tmp_path / f"raw.{fmt}.json"
    assert main(["export", str(log), "--format", fmt, "--raw", "-o", str(raw)]) == 0
    assert stat.S_IMODE(os.stat(raw).st_mode) == 0o600
    assert len(_found(raw.read_text())) == len(ALL)  # --raw is everything, as recorded


def _get(port: int, path: str, token: str | None = None) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read().decode()


def _post(port: int, path: str, body: bytes, token: str) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def test_the_read_api_serves_shaped_unless_the_token_holder_asks_for_raw(tmp_path, resource_env):
    token = "s3cret-token-for-tests"
    rx = Receiver(tmp_path / "received.jsonl", token=token)
    server = serve_http(rx, "127.0.0.1", 0)
    port = server.server_port
    try:
        exporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{port}/v1/traces", headers={"authorization": f"Bearer {token}"}
        )
        rt = setup(tmp_path / "events.jsonl", model=script(ALL), shape=False, exporters=[exporter], send_texts=True)
        run_agent(rt, ALL)
        run_foreign(rt.provider, ALL)
        rt.close()
        _post(port, "/v1/traces", json.dumps(foreign_request(ALL)).encode(), token)
        rx.store.refresh()
        _all_in_log(tmp_path / "received.jsonl")  # the receiver keeps what it received
        traces = json.loads(_get(port, "/api/traces?limit=1000", token))["traces"]
        calls = json.loads(_get(port, "/api/calls?limit=1000", token))["calls"]
        assert traces and calls
        assert len(traces) >= 2 * len(ALL)  # the agent's and the foreign ones
        served = [_get(port, "/api/traces?limit=1000", token), _get(port, "/api/calls?limit=1000", token)]
        served += [_get(port, f"/api/traces/{t['id']}/tree", token) for t in traces]
        served += [_get(port, f"/api/calls/{c['index']}/context", token) for c in calls[:10]]
        served += [_get(port, f"/api/spans/{c['span_id']}/tree?final=1", token) for c in calls[:10]]
        assert _leaks("\n".join(served)) == []
        raw = "\n".join(_get(port, f"/api/traces/{t['id']}/tree?raw=1", token) for t in traces)
        raw += "\n".join(_get(port, f"/api/calls/{c['index']}/context?raw=1", token) for c in calls)
        assert len(_found(raw)) > len(ALL) // 2  # raw is what was received
    finally:
        server.shutdown()
        rx.close()

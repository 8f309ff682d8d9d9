"""Rebuilds the framework fixtures: runs each agent script in its extra environment against the
fake OpenAI server and an OTLP/HTTP sink, then writes what arrived.

    .venv/bin/python tests/frameworks/capture.py [NAME ...]     # default: every framework

For each NAME (an extra environment, built by ``bash .ci/extras``; script ``NAME_agent.py``):

- ``fixtures/NAME.otlp.json``: every OTLP request the script exported, merged into one OTLP/JSON
  ``ExportTraceServiceRequest`` (protobuf's JSON mapping with hex trace/span ids, as the OTLP spec
  writes them): resources, scopes, spans, attributes and events exactly as sent.
- ``fake_requests/NAME.json``: the requests the fake OpenAI server received, in order
  (``[{"path": ..., "body": ...}]``).

Ids and timestamps differ on every run; everything else is deterministic.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]  # tests/: extras, fake_openai

from google.protobuf.json_format import MessageToDict  # noqa: E402
from helpers.extras import venv_python  # noqa: E402
from helpers.fake_openai import FakeOpenAI  # noqa: E402
from helpers.serving import reply  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

FRAMEWORKS = ["openai_agents", "langgraph"]
ID_KEYS = {"traceId", "spanId", "parentSpanId"}


class Sink:
    """An OTLP/HTTP receiver that keeps the raw protobuf bodies sent to /v1/traces."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    raw = gzip.decompress(raw)
                elif encoding == "deflate":
                    raw = zlib.decompress(raw)
                ok = self.path.split("?")[0] == "/v1/traces" and "protobuf" in (self.headers.get("Content-Type") or "")
                if ok:
                    with lock:
                        sink.bodies.append(raw)
                body = ExportTraceServiceRequest().SerializeToString() if ok else b"not an OTLP protobuf trace request"
                reply(self, 200 if ok else 400, body, "application/x-protobuf")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def request(self) -> ExportTraceServiceRequest:
        """Everything received, as one request."""
        merged = ExportTraceServiceRequest()
        for body in self.bodies:
            part = ExportTraceServiceRequest()
            part.ParseFromString(body)
            merged.resource_spans.extend(part.resource_spans)
        return merged


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in ID_KEYS and isinstance(v, str) else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def otlp_json(req: ExportTraceServiceRequest) -> dict[str, Any]:
    return _hex_ids(MessageToDict(req, use_integers_for_enums=True))


def capture(name: str) -> int:
    python = venv_python(name)
    if python is None:
        print(f"{name}: the extra environment is not built (bash .ci/extras)", file=sys.stderr)
        return 0
    sink = Sink()
    with FakeOpenAI() as fake:
        proc = subprocess.run(
            [str(python), str(HERE / f"{name}_agent.py"), sink.url, fake.base_url],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        requests = list(fake.requests)
    sink.server.shutdown()
    if proc.returncode != 0:
        print(f"{name}: the agent script failed:\n{proc.stderr[-4000:]}", file=sys.stderr)
        return 0
    req = sink.request()
    spans = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
    (HERE / "fixtures").mkdir(exist_ok=True)
    (HERE / "fake_requests").mkdir(exist_ok=True)
    (HERE / "fixtures" / f"{name}.otlp.json").write_text(json.dumps(otlp_json(req), indent=1) + "\n")
    (HERE / "fake_requests" / f"{name}.json").write_text(json.dumps(requests, indent=1) + "\n")
    answer = proc.stdout.strip()[:100]
    print(
        f"{name}: {spans} spans in {len(sink.bodies)} OTLP requests, {len(requests)} model requests; answer {answer!r}"
    )
    return spans


if __name__ == "__main__":
    names = sys.argv[1:] or FRAMEWORKS
    results = {name: capture(name) for name in names}
    sys.exit(0 if all(results.values()) else 1)

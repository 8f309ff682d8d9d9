"""End to end with Arize Phoenix: the demo exports to Phoenix over OTLP, the trace is read back
through Phoenix's REST API, and the tree Phoenix holds equals ours. Runs when the Phoenix
environment is built (``make extras``); Phoenix starts in about ten seconds."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from datetime import datetime

import pytest
from extras import venv_python

from callctx import setup
from callctx.demo import run
from callctx.projection import Projection
from callctx.projection.spans import SpanData, records

pytestmark = pytest.mark.phoenix
PROJECT = "callctx-e2e"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    python = venv_python("phoenix")
    if python is None:
        pytest.skip("the Phoenix environment is not built (make extras)")
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix")),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_LOG_MIGRATIONS": "false",
    }
    proc = subprocess.Popen(
        [str(python.parent / "phoenix"), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{base}/healthz", timeout=2).status == 200:
                break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"Phoenix exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("Phoenix did not start within 120 s")
    yield base
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _ns(stamp: str) -> int:
    dt = datetime.fromisoformat(stamp)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def phoenix_spans(base: str, trace_id: str) -> list[dict]:
    url = f"{base}/v1/projects/{PROJECT}/spans?trace_id={trace_id}&limit=1000"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())["data"]


def as_span(js: dict) -> SpanData:
    """A span as Phoenix returns it, back in OTLP terms (Phoenix moves the kind out of the attributes)."""
    attrs = dict(js.get("attributes") or {})
    if js.get("span_kind") and js["span_kind"] != "UNKNOWN":
        attrs["openinference.span.kind"] = js["span_kind"]
    status = {"OK": "ok", "ERROR": "error"}.get(js.get("status_code"), "unset")
    ctx = js["context"]
    start, end = _ns(js["start_time"]), _ns(js["end_time"])
    error = js.get("status_message") or None
    return SpanData(ctx["trace_id"], ctx["span_id"], js.get("parent_id"), js["name"], start, end, attrs, status, error)


def test_the_tree_phoenix_holds_equals_ours(phoenix, tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={PROJECT}")
    rt = setup(tmp_path / "events.jsonl", endpoint=phoenix, session_id="phoenix-e2e")
    run(rt)
    rt.close()
    ours = rt.projection
    trace_ids = {n.trace_id for n in ours.nodes.values()}
    assert len(trace_ids) == 1
    trace_id = trace_ids.pop()
    expected = len(ours.nodes)
    deadline = time.monotonic() + 30
    got: list[dict] = []
    while time.monotonic() < deadline:
        try:
            got = phoenix_spans(phoenix, trace_id)
        except OSError:
            got = []
        if len(got) >= expected:
            break
        time.sleep(0.2)
    assert len(got) == expected
    theirs = Projection()
    theirs.apply_all([r for r in records(as_span(js) for js in got) if type(r).__name__ != "Blob"])
    assert theirs.sessions() == ours.sessions() == ["phoenix-e2e"]
    assert theirs.session_tree("phoenix-e2e") == ours.session_tree("phoenix-e2e")
    for span_id, node in ours.nodes.items():
        if node.holds:
            assert theirs.tree(span_id) == ours.tree(span_id), node.function

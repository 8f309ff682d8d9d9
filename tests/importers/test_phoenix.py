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
from datetime import UTC, datetime

import pytest
from helpers.extras import venv_python

from callctx import setup
from callctx.cli.main import main
from callctx.cli.research_agent import run
from callctx.importers import phoenix_span
from callctx.projection import Projection
from callctx.projection.batch import Batch, records

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
            time.sleep(0.3)  # polls until Phoenix answers, or exits
    else:
        proc.kill()
        pytest.fail("Phoenix did not start within 120 s")
    yield base
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def phoenix_spans(base: str, trace_id: str) -> list[dict]:
    url = f"{base}/v1/projects/{PROJECT}/spans?trace_id={trace_id}&limit=1000"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())["data"]


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
    theirs.apply_all([r for r in records(Batch([phoenix_span(js) for js in got])) if type(r).__name__ != "Blob"])
    assert theirs.sessions() == ours.sessions() == ["phoenix-e2e"]
    assert theirs.session_tree("phoenix-e2e") == ours.session_tree("phoenix-e2e")
    for span_id, node in ours.nodes.items():
        if node.holds:
            assert theirs.view(span_id).text == ours.view(span_id).text, node.function

    # callctx import pulls the same trace, and the same session, from Phoenix's REST API
    for how in (["--trace", trace_id], ["--session", "phoenix-e2e"]):
        pulled = tmp_path / f"pulled-{how[0][2:]}.jsonl"
        args = ["import", "--from", "phoenix", phoenix, "--project", PROJECT, *how, "-o", str(pulled)]
        assert main(args) == 0
        again = Projection.from_log(pulled)
        assert again.sessions() == ["phoenix-e2e"]
        assert again.session_tree("phoenix-e2e") == ours.session_tree("phoenix-e2e")
    start = min(n.start_ns for n in ours.nodes.values())
    since = datetime.fromtimestamp(start / 1e9 - 5, UTC).isoformat()
    ranged = tmp_path / "pulled-range.jsonl"
    args = ["import", "--from", "phoenix", phoenix, "--project", PROJECT, "--since", since, "-o", str(ranged)]
    assert main(args) == 0
    assert Projection.from_log(ranged).session_tree("phoenix-e2e") == ours.session_tree("phoenix-e2e")

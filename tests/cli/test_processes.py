"""The command line as a real process: a bad start answered in one line and exit status 2, and the
demo naming its service."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


@pytest.fixture
def busy():
    """A port another process's socket listens on."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        yield s.getsockname()[1]


def _run(tmp_path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "callctx.cli", *map(str, args)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )


@pytest.mark.parametrize(
    "args",
    [
        ("serve", "--log", "e.jsonl", "--port", "{busy}", "--grpc-port", "-1"),
        ("serve", "--log", "e.jsonl", "--port", "0", "--grpc-port", "{busy}"),
        ("ui", "e.jsonl", "--port", "{busy}"),
    ],
    ids=["serve-http", "serve-grpc", "ui"],
)
def test_a_busy_port_is_one_line(tmp_path, busy, args):
    done = _run(tmp_path, *(a.format(busy=busy) for a in args))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("callctx: cannot listen") and f":{busy}: " in done.stderr


def _service(log) -> str:
    from callctx.projection.events import SpanStarted
    from callctx.projection.log_reader import read_log

    return next(r.resource["service.name"] for r in read_log(log) if isinstance(r, SpanStarted) and r.resource)


def test_the_demo_names_its_service_unless_the_environment_does(tmp_path):
    import os

    base = {k: v for k, v in os.environ.items() if k not in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES")}
    for env, name in (({}, "callctx-demo"), ({"OTEL_SERVICE_NAME": "my-agents"}, "my-agents")):
        out = tmp_path / name
        done = subprocess.run([sys.executable, "-m", "callctx.cli", "demo", "--out", out, "--quiet"],
                              capture_output=True, text=True, timeout=300, env={**base, **env})  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert _service(out / "events.jsonl") == name

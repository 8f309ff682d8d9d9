"""Every server command answers a bad start in one line and exit status 2, as a real process."""

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

"""What an OTLP exporter costs each @agentic call when its endpoint is down or hangs, against
no exporter at all, measured in the same run (export runs on a background thread: the
caller's cost should not move). Also the time the program takes to exit (bounded by
``exit_timeout``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from callctx import agentic, setup
    rt = setup(sys.argv[1], exit_timeout=1.0)

    @agentic
    def work(i):
        return i

    for i in range(500):  # warm up
        work(i)
    t0 = time.perf_counter()
    for i in range(5000):
        work(i)
    print(f"{(time.perf_counter() - t0) / 5000 * 1e6:.2f}", flush=True)
    """
)


class Hang(BaseHTTPRequestHandler):
    release = threading.Event()

    def do_POST(self) -> None:  # accepts, never answers (until the bench ends)
        self.release.wait(120)

    def log_message(self, *args: object) -> None:
        pass


def run(folder: Path, endpoint: str | None, name: str) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder / f"{name}.jsonl")], env=env, capture_output=True, text=True
    )
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return float(proc.stdout.strip()), time.monotonic() - t0


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="callctx-bench-"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hang)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_us, base_s = run(folder, None, "none")
    print(f"no exporter (baseline):   {base_us:8.2f} µs/call, exit after {base_s:5.2f} s")
    for name, endpoint in (("down", "http://127.0.0.1:9"), ("hanging", f"http://127.0.0.1:{server.server_port}")):
        us, s = run(folder, endpoint, name)
        print(
            f"endpoint {name + ':':<9}        {us:8.2f} µs/call ({us / base_us:.2f}x, +{us - base_us:.2f} µs; "
            f"target: under +1,000 µs), exit after {s:5.2f} s (baseline + {s - base_s:.2f} s; bound 1 s)"
        )
    Hang.release.set()
    server.shutdown()


if __name__ == "__main__":
    main()

"""``callctx serve --store chdb:… --ack spool`` killed with SIGKILL while a sender is in the
middle of its requests, then started again with the same spool: every request that was
answered 200 has all its spans in the table, and no span is there twice, wherever the kill
landed (before, during or after the writer's insert, while a request was being spooled)."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from callctx.projection.otlp import encode_protobuf
from callctx.projection.spans import SpanData
from callctx.serve.spool import leftover

CALLCTX = str(Path(sys.executable).with_name("callctx"))
SPANS = 20  # per request: one trace each


def body(n: int) -> bytes:
    tid = f"{n + 1:032x}"
    root = f"{n + 1:08x}00000000"
    spans = [SpanData(tid, root, None, "invoke_agent", 1_700_000_000_000_000_000 + n, 1_700_000_000_000_000_999 + n)]
    for i in range(1, SPANS):
        start = 1_700_000_000_000_000_000 + n + i
        spans.append(SpanData(tid, f"{n + 1:08x}{i:08x}", root, f"step {i}", start, start + 10))
    return encode_protobuf(spans, service="agent").SerializeToString()


def serve(chdb: Path, spool: Path) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [CALLCTX, "serve", "--store", f"chdb:{chdb}", "--spool", str(spool), "--port", "0", "--grpc-port", "-1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()
    found = re.search(r"http://[^:]+:(\d+)", first)
    if not found:
        proc.kill()
        raise AssertionError(f"serve did not start: {first} {proc.communicate(timeout=30)}")
    return proc, int(found.group(1))


def get(port: int, path: str) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path)
    resp = c.getresponse()
    data = resp.read()
    c.close()
    assert resp.status == 200, data
    return json.loads(data)


@pytest.mark.parametrize("kill_after", [1, 4, 12])
def test_a_killed_receiver_loses_no_answered_span_and_writes_none_twice(tmp_path, kill_after):
    pytest.importorskip("chdb")
    chdb, spool = tmp_path / "db", tmp_path / "spool"
    proc, port = serve(chdb, spool)
    answered: list[int] = []
    enough = threading.Event()

    def send() -> None:  # one request after another, until the connection dies with the process
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for n in range(200):
                c.request("POST", "/v1/traces", body(n), {"Content-Type": "application/x-protobuf"})
                resp = c.getresponse()
                resp.read()
                if resp.status == 200:
                    answered.append(n)
                if len(answered) >= kill_after:
                    enough.set()
        except OSError:
            pass
        finally:
            enough.set()
            c.close()

    sender = threading.Thread(target=send)
    sender.start()
    enough.wait(120)
    proc.send_signal(signal.SIGKILL)  # while the sender goes on: wherever the receiver is
    proc.wait(60)
    sender.join(60)
    acked = list(answered)
    assert len(acked) >= kill_after

    proc, port = serve(chdb, spool)  # the same table and spool
    try:
        traces = get(port, "/api/traces?limit=1000")["traces"]
        spans = {t["id"]: t["spans"] for t in traces}
        for n in acked:
            assert spans.get(f"{n + 1:032x}") == SPANS, (
                f"request {n} was answered; its trace holds {spans.get(f'{n + 1:032x}')} spans"
            )
        assert all(count == SPANS for count in spans.values())  # none twice, none torn in half
        assert leftover(spool) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)

"""The index following a log that its own process writes: records the writer hands over are
taken as they are, everything else decoded, and what is indexed is what the log holds; the
tail read a bounded step at a time; a following thread that gives way to a server's requests
and still keeps the index close behind; another process opening the index harms nothing."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers.otlp_requests import build, span
from helpers.stores import all_calls, served_trees

from callctx.projection.events import SpanEnded, SpanStarted, encode
from callctx.projection.log import EventLog
from callctx.projection.log_reader import Known, LogTail
from callctx.serve import Receiver
from callctx.serve.ingest import index_path
from callctx.store import local
from callctx.store.follow import Traffic
from callctx.store.local import LocalStore

TRACE = bytes.fromhex("ab" * 16)
CHAT = [("gen_ai.operation.name", "chat"), ("gen_ai.request.model", "m")]


def started(i: int) -> SpanStarted:
    return SpanStarted("ab" * 16, format(i, "016x"), None, f"s{i}", i, {"n": i})


def ended(i: int) -> SpanEnded:
    return SpanEnded("ab" * 16, format(i, "016x"), i + 1)


def lines(recs: list) -> bytes:
    return b"".join(encode(r) for r in recs)


def request(first: int, n: int):
    """A protobuf request of ``n`` model calls under one agent span (span ids from ``first``)."""
    agent = [("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", f"a{first}")]
    spans = [span(TRACE, first, None, "invoke_agent", 10 * first, 10 * first + 9, agent)]
    spans += [span(TRACE, first + k, first, "chat m", 10 * first + k, 10 * first + k + 1, CHAT) for k in range(1, n)]
    return build([([("service.name", "svc")], [("scope", spans)])])


# ---- what a writer hands over -------------------------------------------------------------------
def test_records_handed_over_are_taken_as_they_are_and_the_rest_decoded(tmp_path):
    path = tmp_path / "log.jsonl"
    mine, theirs = [started(1), ended(1)], [started(2)]
    with EventLog(path) as log:
        tail = LogTail(path, known=Known())
        tail.known.add(lines(mine), mine)
        log.write(lines(mine[:1]))
        log.write(lines(theirs))  # another writer's record between two of ours
        log.write(lines(mine[1:]))
        got = [loc.record for block in tail.read() for loc in block][1:]  # after the header
    assert got == [mine[0], theirs[0], mine[1]]
    assert got[0] is mine[0] and got[2] is mine[1]  # not decoded again
    assert got[1] is not theirs[0]  # read from the log
    assert not tail.known  # nothing left waiting


def test_records_handed_over_and_never_written_are_not_indexed(tmp_path):
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:
        store = LocalStore(path)
        store.expect(lines([started(7)]), [started(7)])  # the write never happens
        log.write(lines([started(8)]))
        store.refresh()
        assert store.index.span(format(7, "016x")) is None and store.index.span(format(8, "016x")) is not None
        store.close()


def test_lines_handed_over_past_the_bound_are_decoded_instead(tmp_path):
    path = tmp_path / "log.jsonl"
    recs = [started(i) for i in range(1, 40)]
    known = Known(max_bytes=sum(len(encode(r)) for r in recs[-5:]))  # room for the last five
    tail = LogTail(path, known=known)
    with EventLog(path) as log:
        known.add(lines(recs), recs)
        log.write(lines(recs))
        got = [loc.record for block in tail.read() for loc in block][1:]
    assert got == recs
    taken = [g is r for g, r in zip(got, recs, strict=True)]
    assert taken.count(True) == 5 and taken[-5:] == [True] * 5  # the latest were kept, the oldest let go


def test_lines_nobody_takes_are_let_go_as_newer_ones_come():
    known = Known(max_bytes=3000)
    recs = [started(i) for i in range(1, 200)]
    for rec in recs:
        known.add(encode(rec), [rec])
    found = known.take([encode(r)[:-1] for r in recs])
    assert found[-1] is recs[-1] and found[0] is None
    assert sum(len(encode(r)) for r, f in zip(recs, found, strict=True) if f is not None) <= 3000


def test_a_receiver_indexes_what_its_log_holds(tmp_path):
    rx = Receiver(tmp_path / "received.jsonl", index_every=None)
    for first in (1, 20, 40):
        rx.ingest(rx.decode(request(first, 8).SerializeToString(), "application/x-protobuf"))
    rx.store.refresh()
    assert not rx.store._tail.known  # every record was taken as handed over
    served, calls = served_trees(rx.store), all_calls(rx.store)
    rx.close()
    again = LocalStore(rx.log.path, finished=True)  # the same log, indexed from nothing, decoded
    assert served_trees(again) == served and all_calls(again) == calls and len(calls) == 21
    again.close()


# ---- a bounded step at a time -------------------------------------------------------------------
@pytest.mark.parametrize("limit", [1, 100, 1000, 1 << 20])
def test_the_tail_reads_a_step_at_a_time_whole_lines_as_one_read(tmp_path, limit):
    path = tmp_path / "log.jsonl"
    recs = [started(i) for i in range(1, 30)] + [SpanStarted("ab" * 16, "f" * 16, None, "x" * 3000, 1)]
    with EventLog(path) as log:
        log.write(lines(recs))
    whole = [loc for block in LogTail(path).read() for loc in block]
    tail = LogTail(path)
    stepped = []
    reads = 0
    while True:
        stepped += [loc for block in tail.read(limit) for loc in block]
        reads += 1
        if not tail.more:
            break
    assert stepped == whole and tail.offset == path.stat().st_size
    assert reads > 1 if limit < 1000 else True  # a line longer than the limit is read whole, once


# ---- a following thread that gives way ------------------------------------------------------------
def test_the_follower_gives_way_to_a_request_then_catches_up(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "FOLLOW_STEP", 256)
    rx = Receiver(tmp_path / "received.jsonl", index_every=None)
    traffic = Traffic()
    rx.store.follow(0.02, traffic=traffic, give_way=0.6)
    try:
        with traffic.request():  # a request in progress: the follower waits for it (at most give_way)
            rx.ingest(rx.decode(request(1, 10).SerializeToString(), "application/x-protobuf"))
            time.sleep(0.25)
            assert rx.store.index.span_count() == 0
        deadline = time.monotonic() + 5
        while rx.store.index.span_count() < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rx.store.index.span_count() == 10  # caught up once the request was over
        with traffic.request():  # a request that never ends does not hold the index back for long
            rx.ingest(rx.decode(request(20, 10).SerializeToString(), "application/x-protobuf"))
            deadline = time.monotonic() + 5
            while rx.store.index.span_count() < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert rx.store.index.span_count() == 20
    finally:
        rx.close()


def test_the_ledger_is_fed_once_the_server_is_idle_and_readers_never_wait_for_it(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "LEDGER_IDLE", 0.3)
    rx = Receiver(tmp_path / "received.jsonl", index_every=None)
    traffic = Traffic()
    rx.store.follow(0.02, traffic=traffic, give_way=0.05)
    try:
        with traffic.request():
            rx.ingest(rx.decode(request(1, 6).SerializeToString(), "application/x-protobuf"))
        time.sleep(0.1)
        assert rx.store.ledger.fed == 0  # the server was busy a moment ago
        assert rx.store.cache(5).span_id == bytes([6]).hex() * 8  # a reader brings it up to what it asks
        deadline = time.monotonic() + 5
        while rx.store.ledger.fed < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert rx.store.ledger.fed == 5
    finally:
        rx.close()


def test_traffic_counts_requests_from_any_thread():
    traffic = Traffic()
    assert traffic.quiet() and traffic.idle(0.0)
    entered, leave = threading.Event(), threading.Event()

    def one() -> None:
        with traffic.request():
            entered.set()
            leave.wait(5)

    t = threading.Thread(target=one)
    t.start()
    entered.wait(5)
    assert not traffic.quiet(0.05) and not traffic.idle(0.0)
    leave.set()
    assert traffic.quiet(5)
    t.join()
    assert not traffic.idle(60) and traffic.idle(0.0)


# ---- another process on the same index ------------------------------------------------------------
WRITER = """
import sys
from helpers.otlp_requests import build, span
from callctx.serve import Receiver

TRACE = bytes.fromhex("ab" * 16)
rx = Receiver(sys.argv[1], index_every=None)
for first in range(1, 200, 10):
    spans = [span(TRACE, first + k, None, "s", first + k, first + k + 1) for k in range(10)]
    body = build([([("service.name", "svc")], [("scope", spans)])])
    rx.ingest(rx.decode(body.SerializeToString(), "application/x-protobuf"))
    rx.store.refresh()
    if first == 1:
        print("ready", flush=True)
        sys.stdin.readline()  # the other process looks at the index meanwhile
print(rx.store.index.span_count(), flush=True)
rx.close()
"""
SHM_DMS = 128  # the byte of SQLite's -shm file every connection holds a shared lock on while it uses the file


def test_the_receiver_keeps_its_hold_on_the_index_for_another_process_to_see(tmp_path):
    """SQLite's processes agree through POSIX locks on the index's shared memory: one that finds no
    lock held resets the memory, and a process still using it dies of SIGBUS. Closing any
    descriptor of a file lets go of every such lock its process holds, so the index never opens
    SQLite's files beside it once they are in use."""
    log = tmp_path / "received.jsonl"
    tests = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": tests},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline().strip() == "ready"
        fd = os.open(f"{index_path(log)}-shm", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # the writer holds it: nobody may take it for unused
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SHM_DMS)
        finally:
            os.close(fd)
        other = sqlite3.connect(index_path(log))  # a reader of the index in another process
        assert other.execute("SELECT count(*) FROM spans").fetchone()[0] == 10
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, _ = proc.communicate(timeout=120)
        other.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out.strip() == "200"

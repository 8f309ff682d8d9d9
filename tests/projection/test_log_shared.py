"""The event log shared by many writers, torn by a killed one, and on a full disk."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from callctx.projection.events import LogHeader, SpanStarted, encode
from callctx.projection.log import EventLog
from callctx.projection.log_reader import read_log

HERE = Path(__file__).resolve().parent
LARGE = {40: 1 << 20, 90: 1 << 19, 150: 1 << 18, 210: 3 << 16, 280: 1 << 16}  # index -> bytes: 2 MiB per writer


def record(writer: int, i: int, size: int | None = None) -> SpanStarted:
    """Record ``i`` of ``writer``: its id says whose and which, its payload has a known size."""
    if size is None:
        size = LARGE.get(i, i * 7919 % 3000)
    return SpanStarted("ab" * 16, f"{writer:04x}{i:012x}", None, "w", i, {"payload": "x" * size})


def whose(rec: SpanStarted) -> tuple[int, int]:
    return int(rec.span_id[:4], 16), int(rec.span_id[4:], 16)


def write_records(path: str, writer: int, n: int, reopen_every: int) -> None:
    """One writer: its own EventLog on the shared path, closed and opened again every
    ``reopen_every`` records (0: never), so logs are opened while the others are mid-run."""
    log = EventLog(path)
    try:
        for i in range(n):
            if reopen_every and i and i % reopen_every == 0:
                log.close()
                log = EventLog(path)
            assert log.append(record(writer, i))
    finally:
        log.close()


def test_many_writers_in_threads_and_processes_lose_nothing(tmp_path):
    path = tmp_path / "shared.jsonl"  # created by the writers themselves, all at once
    n = 300
    threads = 8
    # (writer, reopen_every): half of them keep opening the log again while the others write
    procs_spec = [(8, 0), (9, 7)]
    go = threading.Barrier(threads + 1)
    errors: list[Exception] = []

    def in_thread(writer: int, reopen_every: int) -> None:
        try:
            go.wait()
            write_records(str(path), writer, n, reopen_every)
        except Exception as e:  # noqa: BLE001 - asserted on below, in the test's thread
            errors.append(e)

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from test_log_shared import write_records; "
        "assert sys.stdin.readline() == 'go\\n'; "
        "write_records(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(HERE), str(path), str(w), str(n), str(every)],
            stdin=subprocess.PIPE,
            text=True,
        )
        for w, every in procs_spec
    ]
    workers = [threading.Thread(target=in_thread, args=(w, [0, 5, 0, 11][w % 4])) for w in range(threads)]
    try:
        for t in workers:
            t.start()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        go.wait()
    finally:
        for p in procs:
            p.stdin.close()
        codes = [p.wait(timeout=300) for p in procs]
        for t in workers:
            t.join()
    assert not errors, errors
    assert codes == [0, 0]

    damage: list = []
    records = list(read_log(path, strict=True, damage=damage))
    assert damage == []
    assert sum(type(r) is LogHeader for r in records) == 1  # extra headers of racing creators skipped
    assert isinstance(records[0], LogHeader)
    spans = [r for r in records if type(r) is SpanStarted]
    seen = Counter(whose(r) for r in spans)
    expected = {(w, i) for w in range(threads + len(procs_spec)) for i in range(n)}
    lost = expected - seen.keys()
    assert not lost, f"{len(lost)} records lost"
    assert max(seen.values()) == 1  # each exactly once
    assert seen.keys() == expected
    for r in spans:  # every record whole
        w, i = whose(r)
        assert len(r.attributes["payload"]) == len(record(w, i).attributes["payload"])
    for w in range(threads + len(procs_spec)):  # each writer's records in its order
        order = [whose(r)[1] for r in spans if whose(r)[0] == w]
        assert order == sorted(order)


def test_a_torn_tail_left_by_a_killed_writer_costs_only_the_fragment(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:
        for i in range(3):
            log.append(record(0, i, 100))
    killed = encode(record(1, 0, 5000))
    with open(path, "ab") as f:  # a writer killed in the middle of its record
        f.write(killed[: len(killed) // 2])
    with EventLog(path) as log:
        for i in range(3):
            assert log.append(record(2, i, 100))
    damage: list = []
    with caplog.at_level(logging.WARNING):
        records = list(read_log(path, strict=True, damage=damage))
    assert [whose(r) for r in records[1:]] == [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (2, 2)]
    assert len(damage) == 1 and damage[0].torn and damage[0].line == 5
    assert "torn record" in caplog.text


def test_a_record_glued_to_another_writers_fragment_is_still_read(tmp_path):
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:  # open before the other writer tears its record: it cannot know
        log.append(record(0, 0, 100))
        killed = encode(record(1, 0, 5000))
        with open(path, "ab") as f:
            f.write(killed[:777])
        log.append(record(0, 1, 100))  # lands right after the fragment, on its line
        log.append(record(0, 2, 100))
    damage: list = []
    records = list(read_log(path, strict=True, damage=damage))
    assert [whose(r) for r in records[1:]] == [(0, 0), (0, 1), (0, 2)]
    assert len(damage) == 1 and damage[0].torn


def test_extra_headers_are_skipped(tmp_path):
    path = tmp_path / "log.jsonl"
    header = encode(LogHeader(created_ns=1))
    path.write_bytes(header + encode(record(0, 0, 10)) + encode(LogHeader(created_ns=2)) + encode(record(0, 1, 10)))
    records = list(read_log(path, strict=True))
    assert records == [LogHeader(created_ns=1), record(0, 0, 10), record(0, 1, 10)]


class FullDisk:
    """``os.write`` on one descriptor as a filling disk does it: the first failing write gets
    ``partial`` bytes through, the next ones raise ENOSPC; every other descriptor works."""

    def __init__(self, monkeypatch, fd: int, partial: int) -> None:
        self.fd = fd
        self.partial = partial
        self.full = False
        self.cut = False
        real = os.write

        def write(fd, data):
            if fd != self.fd or not self.full:
                return real(fd, data)
            if not self.cut and self.partial:
                self.cut = True
                return real(fd, bytes(data[: self.partial]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "write", write)


def _log_lines(caplog, level):
    return [r.getMessage() for r in caplog.records if r.name == "callctx.projection.log" and r.levelno == level]


@pytest.mark.parametrize("blank", [True, False])
def test_a_full_disk_keeps_records_and_writes_them_when_space_returns(tmp_path, monkeypatch, caplog, blank):
    path = tmp_path / "log.jsonl"
    log = EventLog(path)
    disk = FullDisk(monkeypatch, log._fd, partial=57)
    if not blank:  # the fragment cannot be blanked (a copy-on-write filesystem that is full)
        monkeypatch.setattr(os, "pwrite", lambda *a: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    with caplog.at_level(logging.INFO, logger="callctx.projection.log"):
        assert all(log.append(record(0, i, 200)) for i in range(5))
        disk.full = True
        assert not any(log.append(record(0, i, 200)) for i in range(5, 12))  # kept, nothing raised
        disk.full = False
        assert all(log.append(record(0, i, 200)) for i in range(12, 15))
        log.close()
    assert disk.cut
    assert len(_log_lines(caplog, logging.WARNING)) == 1  # one for the whole failing period
    assert len(_log_lines(caplog, logging.INFO)) == 1  # and one when it is over
    assert _log_lines(caplog, logging.ERROR) == []  # nothing lost
    damage: list = []
    records = list(read_log(path, strict=True, damage=damage))
    assert [whose(r)[1] for r in records[1:]] == list(range(15))
    assert len(damage) == (0 if blank else 1) and all(d.torn for d in damage)


def test_the_backlog_is_bounded_and_losses_are_told_once_at_close(tmp_path, monkeypatch, caplog):
    path = tmp_path / "log.jsonl"
    log = EventLog(path, backlog_records=3)
    disk = FullDisk(monkeypatch, log._fd, partial=0)
    disk.full = True
    with caplog.at_level(logging.INFO, logger="callctx.projection.log"):
        assert not any(log.append(record(0, i, 50)) for i in range(10))
        disk.full = False
        assert log.append(record(0, 10, 50))
        log.close()
        log.close()  # idempotent
    records = list(read_log(path, strict=True))
    assert [whose(r)[1] for r in records[1:]] == [0, 1, 2, 10]
    assert len(_log_lines(caplog, logging.WARNING)) == 1
    assert _log_lines(caplog, logging.ERROR) == [f"event log {path}: 7 records could not be written to {path}"]
    with pytest.raises(ValueError, match="closed"):
        log.append(record(0, 11, 50))


def test_a_disk_still_full_at_close_reports_the_backlog(tmp_path, monkeypatch, caplog):
    path = tmp_path / "log.jsonl"
    log = EventLog(path)
    disk = FullDisk(monkeypatch, log._fd, partial=0)
    disk.full = True
    with caplog.at_level(logging.INFO, logger="callctx.projection.log"):
        for i in range(4):
            assert log.append(record(0, i, 50)) is False
        log.close()
    assert log.closed
    assert _log_lines(caplog, logging.ERROR) == [f"event log {path}: 4 records could not be written to {path}"]
    assert _log_lines(caplog, logging.INFO) == []


def test_a_full_tmpfs(tmp_path, caplog):
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    try:
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True
        )
    except OSError as e:
        pytest.skip(f"cannot run mount: {e}")
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip() or r.returncode}")
    try:
        filler = mnt / "filler"
        filler.write_bytes(b"\0" * (96 << 10))
        path = mnt / "log.jsonl"
        log = EventLog(path)
        written, kept, after = [], [], []
        try:
            with caplog.at_level(logging.INFO, logger="callctx.projection.log"):
                n = 0
                while not kept:  # until the disk is full
                    (written if log.append(record(0, n, 100 + n * 37 % 900)) else kept).append(n)
                    n += 1
                    assert n < 5000, "the tmpfs never filled up"
                for i in range(n, n + 20):  # still full: kept, nothing raised
                    assert log.append(record(0, i, 300)) is False
                    kept.append(i)
                filler.unlink()  # space is back
                for i in range(n + 20, n + 70):
                    assert log.append(record(0, i, 300)) is True
                    after.append(i)
                log.close()
        finally:
            log.close()
        assert len(_log_lines(caplog, logging.WARNING)) == 1  # one for the whole failing period
        assert len(_log_lines(caplog, logging.INFO)) == 1
        assert _log_lines(caplog, logging.ERROR) == []
        damage: list = []
        records = list(read_log(path, strict=True, damage=damage))
        assert damage == []
        assert [whose(r)[1] for r in records[1:]] == written + kept + after
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_buffered_log_keeps_values_and_bytes_in_order_and_retries_each_record(tmp_path, monkeypatch, caplog):
    """Records appended as values wait as values and are encoded with their batch; encoded
    records written beside them keep their place; a batch the disk refuses is kept record by
    record and written, in order, when space returns."""
    path = tmp_path / "log.jsonl"
    log = EventLog(path, buffer_bytes=1 << 20, buffer_seconds=3600)
    disk = FullDisk(monkeypatch, log._fd, partial=100)
    with caplog.at_level(logging.INFO, logger="callctx.projection.log"):
        for i in range(6):
            if i % 3 == 2:
                assert log.write(encode(record(0, i, 300)))  # already encoded
            else:
                assert log.append(record(0, i, 300))  # a value, encoded at the flush
        assert path.stat().st_size == 0  # the batch (the header first) waits
        disk.full = True
        assert log.flush() is False  # cut short, then refused: every record kept
        disk.full = False
        assert log.append(record(0, 6, 300))
        assert log.flush()
        log.close()
    assert disk.cut
    damage: list = []
    records = list(read_log(path, strict=True, damage=damage))
    assert [whose(r)[1] for r in records[1:]] == list(range(7))
    assert records[1:] == [record(0, i, 300) for i in range(7)]
    assert _log_lines(caplog, logging.ERROR) == []


def test_a_value_that_cannot_be_encoded_is_left_out_and_its_batch_is_written(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    log = EventLog(path, buffer_bytes=1 << 20, buffer_seconds=3600)
    bad = SpanStarted("ab" * 16, "f" * 16, None, "w", 1, {"payload": object()})  # JSON has no form for it
    with caplog.at_level(logging.INFO, logger="callctx.projection.log"):
        assert log.append(record(0, 0, 10)) and log.append(bad) and log.append(record(0, 2, 10))
        assert log.flush()
        log.close()
    assert [whose(r)[1] for r in list(read_log(path, strict=True))[1:]] == [0, 2]
    errors = _log_lines(caplog, logging.ERROR)
    assert len(errors) == 2 and "a SpanStarted record could not be encoded" in errors[0]
    assert errors[1] == f"event log {path}: 1 records could not be written to {path}"

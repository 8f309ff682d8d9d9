"""The event log: mode 0600, one record per line, torn and damaged records, fsync policies."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from callctx.projection import EventLog, LogError, Projection, read_log
from callctx.projection.events import LogHeader, SpanEnded, SpanStarted, encode


def _events(n=3):
    out = []
    for i in range(n):
        sid = format(i + 1, "016x")
        out.append(SpanStarted("ab" * 16, sid, None, f"f{i}", i * 10, {"gen_ai.operation.name": "invoke_agent"}))
        out.append(SpanEnded("ab" * 16, sid, i * 10 + 5, "ok"))
    return out


def test_created_with_mode_0600_and_a_header(tmp_path):
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:
        for e in _events():
            log.append(e)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    records = list(read_log(path))
    assert isinstance(records[0], LogHeader)
    assert records[1:] == _events()
    assert path.read_bytes().count(b"\n") == 7  # one line per record


def test_torn_last_record_is_dropped_with_a_warning(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:
        for e in _events():
            log.append(e)
    whole = path.read_bytes()
    path.write_bytes(whole + encode(_events(4)[-1])[:-9])  # crash mid-write
    with caplog.at_level(logging.WARNING):
        p = Projection.from_log(path)
    assert "torn last record" in caplog.text
    assert p.events == 6
    assert len(p.damage) == 1 and p.damage[0].torn


def test_reopening_keeps_a_torn_tail_and_starts_on_a_fresh_line(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:
        log.append(_events()[0])
    before = path.read_bytes() + b'{"e":"start","trace_id":"ab'
    path.write_bytes(before)
    with EventLog(path) as log:
        assert path.read_bytes() == before  # opening never cuts: other writers may be appending
        log.append(_events()[1])
    assert path.read_bytes().startswith(before + b"\n")
    damage = []
    with caplog.at_level(logging.WARNING):
        records = list(read_log(path, strict=True, damage=damage))
    assert records[1:] == _events()[:2]
    assert "torn record" in caplog.text
    assert len(damage) == 1 and damage[0].torn and damage[0].line == 3


def test_damaged_record_in_the_middle_is_skipped_or_strict(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    lines = [encode(e) for e in _events()]
    lines.insert(2, b'{"e":"start","span_id": 12}\n')  # wrong type
    lines.insert(4, b"\xff\xfe garbage\n")
    path.write_bytes(b"".join(lines))
    with caplog.at_level(logging.WARNING):
        records = list(read_log(path))
    assert records == _events()
    assert "line 3" in caplog.text and "line 5" in caplog.text
    with pytest.raises(LogError, match="line 3"):
        list(read_log(path, strict=True))


def test_missing_log_is_a_clear_error(tmp_path):
    with pytest.raises(LogError, match="no event log"):
        Projection.from_log(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("policy", ["always", "never", 0.0, 5])
def test_fsync_policies(tmp_path, policy, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    path = tmp_path / "log.jsonl"
    log = EventLog(path, fsync=policy)
    for e in _events():
        log.append(e)
    during = len(calls)
    log.close()
    if policy == "always":
        assert during == 7
    elif policy == "never":
        assert during == 0
    elif policy == 0.0:
        assert during == 7
    else:
        assert during == 0  # interval not reached yet
    assert len(calls) == during + 1  # close syncs once
    assert len(list(read_log(path))) == 7


def test_bad_fsync_policy():
    with pytest.raises(ValueError, match="fsync"):
        EventLog("/tmp/never-created.jsonl", fsync="sometimes")


def test_large_log_in_several_chunks(tmp_path):
    path = tmp_path / "log.jsonl"
    big = "x" * 100_000
    with EventLog(path) as log:
        for i in range(60):  # ~6 MB, more than one read chunk
            log.append(SpanStarted("ab" * 16, format(i + 1, "016x"), None, "f", i, {"input.value": big}))
    records = list(read_log(path))
    assert len(records) == 61 and records[-1].span_id == format(60, "016x")

"""Live state equals replayed state; a killed process leaves a log that replays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.stores import rebuilt_calls
from helpers.trees import parse

from callctx import agentic, setup
from callctx.cli.research_agent import run
from callctx.projection import Projection
from callctx.projection.events import LogHeader, SpanEnded, SpanStarted, decode, encode

ROOT = Path(__file__).resolve().parents[2]


def test_every_live_render_equals_the_replayed_one(runtime, tmp_path):
    moments = []
    log_path = runtime.log_path

    def record(m):
        moments.append((m, log_path.stat().st_size))

    run(runtime, on_call=record)
    data = log_path.read_bytes()
    assert len(moments) >= 10
    for i, (m, size) in enumerate(moments):
        prefix = tmp_path / f"prefix-{i}.jsonl"
        prefix.write_bytes(data[:size])
        replayed = Projection.from_log(prefix, recover=False)
        assert replayed.view(m.span_id).text == m.tree, m.function

    # the whole run: every view of the finished run is identical
    runtime.flush()  # the records since the last model call wait in memory until now
    full = Projection.from_log(log_path)
    live = runtime.projection
    assert full.sessions() == live.sessions()
    for key in live.sessions():
        assert full.session_tree(key) == live.session_tree(key)
    for span_id, n in live.nodes.items():
        if n.holds:
            assert full.view(span_id).text == live.view(span_id).text


@pytest.mark.parametrize("log_buffer", [0, 64 * 1024])
def test_log_write_failures_are_kept_and_retried_in_order(tmp_path, monkeypatch, log_buffer):
    runtime = setup(tmp_path / "events.jsonl", log_buffer=log_buffer)
    fd = runtime.processor.log._fd
    real = os.write
    fail = {"left": 3}

    def flaky(target, data):
        if target == fd and fail["left"]:
            fail["left"] -= 1
            raise OSError(28, "No space left on device")
        return real(target, data)

    monkeypatch.setattr(os, "write", flaky)

    @agentic
    def leaf(i):
        runtime.flush()  # a batched log writes at each model call: here, at each leaf
        return i

    @agentic
    def parent():
        for i in range(5):
            leaf(i)

    parent()
    runtime.close()
    replayed = Projection.from_log(runtime.log_path)
    live = runtime.projection
    key = live.sessions()[0]
    assert replayed.session_tree(key) == live.session_tree(key)
    assert replayed.events == live.events == 12


KILLED = textwrap.dedent(
    """
    import sys
    from callctx import agentic, setup

    rt = setup(sys.argv[1], log_buffer=0)  # each record written as it happens

    @agentic
    def step(i, payload):
        return payload[::-1]

    @agentic
    def stage(n):
        for i in range(50):
            step(i, "x" * (i * 37 % 400))
        return n

    @agentic
    def forever():
        n = 0
        while True:
            stage(n)
            n += 1
            if n == 3:
                print("ready", flush=True)

    forever()
    """
)


def test_sigkill_mid_run_leaves_a_replayable_log(tmp_path):
    log_path = tmp_path / "events.jsonl"
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, str(script), str(log_path)], stdout=subprocess.PIPE, env=env)
    assert proc.stdout.readline().strip() == b"ready"
    proc.send_signal(signal.SIGKILL)  # wherever it lands: mid-record, mid-stage or between stages
    proc.wait(timeout=10)

    data = log_path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    expected = [decode(line) for line in complete.splitlines()]  # every fully written record decodes
    assert isinstance(expected[0], LogHeader)
    p = Projection.from_log(log_path)
    assert p.events == len(expected) - 1
    assert all(d.torn for d in p.damage) and len(p.damage) <= 1
    key = p.sessions()[0]
    tree = parse(p.session_tree(key))
    assert tree[0]["function"] == "forever" and tree[0]["status"] == "interrupted"
    children = tree[0]["children"]
    assert len(children) >= 3
    # A stage the log saw start but not end reads as interrupted; one it saw end, as finished.
    started = {r.span_id for r in expected if isinstance(r, SpanStarted) and r.name == "invoke_agent stage"}
    ended = {r.span_id for r in expected if isinstance(r, SpanEnded)}
    running = started - ended
    assert len(running) <= 1
    assert all("output" in c for c in children[:-1])  # every earlier stage finished, with its output
    if running:
        assert children[-1]["status"] == "interrupted"
    else:
        assert "output" in children[-1]


def test_the_tree_as_each_call_saw_it_when_it_started(runtime, tmp_path, capsys):
    """Projection.tree(span) (and `callctx tree --span`) fold the log up to the span's start:
    equal to what the live projection rendered at that moment, for every call, and the same
    from a log of spans received whole and out of order."""
    from callctx.cli.main import main
    from callctx.projection.spans import from_log, records

    seen = {}

    @agentic
    def leaf(i):
        sid = runtime.current_span_id()
        seen[sid] = runtime.projection.view(sid).text
        return i

    @agentic
    def mid(n):
        sid = runtime.current_span_id()
        seen[sid] = runtime.projection.view(sid).text
        return [leaf(i) for i in range(n)]

    @agentic
    def root():
        sid = runtime.current_span_id()
        seen[sid] = runtime.projection.view(sid).text
        mid(2)
        mid(3)
        return "ok"

    root()
    runtime.close()
    replayed = Projection.from_log(runtime.log_path)
    received = tmp_path / "received.jsonl"
    spans = sorted(from_log(runtime.log_path), key=lambda s: s.span_id)  # arrival order is not time order
    received.write_bytes(b"".join(encode(r) for r in records(spans)))
    shuffled = Projection.from_log(received)
    for sid, text in seen.items():
        assert runtime.projection.tree(sid) == text
        assert replayed.tree(sid) == text
        assert shuffled.tree(sid) == text
        assert main(["tree", str(received), "--span", sid]) == 0
        assert capsys.readouterr().out == text
    last = list(seen)[-1]
    assert replayed.tree(last, final=True) != seen[last]  # the final tree: everything has ended since
    import pytest

    with pytest.raises(LookupError, match="final=True"):
        Projection().tree(last)


BATCHED = textwrap.dedent(
    """
    import sys
    from callctx import agentic, setup
    from callctx.models import ScriptedModel

    rt = setup(sys.argv[1], model=ScriptedModel({"*": ["fine"]}))  # the default: records batched

    @agentic
    def step(i, payload):
        return payload[::-1]

    @agentic
    def ask(n):
        for i in range(20):
            step(i, "y" * (i * 53 % 300))
        answer = rt.exec(f"round {n}")  # the log is written before the request goes out
        print(f"sent {n}", flush=True)
        return answer

    @agentic
    def forever():
        n = 0
        while True:
            ask(n)
            n += 1

    forever()
    """
)


def test_sigkill_with_a_batched_log_keeps_every_sent_request(tmp_path):
    """The default log batches records; what a kill may lose is only what was not yet written
    when it landed: never a model call whose request was sent, nor anything before it."""
    log_path = tmp_path / "events.jsonl"
    script = tmp_path / "batched.py"
    script.write_text(BATCHED)
    proc = subprocess.Popen([sys.executable, str(script), str(log_path)], stdout=subprocess.PIPE)
    for n in range(4):
        assert proc.stdout.readline().strip() == f"sent {n}".encode()
    proc.send_signal(signal.SIGKILL)  # anywhere after the fourth request went out
    proc.wait(timeout=10)

    rebuilt = rebuilt_calls(log_path)
    assert len(rebuilt) >= 4  # every request that was sent is in the log
    for done in rebuilt[:4]:  # with every text it was built from, written before it
        assert done.verified
    p = Projection.from_log(log_path)
    assert all(d.torn for d in p.damage) and len(p.damage) <= 1
    asks = [c for c in parse(p.session_tree(p.sessions()[0]))[0]["children"] if c["function"] == "ask"]
    assert len(asks) >= 4 and all("output" in a for a in asks[:3])  # the first three asks ended before the fourth sent

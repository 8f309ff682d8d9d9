"""The debugger page's server side: what its API says of a log agrees with the command line
(`callctx context`, `callctx cache`), follows a log as it grows, names what changed between
calls, and is served by `callctx ui` and behind `callctx serve`'s token, shaped."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import cli

from callctx import setup
from callctx.cli.research_agent import run
from callctx.components.context import Context, Segment
from callctx.export.shaping import Shaper
from callctx.models import ScriptedModel
from callctx.projection.errors import NotFound
from callctx.projection.events import encode
from callctx.projection.spans import SpanData, records
from callctx.serve import Receiver, serve_http
from callctx.store.local import LocalStore
from callctx.ui import Views
from callctx.ui.server import serve_page
from callctx.ui.views import first_difference


def get(port, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), body


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    rt = setup(folder / "events.jsonl")
    run(rt)
    rt.close()
    return folder / "events.jsonl"


@pytest.fixture
def page(demo_log):
    views = Views(LocalStore(demo_log))
    server = serve_page(views, "127.0.0.1", 0, shape=Shaper().redact)
    yield views, server.server_port
    server.shutdown()


_SEGMENT = re.compile(r"^── (\S+) · (L\d) · (\d+) tokens", re.M)


def test_every_call_shows_the_segments_and_tokens_of_callctx_context(page, demo_log):
    _, port = page
    status, _, body = get(port, "/ui/api/calls")
    calls = json.loads(body)["calls"]
    assert status == 200 and len(calls) == 11
    for row in calls:
        code, out, err = cli("context", demo_log, "--at", row["index"])
        assert code == 0, err
        expected = [(c, layer, int(t)) for c, layer, t in _SEGMENT.findall(out)]
        total = int(re.search(r"^([\d,]+) tokens, ", out, re.M).group(1).replace(",", ""))
        status, _, body = get(port, f"/ui/api/calls/{row['index']}")
        detail = json.loads(body)
        assert status == 200 and detail["verified"] is True
        shown = [(s["component"], s["layer"], s["tokens"]) for s in detail["segments"] if s["section"] != "tools"]
        assert shown == expected
        assert detail["tokens"] == total
        assert detail["function"] == row["function"] and detail["path"][-1] == row["span_id"]


def test_the_simulated_cache_agrees_with_callctx_cache(tmp_path):
    log = tmp_path / "events.jsonl"
    rt = setup(log)
    run(rt, scale=8)
    rt.close()
    code, out, err = cli("cache", log, "--provider", "anthropic")
    assert code == 0, err
    rows = [r.split() for r in out.splitlines() if re.match(r"^\s+\d+\s", r)]
    views = Views(LocalStore(log))
    hits = 0
    for row in rows:
        n = int(row[0])
        read, written, uncached = (int(x.replace(",", "")) for x in row[3:6])
        d = views.call(n, "anthropic")
        sim = d["simulation"]
        assert (sim["read"], sim["write"], sim["uncached"]) == (read, written, uncached)
        parts = [s["cache"] for s in d["segments"]] + [e["cache"] for e in d["exchanges"]]
        # a cache reads a prefix, writes what follows, and the rest is uncached: in that order
        order = [0 if p["read"] else 1 if p["write"] else 2 for p in parts if p["read"] + p["write"] + p["uncached"]]
        assert order == sorted(order)
        assert abs(sum(p["read"] for p in parts) - read) <= max(3, read // 50)
        hits += read > 0
    assert hits >= 10  # the scaled demo hits: the comparison above covered real reads


def test_the_diff_names_the_first_segment_and_byte_that_changed(page):
    views, _ = page
    d = views.call(3)
    diff = d["diff"]
    before = views.call(diff["previous"])
    i, byte = diff["segment"], diff["byte"]
    old, new = before["segments"][i]["text"].encode(), d["segments"][i]["text"].encode()
    assert old[:byte] == new[:byte] and old[byte : byte + 1] != new[byte : byte + 1]
    assert all(a["text"] == b["text"] for a, b in zip(before["segments"][:i], d["segments"][:i], strict=True))
    assert diff["component"] == d["segments"][i]["component"] and diff["component"] in diff["reason"]
    assert views.call(1)["diff"] is None  # the first call of its session has nothing before it


def test_first_difference_of_added_removed_and_same_segments():
    def ctx(*parts):
        return Context([], [Segment(c, "L1", "system", t, len(t)) for c, t in parts], [], "o200k_base")

    a = ctx(("one", "alpha"), ("two", "beta"))
    assert first_difference(a, a, 1)["same"] is True
    d = first_difference(a, ctx(("one", "alpha"), ("two", "betA")), 1)
    assert (d["segment"], d["component"], d["byte"], d["offset"]) == (1, "two", 3, 8)
    d = first_difference(a, ctx(("one", "alpha"), ("two", "beta"), ("three", "x")), 4)
    assert (d["segment"], d["component"], d["byte"]) == (2, "three", 0) and "new since call 4" in d["reason"]
    d = first_difference(a, ctx(("one", "alpha")), 4)
    assert (d["segment"], d["component"]) == (1, "two") and "is gone" in d["reason"]
    d = first_difference(a, ctx(("uno", "alpha"), ("two", "beta")), 2)
    assert (d["segment"], d["byte"]) == (0, 0)


def test_the_tree_loads_level_by_level_with_totals(page):
    views, port = page
    tree = json.loads(get(port, "/ui/api/trees")[2])["trees"][0]
    top = json.loads(get(port, f"/ui/api/trees/{tree['id']}/nodes")[2])
    assert [n["function"] for n in top["nodes"]] == ["research_agent"]
    root = top["nodes"][0]
    assert root["usage"] == tree["usage"] and root["usage"]["input"] > 0
    kids = json.loads(get(port, f"/ui/api/trees/{tree['id']}/nodes?parent={root['span_id']}&limit=2")[2])
    assert kids["total"] == root["children"] and len(kids["nodes"]) == 2 and kids["next_offset"] == 2
    # each call's path runs from the tree's top to the call
    detail = views.call(5)
    assert detail["path"][0] == root["span_id"]
    assert get(port, f"/ui/api/trees/{tree['id']}/nodes?parent=nope")[0] == 404
    assert get(port, "/ui/api/trees/nope/nodes")[0] == 404
    assert get(port, "/ui/api/calls/999")[0] == 404
    assert get(port, "/ui/api/calls/x")[0] == 400
    assert get(port, "/ui/api/trees?status=bogus")[0] == 400


def test_request_as_sent_and_in_every_wire(page, demo_log):
    _, port = page
    sent = json.loads(get(port, "/ui/api/calls/2/request")[2])
    code, out, _ = cli("context", demo_log, "--at", 2, "--json")
    assert code == 0
    assert sent["as_sent"] is True and sent["body"] == json.loads(out)
    other = json.loads(get(port, "/ui/api/calls/2/request?wire=gemini")[2])
    assert other["as_sent"] is False and "contents" in other["body"]


def test_chart_has_every_call_of_the_session(page):
    _, port = page
    key = json.loads(get(port, "/ui/api/trees")[2])["trees"][0]["id"]
    chart = json.loads(get(port, f"/ui/api/trees/{key}/chart?provider=openai")[2])
    assert [c["index"] for c in chart["calls"]] == list(range(1, 12))
    assert chart["totals"]["total"] == sum(c["read"] + c["write"] + c["uncached"] for c in chart["calls"])


def test_page_routes_static_files_and_headers(page):
    _, port = page
    for path in ("/ui/", "/ui/traces/any", "/ui/calls/3"):
        status, headers, body = get(port, path)
        assert status == 200 and b"<html" in body.lower()
        assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert get(port, "/")[0] == 303
    status, headers, _ = get(port, "/ui/static/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    for bad in ("/ui/static/..%2f..%2fcli.py", "/ui/static/.hidden", "/ui/static/nope.js", "/ui/nope/1/2"):
        assert get(port, bad)[0] == 404


def test_head_answers_what_get_would_without_the_body(page, demo_log, tmp_path):
    _, port = page
    rx = Receiver(tmp_path / "serve.jsonl")
    server = serve_http(rx, "127.0.0.1", 0)
    try:
        for p, path in ((port, "/ui/"), (port, "/ui/static/app.js"), (server.server_port, "/ui/"),
                        (server.server_port, "/health")):  # fmt: skip
            got, got_headers, got_body = get(p, path)
            status, headers, body = get(p, path, method="HEAD")
            assert status == got == 200 and body == b"" and got_body
            assert headers["Content-Length"] == str(len(got_body))
            assert headers["Content-Type"] == got_headers["Content-Type"]
        assert get(port, "/ui/nope/1/2", method="HEAD")[:3:2] == (404, b"")
    finally:
        server.shutdown()
        rx.close()


def test_the_store_follows_a_growing_log(demo_log, tmp_path):
    lines = demo_log.read_bytes().splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    store = LocalStore(live, finished=False)  # written here without a writer's lock: read as live
    views = Views(store)
    assert store.refresh() == 0 and views.state()["calls"] == 0  # no log yet: empty, not an error
    assert not views.state()["exists"]
    half = len(lines) // 2
    live.write_bytes(b"".join(lines[:half]) + lines[half][:10])  # the last record still being written
    g1 = store.refresh()
    n1 = store.calls().total
    assert g1 == len(b"".join(lines[:half])) and 0 < n1 < 11  # the cursor: whole records read
    assert store.refresh() == g1  # nothing new
    with open(live, "ab") as f:
        f.write(lines[half][10:] + b"".join(lines[half + 1 :]))
    assert store.refresh() > g1
    assert [c.index for c in store.calls().items] == list(range(1, 12))
    fresh = Views(LocalStore(demo_log))
    assert views.call(7)["segments"] == fresh.call(7)["segments"]
    live.write_bytes(b"".join(lines[:half]))  # replaced by a shorter log: read again from its start
    store.refresh()
    assert store.calls().total == n1


def test_damaged_lines_are_skipped_and_counted(demo_log, tmp_path):
    lines = demo_log.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines[:5]) + b'{"e":"start","nonsense\n' + b"".join(lines[5:]))
    views = Views(LocalStore(bad))
    assert views.state()["damaged"] == 1 and views.state()["calls"] == 11


def _secret_log(path: Path) -> str:
    secret = "sk-ant-api03-" + "Q" * 93 + "AA"
    rt = setup(path, session_id="s1", model=ScriptedModel({"*": ["done"]}))
    from callctx import agentic

    @agentic
    def helper(note: str) -> str:
        return rt.exec(f"Use the key {secret} to check {note}")

    helper("the build")
    rt.close()
    return secret


def test_serve_page_is_behind_the_token_and_shaped(tmp_path):
    log = tmp_path / "received.jsonl"
    rx = Receiver(log, token="t0ken")
    server = serve_http(rx, "127.0.0.1", 0)
    port = server.server_port
    try:
        secret = _secret_log(tmp_path / "agent.jsonl")
        # what the receiver logged is what the page reads: append the agent's records to it
        with open(log, "ab") as f:
            f.write((tmp_path / "agent.jsonl").read_bytes())
        assert get(port, "/ui/")[0] == 401
        assert get(port, "/ui/api/calls")[0] == 401
        assert get(port, "/ui/?token=wrong")[0] == 401
        status, headers, _ = get(port, "/ui/calls/1?token=t0ken")
        assert status == 303 and headers["Location"] == "/ui/calls/1"
        cookie = headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        jar = {"Cookie": cookie.split(";")[0]}
        assert get(port, "/ui/calls/1", jar)[0] == 200
        status, _, body = get(port, "/ui/api/calls/1", jar)
        assert status == 200 and json.loads(body)["index"] == 1
        assert secret.encode() not in body and b"[REDACTED]" in body
        status, _, body = get(port, "/ui/api/calls/1/request", {"Authorization": "Bearer t0ken"})
        assert status == 200 and secret.encode() not in body
        assert secret in log.read_text()  # the local log keeps full data
    finally:
        server.shutdown()
        rx.close()


def test_foreign_calls_are_reconstructed(tmp_path):
    trace = "ab" * 16
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "llm.provider": "openai",
             "llm.token_count.prompt": 120, "llm.token_count.completion": 30,
             "llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "What is the capital of France?",
             "llm.output_messages.0.message.role": "assistant",
             "llm.output_messages.0.message.content": "Paris"}  # fmt: skip
    agent = SpanData(trace, "1" * 16, None, "Shopper", 1_000, 9_000, {"openinference.span.kind": "AGENT"})
    llm = SpanData(trace, "2" * 16, "1" * 16, "ChatOpenAI", 2_000, 3_000, attrs)
    log = tmp_path / "foreign.jsonl"
    log.write_bytes(b"".join(encode(r) for r in records([agent, llm])))
    views = Views(LocalStore(log))
    d = views.call(1)
    assert d["reconstructed"] is True and d["verified"] is False and d["path"] == ["1" * 16, "2" * 16]
    assert [m["content"] for m in d["messages"]] == ["What is the capital of France?"]
    assert d["usage"]["input"] == 120 and d["cost"] is not None and d["cost"] > 0
    node = views.nodes(views.trees()["trees"][0]["id"])["nodes"][0]
    assert node["usage"]["input"] == 120 and node["children"] == 1
    with pytest.raises(NotFound):
        views.request(1)


def test_callctx_ui_serves_and_stops(demo_log, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "callctx.cli", "ui", str(demo_log), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/ui/", line)
        assert m, line
        status, _, body = get(int(m.group(1)), "/ui/api/state")
        assert status == 200 and json.loads(body)["calls"] == 11
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    not_a_log = tmp_path / "notes.txt"
    not_a_log.write_text("hello\n")
    code, _, err = cli("ui", not_a_log, "--port", 0)
    assert code == 2 and "not a callctx event log" in err

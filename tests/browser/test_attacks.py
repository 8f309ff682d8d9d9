"""The page and serve in a real browser, under attack: a name rebound to 127.0.0.1 (DNS
rebinding) reads and posts nothing; a session id that needs escaping opens."""

from __future__ import annotations

import json

from helpers.otlp_requests import build, span

from callctx.serve import Receiver, serve_http

from .conftest import REBOUND, wait_for

TRACE = bytes.fromhex("ab" * 16)


def agent(session: str) -> bytes:
    return build([([("service.name", "s")], [("x", [
        span(TRACE, 1, None, "invoke_agent root", 10, 100, [("gen_ai.operation.name", "invoke_agent"),
                                                          ("gen_ai.agent.name", "root"),
                                                          ("gen_ai.conversation.id", session)]),
        span(TRACE, 2, 1, "chat m", 20, 30, [("gen_ai.operation.name", "chat"), ("gen_ai.request.model", "m")]),
    ])])]).SerializeToString()  # fmt: skip


FETCH = """
const [url, method, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
fetch(url, {method, body: method === "POST" ? "{}" : undefined, headers: {"Content-Type": "application/json"}})
  .then(r => r.text().then(t => done({status: r.status, body: t})))
  .catch(e => done({status: -1, body: String(e)}));
"""


def test_a_rebound_name_reads_and_posts_nothing(browser, tmp_path):
    rx = Receiver(tmp_path / "received.jsonl")
    srv = serve_http(rx, "127.0.0.1", 0)
    port = srv.server_port
    try:
        req = __import__("urllib.request", fromlist=["urlopen"])
        r = req.Request(f"http://127.0.0.1:{port}/v1/traces", data=agent("s1"),
                        headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        assert req.urlopen(r, timeout=10).status == 200
        browser.get(f"http://{REBOUND}:{port}/ui/")  # the attacker's page, once its name points here
        body = wait_for(browser, lambda d: d.find_element("tag name", "body").text)
        assert "is not served here" in body and "--allow-host" in body
        for path, method in (("/ui/api/calls/1", "GET"), ("/api/calls", "GET"), ("/v1/traces", "POST")):
            got = browser.execute_async_script(FETCH, f"http://{REBOUND}:{port}{path}", method)
            assert got["status"] == 403, (path, got)
        assert rx.stats.spans == 2  # nothing was posted from the rebound origin
        browser.get(f"http://127.0.0.1:{port}/ui/")  # the same page on this machine's own name works
        got = browser.execute_async_script(FETCH, f"http://127.0.0.1:{port}/ui/api/calls/1", "GET")
        assert got["status"] == 200 and json.loads(got["body"])["index"] == 1
    finally:
        srv.shutdown()
        rx.close()


def test_a_session_id_that_needs_escaping_opens_in_the_page(browser, tmp_path):
    rx = Receiver(tmp_path / "received.jsonl")
    srv = serve_http(rx, "127.0.0.1", 0)
    port = srv.server_port
    session = "user 42: chat/1 #a?b"
    try:
        req = __import__("urllib.request", fromlist=["urlopen"])
        r = req.Request(f"http://127.0.0.1:{port}/v1/traces", data=agent(session),
                        headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
        assert req.urlopen(r, timeout=10).status == 200
        from urllib.parse import quote

        browser.get(f"http://127.0.0.1:{port}/ui/traces/{quote(session, safe='')}")
        row = wait_for(browser, lambda d: d.find_elements("css selector", "[role=treeitem]"), timeout=20)
        assert any("root" in r.text for r in row)
    finally:
        srv.shutdown()
        rx.close()

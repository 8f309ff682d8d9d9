"""The debugger page in a real browser (Debian's headless Chromium through Selenium): what it
shows of a call equals `callctx context`, the diff names the segment that changed, a deep link
opens the same view, it follows a growing log and spans arriving at `callctx serve` without a
reload, and a session of ten thousand calls opens and scrolls."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from helpers.cli import cli_ok
from helpers.foreign_chat import session
from helpers.otel_rows import exported
from helpers.stores import log_of
from helpers.trip import trip_log
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from callctx import agentic, setup
from callctx.cli.research_agent import run
from callctx.export.shaping import Shaper
from callctx.models import ScriptedModel
from callctx.serve import Receiver, serve_http
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.connection import ChdbConnection
from callctx.store.otel_table import OtelTable
from callctx.ui import Views
from callctx.ui.server import serve_page

from .conftest import js_errors, screenshot, wait_for
from .logs import demo_log, many_calls
from .pages import Page, css, open_page

pytest.importorskip("selenium", reason="run `make browser`")
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    log = demo_log(tmp_path_factory.mktemp("demo"))
    page = Page(log)
    yield log, page
    page.server.shutdown()


_SEGMENT = re.compile(r"^── (\S+) · (L\d) · (\d+) tokens", re.M)
_TOOLS = re.compile(r"^── tools \(.*; (\d+) tokens\)", re.M)


def expected_segments(log, n):
    """(component, layer, tokens) of each block `callctx context --at N` prints, and the total."""
    out = cli_ok("context", log, "--at", n)
    rows = [(c, layer, int(t)) for c, layer, t in _SEGMENT.findall(out)]
    tools = _TOOLS.search(out)
    total = int(re.search(r"^([\d,]+) tokens, ", out, re.M).group(1).replace(",", ""))
    return rows, int(tools.group(1)) if tools else None, total


@pytest.mark.parametrize("n", [2, 7, 11])
def test_a_call_shows_the_segments_and_tokens_of_callctx_context(browser, demo, n):
    log, page = demo
    open_page(browser, f"{page.base}/ui/calls/{n}")
    rows, tools_tokens, total = expected_segments(log, n)
    wait_for(browser, lambda d: len(css(d, "[data-testid=segment]")) == len(rows) + (tools_tokens is not None))
    shown = [
        (e.get_attribute("data-component"), e.get_attribute("data-layer"), int(e.get_attribute("data-tokens")))
        for e in css(browser, "[data-testid=segment]")
    ]
    assert [s for s in shown if s[0] != "tools"] == rows
    if tools_tokens is not None:
        assert [s[2] for s in shown if s[0] == "tools"] == [tools_tokens]
    assert int(css(browser, "[data-testid=call-total]")[0].get_attribute("data-tokens")) == total
    # the model call is selected in the tree, and its path marked as the model saw it
    path = page.api(f"/ui/api/calls/{n}")["path"]
    wait_for(browser, lambda d: len(css(d, "[data-testid=node].on-path")) == len(path), message="the path marked")
    marked = [e.get_attribute("data-span") for e in css(browser, "[data-testid=node].on-path")]
    assert marked == path
    selected = css(browser, "[data-testid=node][aria-selected=true]")
    assert [e.get_attribute("data-call") for e in selected] == [str(n)]
    assert "# you are here" in browser.find_element(By.ID, f"seg-{_tree_segment(page, n)}").text
    assert js_errors(browser) == []


def _tree_segment(page, n):
    return next(s["i"] for s in page.api(f"/ui/api/calls/{n}")["segments"] if s["component"] == "call_tree")


def test_the_diff_names_the_segment_that_changed(browser, demo):
    _, page = demo
    for n in (3, 8):
        diff = page.api(f"/ui/api/calls/{n}")["diff"]
        open_page(browser, f"{page.base}/ui/calls/{n}")
        el = wait_for(browser, lambda d: (css(d, "[data-testid=diff][data-component]") or [None])[0])
        assert el.get_attribute("data-component") == diff["component"]
        assert el.get_attribute("data-segment") == str(diff["segment"])
        assert diff["component"] in el.text and f"call {diff['previous']}" in el.text
    assert js_errors(browser) == []


def test_a_deep_link_opens_the_same_view(browser, demo):
    _, page = demo
    seg = _tree_segment(page, 5)
    open_page(browser, f"{page.base}/ui/calls/5#seg-{seg}")
    target = wait_for(browser, lambda d: (css(d, f"#seg-{seg} pre") or [None])[0])
    wait_for(browser, lambda d: target.is_displayed(), message="the linked segment expanded")
    others = [e for e in css(browser, "[data-testid=segment] pre") if e != target]
    assert others and not any(e.is_displayed() for e in others)  # only the linked one is open
    # the call's tree is open too, found from the call
    tree = page.api("/ui/api/calls/5")["tree"]
    wait_for(browser, lambda d: css(d, f"[data-testid=tree-row][data-id='{tree}'][aria-selected=true]"))


def test_request_as_sent_and_in_another_wire(browser, demo):
    log, page = demo
    open_page(browser, f"{page.base}/ui/calls/2")
    wait_for(browser, lambda d: css(d, "[data-testid=request][data-ready]"))
    raw = css(browser, "[data-testid=request-raw]")[0]  # the JSON itself, beside the view that reads it
    assert json.loads(raw.get_attribute("textContent")) == json.loads(cli_ok("context", log, "--at", 2, "--json"))
    Select(css(browser, "[data-testid=wire-select]")[0]).select_by_value("gemini")
    wait_for(browser, lambda d: '"contents"' in css(d, "[data-testid=request-raw]")[0].get_attribute("textContent"))
    assert '"contents"' in css(browser, "[data-testid=request]")[0].text


def test_the_chart_and_the_provider(browser, demo):
    _, page = demo
    open_page(browser, f"{page.base}/ui/traces/demo")
    wait_for(browser, lambda d: css(d, "[data-testid=chart]"))
    open_page(browser, f"{page.base}/ui/calls/4")
    wait_for(browser, lambda d: len(css(d, "[data-testid=seg-cache]")) > 0)
    before = [e.text for e in css(browser, "[data-testid=seg-cache]")]
    Select(css(browser, "[data-testid=provider-select]")[0]).select_by_value("openai")
    want = page.api("/ui/api/calls/4?provider=openai")["segments"]
    wait_for(browser, lambda d: len(css(d, "[data-testid=seg-cache]")) == len(want))
    assert before  # the numbers are shown per segment
    assert js_errors(browser) == []


def test_a_framework_call_shows_its_reason_the_diff_and_both_cache_figures(browser, tmp_path):
    page = Page(log_of(session(), tmp_path))
    try:
        want = page.api("/ui/api/calls/3")
        open_page(browser, f"{page.base}/ui/calls/3")

        def shown(d):  # read in one go: a live refresh may render the pane again
            pane = css(d, "[data-testid=cache]")
            diff = css(d, "[data-testid=diff]")
            if not pane or not diff:
                return None
            return {
                "reason": pane[0].get_attribute("data-reason"), "text": pane[0].text,
                "sentence": css(d, "[data-testid=cache-sentence]")[0].text,
                "simulated": css(d, "[data-testid=cache-simulated]")[0].text,
                "part": diff[0].get_attribute("data-part"), "item": diff[0].get_attribute("data-item"),
                "diff": diff[0].text,
            }  # fmt: skip

        got = wait_for(browser, shown, message="the cache pane and the diff")
        assert got["reason"] == "prefix_changed" == want["cache"]["reason"]
        assert got["sentence"] == want["cache"]["sentence"]
        assert "reported by the provider" in got["text"] and "simulated" in got["text"]
        assert f"{want['cache']['possible']['cache_read']:,}" in got["simulated"]
        assert (got["part"], got["item"]) == ("system", "0")
        assert "call 2" in got["diff"] and "2026-12-02" in got["diff"]
        open_page(browser, f"{page.base}/ui/traces/{want['tree']}")

        def chart(d):
            line = css(d, "[data-testid=chart-reported]")
            readout = css(d, ".readout")
            return line and readout and (len(line[0].get_attribute("points").split()), readout[0].text)

        points, readout = wait_for(browser, chart, message="the chart's reported line")
        assert points == 5  # one point per call: the cache read its provider reported
        assert "reported by the provider" in readout and "simulated" in readout
        assert js_errors(browser) == []
    finally:
        page.server.shutdown()


def test_over_the_collectors_clickhouse_table_a_framework_call_has_its_reason_and_ours_is_verified(
    browser, chdb_folder, tmp_path
):
    """``callctx ui --store chdb:PATH``: the exporter's table holding a framework agent's calls
    and the demo's; side by side in one list, the framework's call shows its cache reason and
    the diff, and one of our calls its request verified against the hash it was sent with."""
    conn = ChdbConnection(chdb_folder)
    table = OtelTable(conn, table="otel_traces_page")
    table.create()
    (tmp_path / "framework").mkdir()
    for log in (log_of(session(), tmp_path / "framework"), demo_log(tmp_path)):
        assert table.write(exported(log).spans) > 0
    store = ClickHouseStore(conn, table=table.table)
    store.follow()  # as `callctx ui --store` does before it serves
    server = serve_page(Views(store, wait_for_cache=True), "127.0.0.1", 0, shape=Shaper().redact)
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        with urllib.request.urlopen(base + "/ui/api/calls?limit=100", timeout=10) as resp:
            listed = json.loads(resp.read())["calls"]
        assert len({c["tree"] for c in listed}) == 2 and len(listed) == 5 + 11
        theirs = [c for c in listed if c["reconstructed"]][2]  # the session's call after the stamp moved
        ours = next(c for c in listed if not c["reconstructed"])
        open_page(browser, f"{base}/ui/")
        trees = wait_for(browser, lambda d: {r.get_attribute("data-id") for r in css(d, "[data-testid=tree-row]")})
        assert trees >= {theirs["tree"], ours["tree"]}

        open_page(browser, f"{base}/ui/calls/{theirs['index']}")
        pane = wait_for(browser, lambda d: [e for e in css(d, "[data-testid=cache]") if e.get_attribute("data-reason")])
        assert pane[0].get_attribute("data-reason") == "prefix_changed"
        diff = wait_for(browser, lambda d: css(d, "[data-testid=diff]"))
        assert (diff[0].get_attribute("data-part"), diff[0].get_attribute("data-item")) == ("system", "0")

        open_page(browser, f"{base}/ui/calls/{ours['index']}")
        wait_for(browser, lambda d: css(d, "[data-testid=segment]"))
        assert "verified ✓" in browser.find_element(By.TAG_NAME, "body").text
        wait_for(browser, lambda d: len(css(d, "[data-testid=call-row]")) == 11, message="the trace's calls")
        screenshot(browser, "clickhouse-store-call")
        assert js_errors(browser) == []
    finally:
        server.shutdown()
        store.close()


def test_a_call_opens_before_the_cache_ledger_reaches_it_and_its_pane_fills_in(browser, tmp_path):
    page = Page(log_of(session(), tmp_path), follows=True)
    try:
        open_page(browser, f"{page.base}/ui/calls/3")
        pending = wait_for(browser, lambda d: [e.text for e in css(d, "[data-testid=cache][aria-busy=true]")])
        assert "0 of 5 calls" in pending[0]
        assert css(browser, "[data-testid=reconstructed]")  # the call itself is shown meanwhile
        page.store.ledger.update()  # what the background thread does
        reason = wait_for(
            browser,
            lambda d: [
                e.get_attribute("data-reason")
                for e in css(d, "[data-testid=cache]")
                if e.get_attribute("aria-busy") is None and e.get_attribute("data-reason")
            ],
        )
        assert reason == ["prefix_changed"]
        assert js_errors(browser) == []
    finally:
        page.server.shutdown()


def test_the_keyboard_opens_a_tree_and_a_call(browser, demo):
    _, page = demo
    open_page(browser, f"{page.base}/ui/")
    row = wait_for(browser, lambda d: (css(d, "[data-testid=tree-row]") or [None])[0])
    row.send_keys(Keys.ENTER)
    wait_for(browser, lambda d: d.current_url.endswith(f"/ui/traces/{row.get_attribute('data-id')}"))
    call_row = wait_for(browser, lambda d: (css(d, "[data-testid=call-row]") or [None])[0])
    n = call_row.get_attribute("data-index")
    call_row.send_keys(Keys.ENTER)
    wait_for(browser, lambda d: d.current_url.endswith(f"/ui/calls/{n}"))
    wait_for(browser, lambda d: css(d, "[data-testid=segment]"))


def test_calls_appended_to_a_live_log_appear_without_a_reload(browser, tmp_path):
    log = tmp_path / "live.jsonl"
    rt = setup(log, session_id="live", model=ScriptedModel({"*": [f"answer {i}" for i in range(10)]}))

    @agentic
    def step(i: int) -> str:
        return rt.exec(f"step {i}")

    step(1)
    page = Page(log)
    try:
        open_page(browser, f"{page.base}/ui/traces/live")
        wait_for(browser, lambda d: len(css(d, "[data-testid=call-row]")) == 1)
        browser.execute_script("window.__same_page = true")
        for i in (2, 3):
            step(i)
        wait_for(browser, lambda d: len(css(d, "[data-testid=call-row]")) == 3, message="the new calls listed")
        wait_for(browser, lambda d: "3 calls" in css(d, "[data-testid=live-status]")[0].text)
        assert browser.execute_script("return window.__same_page === true")  # no reload happened
    finally:
        rt.close()
        page.server.shutdown()


def test_spans_arriving_at_serve_appear_without_a_reload(browser, tmp_path):
    rx = Receiver(tmp_path / "received.jsonl", token="t0ken")
    server = serve_http(rx, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{server.server_port}"
    rt = setup(tmp_path / "agent.jsonl", session_id="remote", model=ScriptedModel({"*": ["ok"] * 5}))
    rt.provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers={"Authorization": "Bearer t0ken"}))
    )
    rt.send_texts = True

    @agentic
    def ask(q: str) -> str:
        return rt.exec(q)

    try:
        ask("first")
        open_page(browser, f"{base}/ui/traces/remote?token=t0ken")  # sets the cookie, then the page
        wait_for(browser, lambda d: len(css(d, "[data-testid=call-row]")) == 1)
        assert "token" not in browser.current_url
        browser.execute_script("window.__same_page = true")
        ask("second")
        wait_for(browser, lambda d: len(css(d, "[data-testid=call-row]")) == 2, message="the span that arrived")
        assert browser.execute_script("return window.__same_page === true")
        css(browser, "[data-testid=call-row][data-index='2']")[0].click()
        wait_for(browser, lambda d: css(d, "[data-testid=segment]"))
    finally:
        rt.close()
        server.shutdown()
        rx.close()


def test_ten_thousand_calls_open_and_scroll(browser, demo, tmp_path):
    log, _ = demo
    big = tmp_path / "big.jsonl"
    n = many_calls(log, big, 10_000)
    page = Page(big)
    try:
        open_page(browser, f"{page.base}/ui/traces/demo")
        wait_for(browser, lambda d: css(d, "[data-testid=call-row]"), timeout=30)
        assert len(css(browser, "[data-testid=call-row]")) < 200  # only what is visible is in the page
        calls = css(browser, "[data-testid=calls-list]")[0]
        browser.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", calls)
        last = wait_for(browser, lambda d: css(d, f"[data-testid=call-row][data-index='{n}']"), timeout=30)
        assert len(css(browser, "[data-testid=call-row]")) < 200
        last[0].click()
        wait_for(browser, lambda d: d.current_url.endswith(f"/ui/calls/{n}"))
        wait_for(browser, lambda d: css(d, "[data-testid=segment]"), timeout=60)
        nodes = css(browser, "[data-testid=tree] [data-testid=node]")
        assert 0 < len(nodes) < 1000  # the tree is loaded level by level, not whole
        assert js_errors(browser) == []
    finally:
        page.server.shutdown()


def test_the_pictures_in_the_readme(browser, tmp_path):
    """The demo at a scale where the prompt cache hits, as the README shows it (the pictures are
    saved when CALLCTX_SCREENSHOTS is set); each view shows the cache reads it should."""
    log = tmp_path / "events.jsonl"
    rt = setup(log, session_id="demo", service_name="research-agent")
    run(rt, scale=8)
    rt.close()
    page = Page(log)
    try:
        chart = page.api("/ui/api/trees/demo/chart")["calls"]
        n = max(chart, key=lambda c: (c["read"] > 0, c["write"] == 0, c["index"]))["index"]
        detail = page.api(f"/ui/api/calls/{n}")
        assert detail["simulation"]["read"] > 0  # a call whose prefix the cache served
        open_page(browser, f"{page.base}/ui/calls/{n}")
        wait_for(browser, lambda d: len(css(d, "[data-testid=segment]")) == len(detail["segments"]))
        shown = [e.text for e in css(browser, "[data-testid=seg-cache]")]
        reads = [s["cache"]["read"] for s in detail["segments"]]
        assert any(f"read {r:,}" in t for r, t in zip(reads, shown, strict=True) if r)
        screenshot(browser, "call")
        diff = css(browser, "[data-testid=diff]")[0]
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", diff)
        wait_for(browser, lambda d: diff.get_attribute("data-component") == detail["diff"]["component"])
        screenshot(browser, "diff")
        open_page(browser, f"{page.base}/ui/traces/demo")
        wait_for(browser, lambda d: css(d, "[data-testid=chart]") and css(d, "[data-testid=call-row]"))
        wait_for(browser, lambda d: css(d, "[data-testid=node-excerpt]"), message="the tree's first level")
        screenshot(browser, "session")
        assert js_errors(browser) == []
    finally:
        page.server.shutdown()
    # an agentic call opened from the tree: the planner's budget check, which failed
    page = Page(trip_log(tmp_path))
    try:
        root = page.api("/ui/api/trees/trip/nodes")["nodes"][0]["span_id"]
        kids = page.api(f"/ui/api/trees/trip/nodes?parent={root}")["nodes"]
        span = next(n["span_id"] for n in kids if n["function"] == "check_budget")
        open_page(browser, f"{page.base}/ui/traces/trip")
        node = wait_for(browser, lambda d: css(d, f"[data-testid=node][data-span='{span}'] .name"))[0]
        node.click()
        shown = wait_for(browser, lambda d: css(d, f"[data-testid=span][data-span='{span}'] [data-testid=span-error]"))
        assert "OutputValidationError" in shown[0].text
        screenshot(browser, "span")
        assert js_errors(browser) == []
    finally:
        page.server.shutdown()

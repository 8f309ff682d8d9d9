"""What the page says, in a real browser at 1024 and 1600 px: the first words of each call's
input where calls of one function sit side by side, an agentic call's input, output and error
when its node is opened, what a parallel call is compared with and what changed in words, the
request's multi-line strings as text (its JSON still copied whole), and a log that does not
exist yet said plainly instead of "live"."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
from helpers.trip import CITIES, trip_log

from .conftest import js_errors, wait_for
from .pages import Page, css, open_page

pytest.importorskip("selenium", reason="run `make browser`")
from selenium.webdriver.common.by import By


@pytest.fixture(scope="module")
def trip(tmp_path_factory):
    log = trip_log(tmp_path_factory.mktemp("trip"))
    page = Page(log)
    yield log, page
    page.close()


_RECT = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]"


def rect(driver, el):
    return driver.execute_script(_RECT, el)


def _in_span(driver, span, part):
    """The element ``part`` of span ``span``'s detail, once it shows that span (else None)."""
    found = css(driver, f"[data-testid=span][data-span='{span}'] {part}")
    return found[0] if found else None


def test_calls_of_one_function_show_the_first_words_of_their_input(sized, trip):
    _, page = trip
    listed = page.api("/ui/api/calls?tree=trip")["calls"]
    open_page(sized, f"{page.base}/ui/traces/trip")
    wait_for(sized, lambda d: len(css(d, "[data-testid=call-row]")) == len(listed), message="every call listed")
    rows = {}
    for row in css(sized, "[data-testid=call-row]"):
        fn = row.find_element(By.CSS_SELECTOR, ".fn").text
        said = row.find_element(By.CSS_SELECTOR, "[data-testid=call-excerpt]")
        rows[int(row.get_attribute("data-index"))] = (fn, said.get_attribute("textContent"), said)
    research = {n: r for n, r in rows.items() if r[0] == "research_city"}
    assert len(research) == 6
    assert {r[1] for r in research.values()} == {f"city: {c}, days: 4" for c in CITIES}  # three cities, apart
    for n, (_, text, el) in research.items():
        assert text == next(c["excerpt"] for c in listed if c["index"] == n)
        left, right, _, _ = rect(sized, el)
        assert right - left > 60 and el.is_displayed()  # on screen, not squeezed out of the row
    # the tree: the three research_city nodes side by side, each with its own input
    wait_for(sized, lambda d: len(css(d, "[data-testid=node-excerpt]")) >= 6, message="the root's children")
    nodes = [
        (
            e.find_element(By.CSS_SELECTOR, ".name").text,
            e.find_element(By.CSS_SELECTOR, "[data-testid=node-excerpt]").text,
        )
        for e in css(sized, "[data-testid=node]")
        if e.find_elements(By.CSS_SELECTOR, "[data-testid=node-excerpt]")
    ]
    cities = [said for name, said in nodes if name == "research_city"]
    assert sorted(cities) == sorted(f"city: {c}, days: 4" for c in CITIES)
    assert js_errors(sized) == []


def _node(driver, function):
    found = [e for e in css(driver, "[data-testid=node]") if e.find_element(By.CSS_SELECTOR, ".name").text == function]
    return found[0] if found else None


def test_an_agentic_call_opens_with_its_input_output_and_error(sized, trip):
    _, page = trip
    open_page(sized, f"{page.base}/ui/traces/trip")
    node = wait_for(sized, lambda d: _node(d, "check_budget"), message="the check_budget node")
    node.find_element(By.CSS_SELECTOR, ".name").click()
    span = node.get_attribute("data-span")
    wait_for(sized, lambda d: d.current_url.endswith(f"/ui/spans/{span}"))
    error = wait_for(sized, lambda d: _in_span(d, span, "[data-testid=span-error]"))
    said = page.api(f"/ui/api/spans/{span}")["error"]
    assert said.startswith("OutputValidationError: check_budget: output does not match the schema")
    assert said in error.text and error.is_displayed()
    assert "Paris" in css(sized, "[data-testid=span-input]")[0].text
    assert "none recorded" in css(sized, "[data-testid=span-output]")[0].text
    # the node of the cancelled call: its error is its type alone, nowhere followed by a colon
    node = _node(sized, "book_hotel")
    node.find_element(By.CSS_SELECTOR, ".name").click()
    span = node.get_attribute("data-span")
    error = wait_for(sized, lambda d: _in_span(d, span, "[data-testid=span-error] pre"))
    assert error.text == "CancelledError"
    assert "CancelledError:" not in sized.find_element(By.TAG_NAME, "body").text
    assert "CancelledError:" not in (node.get_attribute("title") or "")
    # a call that went well: its output, and no error
    node = _node(sized, "research_city")
    node.find_element(By.CSS_SELECTOR, ".name").click()
    span = node.get_attribute("data-span")
    output = wait_for(sized, lambda d: _in_span(d, span, "[data-testid=span-output]"))
    assert page.api(f"/ui/api/spans/{span}")["output"] in output.text
    assert not css(sized, "[data-testid=span-error]")
    assert js_errors(sized) == []


def test_a_parallel_call_is_compared_with_the_previous_call_on_its_own_path(sized, trip):
    _, page = trip
    listed = page.api("/ui/api/calls?tree=trip")["calls"]
    research = [c for c in listed if c["function"] == "research_city"]
    # the second call of a city whose previous call by number is another city's
    second = next(
        c for c in research
        if any(o["excerpt"] == c["excerpt"] and o["index"] < c["index"] for o in research)
        and next(o for o in listed if o["index"] == c["index"] - 1)["excerpt"] != c["excerpt"]
    )  # fmt: skip
    first = max((o for o in research if o["excerpt"] == second["excerpt"] and o["index"] < second["index"]),
                key=lambda o: o["index"])  # fmt: skip
    detail = page.api(f"/ui/api/calls/{second['index']}")
    assert detail["diff"]["previous"] == first["index"] and detail["diff"]["basis"] == "path"
    open_page(sized, f"{page.base}/ui/calls/{second['index']}")
    diff = wait_for(sized, lambda d: (css(d, "[data-testid=diff][data-previous]") or [None])[0])
    assert diff.get_attribute("data-previous") == str(first["index"])
    assert diff.get_attribute("data-basis") == "path"
    title = diff.find_element(By.TAG_NAME, "h3").text
    assert title == f"What changed since call {first['index']}"
    basis = diff.find_element(By.CSS_SELECTOR, "[data-testid=diff-basis]").text
    assert f"call {first['index']} is the previous call on its path" in basis
    words = [li.text for li in diff.find_elements(By.CSS_SELECTOR, "[data-testid=diff-words] li")]
    assert words == detail["diff"]["words"] and "the input changed at character 2" in words
    assert not any(re.search(r"segment \d+ differs", w) for w in words)
    assert js_errors(sized) == []


def test_the_request_reads_multi_line_strings_as_text_and_copies_as_json(sized, trip):
    _, page = trip
    n = next(c["index"] for c in page.api("/ui/api/calls?tree=trip")["calls"] if c["function"] == "research_city")
    body = page.api(f"/ui/api/calls/{n}/request")["body"]
    open_page(sized, f"{page.base}/ui/calls/{n}")
    view = wait_for(sized, lambda d: (css(d, "[data-testid=request][data-ready]") or [None])[0], message="the request")
    blocks = view.find_elements(By.CSS_SELECTOR, "[data-testid=json-text]")
    texts = [sized.execute_script("return arguments[0].innerText", b) for b in blocks]
    prompt = next(t for t in texts if "List three sights." in t)
    assert "\nList three sights." in prompt  # a real line break, not "\n" escaped on one line
    assert "\\n" not in prompt
    assert sized.execute_script("return getComputedStyle(arguments[0]).whiteSpace", blocks[0]) == "pre-wrap"
    # the raw view and the copy button give the JSON itself
    raw = css(sized, "[data-testid=request-raw]")[0]
    assert not raw.is_displayed()
    css(sized, "[data-testid=request-raw-toggle]")[0].click()
    wait_for(sized, lambda d: raw.is_displayed())
    assert json.loads(raw.text) == body
    sized.execute_script(  # the clipboard, as the page's copy button writes it
        "Object.defineProperty(navigator, 'clipboard', "
        "{configurable: true, value: {writeText: async (t) => { window.__copied = t; }}})"
    )
    css(sized, "[data-testid=request-copy]")[0].click()
    copied = wait_for(sized, lambda d: d.execute_script("return window.__copied || null"), message="the copy")
    assert json.loads(copied) == body
    assert js_errors(sized) == []


def test_a_log_that_does_not_exist_yet_is_said_plainly(sized, trip, tmp_path):
    log, _ = trip
    missing = tmp_path / "evnts.jsonl"  # mistyped: nothing there yet
    proc = subprocess.Popen(
        [sys.executable, "-m", "callctx.cli", "ui", str(missing), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/ui/", proc.stdout.readline())
        assert m, proc.stderr.read()
        open_page(sized, f"http://127.0.0.1:{m.group(1)}/ui/")
        notice = wait_for(sized, lambda d: [e for e in css(d, "[data-testid=source-missing]") if e.is_displayed()])
        assert f"The log at {missing} does not exist yet" in notice[0].text
        badge = css(sized, "[data-testid=live-status]")[0]
        wait_for(sized, lambda d: "waiting" in (badge.get_attribute("class") or ""), message="the waiting badge")
        assert not badge.text.startswith("live") and "no log yet" in badge.text
        green = sized.execute_script("return getComputedStyle(arguments[0]).backgroundColor", badge)
        assert green != "rgb(218, 251, 225)"  # not the live badge's green
        shutil.copyfile(log, missing)  # the log appears: the page says live, and the notice goes
        wait_for(sized, lambda d: badge.text.startswith("live · 10 calls"), timeout=15, message="live")
        wait_for(sized, lambda d: not css(d, "[data-testid=source-missing]")[0].is_displayed())
        assert js_errors(sized) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0

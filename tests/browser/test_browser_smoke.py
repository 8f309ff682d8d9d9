"""The browser stack end to end: Debian's headless Chromium, chromedriver and Selenium load a
page, run its script, and the helpers see the DOM, the console and the window."""

from __future__ import annotations

import urllib.parse

import pytest

from .conftest import HINT, WINDOW, js_errors, screenshot, wait_for

By = pytest.importorskip("selenium.webdriver.common.by", reason=f"selenium is not installed: {HINT}").By

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>callctx smoke</title></head>
<body>
  <h1 id="title">callctx</h1>
  <ul id="calls"></ul>
  <script>
    // Filled in after load, so the test has to wait for it rather than read it at once.
    setTimeout(() => {
      for (const name of ["plan", "search", "answer"]) {
        const li = document.createElement("li");
        li.textContent = name;
        document.getElementById("calls").appendChild(li);
      }
      document.body.dataset.ready = "yes";
    }, 100);
  </script>
</body></html>
"""


def data_url(html: str) -> str:
    return "data:text/html;charset=utf-8," + urllib.parse.quote(html)


def test_local_page_renders_and_runs_its_script(browser, tmp_path):
    page = tmp_path / "smoke.html"
    page.write_text(PAGE, encoding="utf-8")
    browser.get(page.as_uri())
    js_errors(browser)  # start from an empty console

    wait_for(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "yes")

    assert browser.title == "callctx smoke"
    assert browser.find_element(By.ID, "title").text == "callctx"
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#calls li")] == ["plan", "search", "answer"]
    assert browser.execute_script("return [window.outerWidth, window.outerHeight]") == list(WINDOW)
    assert js_errors(browser) == []
    screenshot(browser, "smoke")


def test_console_errors_are_collected(browser):
    browser.get(data_url("<p id='x'>x</p><script>console.error('smoke-console-error')</script>"))
    wait_for(browser, lambda d: d.find_element(By.ID, "x").text == "x")
    messages = [e["message"] for e in js_errors(browser)]
    assert any("smoke-console-error" in m for m in messages), messages


def test_wait_for_times_out_with_url_and_console_errors(browser):
    browser.get(data_url("<p>never ready</p><script>throw new Error('smoke-uncaught')</script>"))
    with pytest.raises(AssertionError) as failure:
        wait_for(browser, lambda d: d.find_elements(By.ID, "missing"), timeout=0.5, message="#missing")
    text = str(failure.value)
    assert "timed out after 0.5s waiting for #missing" in text
    assert "url: data:text/html" in text
    assert "smoke-uncaught" in text


def test_screenshot_saves_png_only_when_asked(browser, tmp_path, monkeypatch):
    browser.get(data_url("<h1 id='h'>shot</h1>"))
    wait_for(browser, lambda d: d.find_element(By.ID, "h").text == "shot")

    monkeypatch.delenv("CALLCTX_SCREENSHOTS", raising=False)
    assert screenshot(browser, "nothing") is None

    folder = tmp_path / "shots" / "nested"
    monkeypatch.setenv("CALLCTX_SCREENSHOTS", str(folder))
    path = screenshot(browser, "smoke shot")
    assert path == folder / "smoke_shot.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

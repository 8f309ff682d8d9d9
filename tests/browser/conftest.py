"""Real-browser tests: Debian's headless Chromium driven by Selenium.

The browser and its driver come from Debian's ``chromium`` and ``chromium-driver`` packages
(``make browser`` or ``bash .ci/browser`` installs them); Selenium is told both paths and runs
offline, so Selenium Manager never downloads a browser or a driver. When any piece is missing the
tests are skipped with a hint, and under ``CI=true`` the repository's conftest makes that skip a
failure.

Helpers for the tests (``from .conftest import ...``): :func:`wait_for` polls a condition with a
deadline, :func:`js_errors` returns the page's console errors, :func:`screenshot` saves a PNG to
``$CALLCTX_SCREENSHOTS`` when that is set. The ``sized`` fixture gives the browser at each window
width the page must work at (:data:`WIDTHS`), the test run once per width.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the skip below says how to get it
    webdriver = None

REBOUND = "rebound.example"  # the browser resolves it to 127.0.0.1 (DNS rebinding, made up front)
HINT = "run `make browser` (installs Debian's chromium and chromium-driver, and the test extras)"
WINDOW = (1366, 900)
WIDTHS = (1024, 1600)  # the page works from 1024 px wide up: the narrowest and a wide screen


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromedriver_path() -> str | None:
    return shutil.which("chromedriver")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium WebDriver for the whole session. Pages it loads share it: start each
    test with ``browser.get(...)``."""
    if webdriver is None:
        pytest.skip(f"selenium is not installed: {HINT}")
    binary, driver_path = chromium_path(), chromedriver_path()
    if binary is None:
        pytest.skip(f"chromium is not installed: {HINT}")
    if driver_path is None:
        pytest.skip(f"chromedriver is not installed: {HINT}")

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in CI, and no chromium-sandbox package
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        # names that resolve to this machine, as an attacker's name rebound to 127.0.0.1 would
        f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})

    with pytest.MonkeyPatch.context() as env:
        env.setenv("SE_OFFLINE", "true")  # Selenium Manager, should anything reach it, fetches nothing
        try:
            driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
        except WebDriverException as exc:  # installed but does not start: a real failure, not a skip
            pytest.fail(f"headless chromium ({binary}) with {driver_path} did not start: {exc.msg or exc}; {HINT}")
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def sized(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The browser with its window ``request.param`` pixels wide (the page's viewport as wide),
    set back to :data:`WINDOW` after the test."""
    browser.set_window_size(request.param, WINDOW[1])
    wait_for(browser, lambda d: d.execute_script("return window.innerWidth") == request.param, message="the width")
    try:
        yield browser
    finally:
        browser.set_window_size(*WINDOW)


def js_errors(driver: Any) -> list[dict[str, Any]]:
    """The SEVERE entries of the browser console logged since the last call (reading the log
    empties it): uncaught exceptions, ``console.error``, failed loads."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def wait_for(driver: Any, predicate: Callable[[Any], Any], timeout: float = 10, message: str = "") -> Any:
    """Poll ``predicate(driver)`` until it returns something truthy, and return that. Past
    ``timeout`` seconds, fail with the page's URL and console errors."""
    wait = WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,))
    try:
        return wait.until(predicate)
    except TimeoutException:
        what = message or getattr(predicate, "__name__", repr(predicate))
        errors = "\n".join(f"  {e.get('level')}: {e.get('message')}" for e in js_errors(driver)) or "  (none)"
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what}\n  url: {driver.current_url}\nconsole errors:\n{errors}"
        ) from None


def screenshot(driver: Any, name: str) -> Path | None:
    """Save a PNG of the window as ``$CALLCTX_SCREENSHOTS/<name>.png`` (creating the folder) and
    return its path; without that variable, do nothing."""
    folder = os.environ.get("CALLCTX_SCREENSHOTS")
    if not folder:
        return None
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name.removesuffix(".png")) or "screenshot"
    target = path / f"{stem}.png"
    if not driver.save_screenshot(str(target)):
        raise AssertionError(f"could not save a screenshot to {target}")
    return target

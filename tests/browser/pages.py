"""What the browser tests share: ``callctx ui`` over one log as the command serves it
(:class:`Page`), finding elements (:func:`css`) and opening a page with an empty console
(:func:`open_page`)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from callctx.export.shaping import Shaper
from callctx.store.local import LocalStore
from callctx.ui import Views
from callctx.ui.server import serve_page

from .conftest import js_errors


class Page:
    """``callctx ui`` for one log, as the command serves it, shaped (``follows``: its cache
    ledger kept up by the test, as the command's background thread would)."""

    def __init__(self, log: Any, *, follows: bool = False) -> None:
        self.store = LocalStore(log)
        self.views = Views(self.store, wait_for_cache=not follows)
        self.server = serve_page(self.views, "127.0.0.1", 0, shape=Shaper().redact)
        self.base = f"http://127.0.0.1:{self.server.server_port}"

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=10) as resp:
            return json.loads(resp.read())

    def close(self) -> None:
        self.server.shutdown()
        self.store.close()


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def open_page(driver: Any, url: str) -> None:
    driver.get(url)
    js_errors(driver)  # start from an empty console

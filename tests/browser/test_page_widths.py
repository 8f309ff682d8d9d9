"""The page at 1024 and 1600 px wide, in a real browser: nothing scrolls the page or the tree
sideways, the session chart's footer is in view, every call row keeps all its columns, and a
name too long for its place is cut with an ellipsis and said whole in a title."""

from __future__ import annotations

import pytest
from helpers.trip import trip_log

from callctx import agentic, setup
from callctx.export.shaping import Shaper
from callctx.models import ScriptedModel
from callctx.store.local import LocalStore
from callctx.ui import Views
from callctx.ui.server import serve_page

from .conftest import js_errors, wait_for
from .pages import css

pytest.importorskip("selenium", reason="run `make browser`")
from selenium.webdriver.common.by import By

LONG = "summarize_every_note_of_every_city_into_one_itinerary_for_the_whole_family_and_friends"
COLUMNS = (".n", ".fn", "[data-testid=call-excerpt]", ".model", ".status", ".m")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The page over the trip planner's log, with a call of a very long function name appended."""
    folder = tmp_path_factory.mktemp("widths")
    log = trip_log(folder)
    rt = setup(log, session_id="trip", model=ScriptedModel({"*": ["done"]}))

    @agentic(name=LONG)
    def summarize(notes: str) -> str:
        return rt.exec(f"Summarize: {notes}")

    summarize("Paris for the museums, Rome for the food, Berlin for the music, and every evening a long walk")
    rt.close()
    store = LocalStore(log)
    server = serve_page(Views(store), "127.0.0.1", 0, shape=Shaper().redact)
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    store.close()


def box(driver, el):
    return driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top, "
        "bottom: r.bottom, width: r.width, sw: arguments[0].scrollWidth, cw: arguments[0].clientWidth}",
        el,
    )


def test_nothing_scrolls_sideways_and_the_chart_footer_is_in_view(sized, served):
    sized.get(f"{served}/ui/calls/5")
    js_errors(sized)
    wait_for(sized, lambda d: css(d, "[data-testid=segment]") and css(d, "[data-testid=call-row]"))
    wait_for(sized, lambda d: len(css(d, "[data-testid=node]")) >= 8, message="the tree")
    readout = wait_for(sized, lambda d: [e for e in css(d, ".chart-wrap .readout") if e.text], message="the chart")[0]
    width = sized.execute_script("return window.innerWidth")
    height = sized.execute_script("return window.innerHeight")
    assert sized.execute_script("return document.documentElement.scrollWidth") <= width
    tree = css(sized, "[data-testid=tree]")[0]
    assert sized.execute_script("return arguments[0].scrollWidth", tree) <= sized.execute_script(
        "return arguments[0].clientWidth", tree
    )
    for node in css(sized, "[data-testid=node]"):  # every node inside the tree's box
        assert box(sized, node)["right"] <= box(sized, tree)["right"] + 1
    # the chart's footer: whole (not cut by an ellipsis), inside its section and the window
    footer, wrap = box(sized, readout), box(sized, css(sized, ".chart-wrap")[0])
    assert footer["sw"] <= footer["cw"] and "calls · simulated" in readout.text
    assert wrap["top"] <= footer["top"] and footer["bottom"] <= wrap["bottom"] <= height
    assert footer["right"] <= wrap["right"] <= width
    assert js_errors(sized) == []


def test_every_call_row_keeps_its_columns(sized, served):
    sized.get(f"{served}/ui/traces/trip")
    rows = wait_for(sized, lambda d: [r for r in css(d, "[data-testid=call-row]") if r.get_attribute("data-index")])
    assert len(rows) >= 5
    for row in rows:
        outer = box(sized, row)
        for sel in COLUMNS:
            for cell in row.find_elements(By.CSS_SELECTOR, sel):
                b = box(sized, cell)
                assert b["width"] > 0, (sel, row.text)  # shown...
                assert outer["left"] - 1 <= b["left"] and b["right"] <= outer["right"] + 1, (sel, row.text)  # ...whole
                assert outer["top"] - 1 <= b["top"] and b["bottom"] <= outer["bottom"] + 1, (sel, row.text)
        figures = [c.text for c in row.find_elements(By.CSS_SELECTOR, ".m")]
        assert len(figures) == 3 and figures[0].endswith("tok") and figures[2].endswith("ms")
    assert sized.execute_script("return document.documentElement.scrollWidth") <= sized.execute_script(
        "return window.innerWidth"
    )


def test_a_long_name_is_cut_with_an_ellipsis_and_said_whole_in_its_title(sized, served):
    sized.get(f"{served}/ui/traces/trip")
    row = wait_for(
        sized, lambda d: [r for r in css(d, "[data-testid=call-row]") if LONG in (r.get_attribute("title") or "")]
    )[0]
    fn = box(sized, row.find_element(By.CSS_SELECTOR, ".fn"))
    assert fn["sw"] > fn["cw"]  # cut: the title says it whole
    overflow = sized.execute_script(
        "return getComputedStyle(arguments[0]).textOverflow", row.find_element(By.CSS_SELECTOR, ".fn")
    )
    assert overflow == "ellipsis"
    node = wait_for(
        sized,
        lambda d: [n for n in css(d, "[data-testid=node]") if n.find_element(By.CSS_SELECTOR, ".name").text == LONG],
    )[0]
    label = node.find_element(By.CSS_SELECTOR, ".label")
    assert box(sized, label)["sw"] > box(sized, label)["cw"] and LONG in node.get_attribute("title")
    assert box(sized, node)["right"] <= box(sized, css(sized, "[data-testid=tree]")[0])["right"] + 1
    assert sized.execute_script("return document.documentElement.scrollWidth") <= sized.execute_script(
        "return window.innerWidth"
    )
    assert js_errors(sized) == []

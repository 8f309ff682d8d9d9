"""What the page's API says changed since the call a call is compared with: the previous call on
its own path in a parallel run (never another branch's, whatever the call numbers say), else the
call its prompt cache was compared with; said in words, from either store. And what it says of
one span (an agentic call that failed, one cancelled) and of a log that is not there yet."""

from __future__ import annotations

import json

import pytest
from helpers.foreign_chat import session
from helpers.otel_rows import exported
from helpers.stores import log_of
from helpers.trip import SESSION, trip_log

from callctx.components.wire.parts import Parts
from callctx.export.shaping import Shaper
from callctx.projection.batch import records
from callctx.projection.errors import NotFound
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.local import LocalStore
from callctx.store.otel_table import OtelTable
from callctx.ui import Views, respond
from callctx.ui.changes import in_words, of_parts


@pytest.fixture(scope="module")
def trip(tmp_path_factory):
    return trip_log(tmp_path_factory.mktemp("trip"))


def _branches(views: Views) -> dict[int, str]:
    """Each call of the trip: the agentic call it ran in (its branch)."""
    return {c["index"]: views.call(c["index"])["path"][-2] for c in views.calls(SESSION)["calls"]}


def _check_parallel(views: Views) -> None:
    listed = views.calls(SESSION)["calls"]
    branch = _branches(views)
    top = {n for n, c in zip(branch, listed, strict=True) if c["function"] == "plan_trip"}
    moved = 0
    for c in listed:
        if c["function"] != "research_city":
            continue
        d = views.call(c["index"])
        diff = d["diff"]
        mine = [n for n in branch if n < c["index"] and branch[n] == branch[c["index"]]]
        expected = max(mine) if mine else max(n for n in top if n < c["index"])
        assert diff["previous"] == expected and diff["basis"] == "path"  # its own branch, or the plan above it
        assert diff["cache_compared"] == d["cache"]["compared_with"]
        moved += diff["previous"] != c["index"] - 1 and branch[c["index"] - 1] != branch[c["index"]]
        assert diff["words"] and not any("segment" in w for w in diff["words"])
        if mine:  # the second question of the same city: the call tree grew, the question changed
            assert diff["words"][-1] == "the input changed at character 2"
    assert moved >= 2  # the call just before was another city's: that is not what it is compared with


def test_a_parallel_call_is_compared_with_the_previous_call_on_its_own_path(trip):
    _check_parallel(Views(LocalStore(trip)))


def test_over_the_clickhouse_store_too(conn, trip, tmp_path):
    batch = exported(trip)
    table = OtelTable(conn, table="traces_what_changed")
    table.create()
    assert table.write(batch.spans) == len(batch.spans)
    with ClickHouseStore(conn, table=table.table) as ch:
        views = Views(ch)
        assert views.state()["kind"] == "table"
        _check_parallel(views)
        local = Views(LocalStore(log_of(records(batch), tmp_path), finished=True))
        for n in range(1, 11):
            assert views.call(n)["diff"] == local.call(n)["diff"]


def test_with_no_call_on_its_path_a_call_is_compared_with_the_cache_s(tmp_path):
    """A framework's calls, no agentic call above them: the call the cache ledger compared
    each with, and what changed in words (a message, a system text, the model)."""
    views = Views(LocalStore(log_of(session(), tmp_path)))
    assert views.call(1)["diff"] is None
    said = {}
    for n in range(2, 6):
        d = views.call(n)
        assert d["diff"]["basis"] == "cache" and d["diff"]["previous"] == d["cache"]["compared_with"] == n - 1
        said[n] = d["diff"]["words"]
    assert said[2] == ["message 0 (user) changed at character 5"]
    assert said[3][0].startswith("system text changed at character ")
    assert said[5] == ["call 5 asks claude-opus-4-6, call 4 asked claude-sonnet-4-5"]


def test_what_changed_reads_in_words():
    tools = Parts(tools=['{"name": "search"}', '{"name": "fetch"}'], tool_names=["search", "fetch"])
    chat = Parts(system=["You are a helper. Today is Monday."], messages=["user: hi", "assistant: hello"])
    assert in_words(of_parts(Parts(tools=tools.tools, tool_names=tools.tool_names, system=chat.system,
                                   messages=chat.messages)), of_parts(chat), 12, 13) == [
        "call 12 had a tools block, call 13 has none"
    ]  # fmt: skip
    more = Parts(system=chat.system, messages=[*chat.messages, "tool: 3 results", "user: and then?"])
    assert in_words(of_parts(chat), of_parts(more), 12, 13) == ["call 13 adds 2 messages (tool, user)"]
    later = Parts(system=["You are a helper. Today is Tuesday."], messages=chat.messages)
    assert in_words(of_parts(chat), of_parts(later), 12, 13) == ["system text changed at character 27"]
    fewer = Parts(tools=tools.tools[:1], tool_names=["search"], system=chat.system, messages=chat.messages[:1])
    both = Parts(tools=tools.tools, tool_names=tools.tool_names, system=chat.system, messages=chat.messages)
    assert in_words(of_parts(both), of_parts(fewer), 12, 13) == [
        "call 13 drops 1 tool: fetch", "call 13 has 1 fewer message (assistant) than call 12",
    ]  # fmt: skip
    assert in_words(of_parts(chat), of_parts(chat), 12, 13) == ["nothing call 13 sends differs from call 12"]


def test_an_agentic_call_opens_with_its_input_output_and_error(trip):
    views = Views(LocalStore(trip))
    root = views.nodes(SESSION)["nodes"][0]
    kids = {n["function"]: n for n in views.nodes(SESSION, root["span_id"])["nodes"] if n["kind"] == "agentic"}
    budget = views.span(kids["check_budget"]["span_id"])
    assert budget["status"] == "error" and budget["kind"] == "agentic"
    assert budget["error"].startswith("OutputValidationError: check_budget: output does not match the schema")
    assert json.loads(budget["input"]) == {"cities": ["Paris", "Rome", "Berlin"]} and budget["output"] is None
    assert budget["path"] == [root["span_id"], budget["span_id"]] and budget["tree"] == SESSION
    cancelled = views.span(kids["book_hotel"]["span_id"])
    assert cancelled["error"] == "CancelledError"  # its type alone: no colon, nothing after it
    assert kids["book_hotel"]["error"] == "CancelledError"
    city = views.span(kids["research_city"]["span_id"])
    assert city["error"] is None and city["output"].startswith("answer ")
    with pytest.raises(NotFound):
        views.span("0" * 16)


def test_the_span_route_answers_shaped(trip, tmp_path):
    views = Views(LocalStore(trip))
    root = views.nodes(SESSION)["nodes"][0]["span_id"]
    page = respond(views, ["ui", "spans", root], {}, Shaper().redact)
    assert page.status == 200 and b"<html" in page.body.lower()
    api = respond(views, ["ui", "api", "spans", root], {}, Shaper().redact)
    assert api.status == 200 and json.loads(api.body)["function"] == "plan_trip"
    assert respond(views, ["ui", "api", "spans", "nope"], {}, None).status == 404


def test_a_log_not_there_yet_is_said_so(tmp_path):
    views = Views(LocalStore(tmp_path / "evnts.jsonl"))
    state = views.state()
    assert state["exists"] is False and state["kind"] == "log" and state["source"] == str(tmp_path / "evnts.jsonl")

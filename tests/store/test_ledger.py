"""The store's cache ledger: the same entries however the log reaches it (all at once, a call at
a time, a call arriving late with an earlier start), read the same way by `callctx cache --why`,
serve's `/api/calls/{n}/cache` and the page; a framework's calls get their reason and their diff."""

from __future__ import annotations

import json

import pytest
from helpers.cli import cli_ok
from helpers.foreign_chat import PREFIX, SYSTEM, chat, session
from helpers.stores import log_of

from callctx.components.cache_ledger import Ledger
from callctx.projection.errors import NotFound
from callctx.projection.events import encode
from callctx.projection.log import EventLog
from callctx.serve.read_api import answer
from callctx.store import ledger as ledger_mod
from callctx.store.ledger import entry_json
from callctx.store.local import LocalStore
from callctx.ui.views import Views


def entries(store: LocalStore) -> list[dict]:
    return [entry_json(e) for e in store.ledger.entries()]


def test_a_framework_session_gets_each_injected_reason_with_the_first_difference_where_it_was(tmp_path):
    with LocalStore(log_of(session(), tmp_path)) as store:
        got = entries(store)
    assert [e["reason"] for e in got] == ["first", "hit", "prefix_changed", "ttl_expired", "model_changed"]
    busted = got[2]
    assert busted["compared_with"] == 2 and busted["first_difference"]["part"] == "system"
    assert busted["first_difference"]["offset"] == SYSTEM.index("rule1200")
    assert busted["lost_tokens"] == PREFIX and busted["lost_usd"] > 0
    assert got[1]["reported"] == {"cache_read": PREFIX, "cache_write": 0, "input": 10}
    assert got[1]["possible"]["cache_read"] == PREFIX
    assert got[3]["gap_seconds"] == 380 and got[3]["compared_with"] == 3


def test_the_ledger_is_the_same_fed_all_at_once_or_a_call_at_a_time(tmp_path):
    records = session()
    with LocalStore(log_of(records, tmp_path)) as store:
        whole = entries(store)
    path = tmp_path / "grow.jsonl"
    with EventLog(path) as log, LocalStore(path) as store:
        seen = []
        for i in range(0, len(records), 2):
            log.write(encode(records[i]))
            log.write(encode(records[i + 1]))
            log.flush()
            seen.append(entry_json(store.cache(i // 2 + 1)))
        assert seen == whole == entries(store)


def test_a_call_arriving_late_starts_again_from_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_mod, "CHECKPOINT", 4)
    monkeypatch.setattr(ledger_mod, "PAGE", 3)
    calls = [chat(n, at=n * 2, user=f"q{n}", read=PREFIX if n > 1 else 0) for n in range(1, 15)]
    late = chat(99, at=19, user="late")  # starts between calls 9 and 10
    path = tmp_path / "late.jsonl"
    with EventLog(path) as log, LocalStore(path) as store:
        for rec in (r for c in calls for r in c):
            log.write(encode(rec))
        log.flush()
        assert store.ledger.update() == 14
        added: list[int] = []
        add = Ledger.add
        monkeypatch.setattr(Ledger, "add", lambda self, item, *a: (added.append(item.call), add(self, item, *a))[1])
        for rec in late:
            log.write(encode(rec))
        log.flush()
        after = entries(store)
    assert added[0] == 9  # from the checkpoint after call 8, not from the start
    assert len(after) == 15 and after[9]["span_id"] == format(99, "016x")
    monkeypatch.undo()
    with LocalStore(path) as fresh:
        assert entries(fresh) == after


def test_the_cli_serve_and_the_page_answer_the_same_line(tmp_path):
    path = log_of(session(), tmp_path)
    lines = [json.loads(x) for x in cli_ok("cache", path, "--why", "--json").splitlines()]
    with LocalStore(path) as store:
        assert lines == entries(store)
        status, _, body = answer(store, ["api", "calls", "3", "cache"], {}, None)
        assert status == 200 and json.loads(body) == lines[2]
        assert answer(store, ["api", "calls", "9", "cache"], {}, None).status == 404
        with pytest.raises(NotFound):
            store.cache(9)
        views = Views(store)
        page = views.call(3)
        assert page["cache"] == lines[2]
        diff = page["diff"]
        assert diff["previous"] == 2 and diff["part"] == "system" and diff["offset"] == SYSTEM.index("rule1200")
        assert "2026-12-02" in diff["after"] and "rule1200" in diff["before"]
        chart = views.chart(store.call(1).tree)
        assert [c["reason"] for c in chart["calls"]] == [e["reason"] for e in lines]
        assert [c["reported_read"] for c in chart["calls"]] == [0, PREFIX, 0, 0, 0]
        assert chart["reported"]["read"] == PREFIX and chart["totals"]["read"] == sum(
            e["possible"]["cache_read"] for e in lines
        )


def test_the_text_report_lists_every_call_and_the_costliest_cause(tmp_path):
    out = cli_ok("cache", log_of(session(), tmp_path), "--why")
    rows = [ln.split() for ln in out.splitlines()[1:6]]
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5"]
    assert "prefix_changed" in rows[2] and "system[0]" in " ".join(rows[2]) and "(vs" in " ".join(rows[2])
    causes = out.split("top causes")[1]
    assert "turn · prefix_changed" in causes.splitlines()[1]  # the costliest first


def test_ttl_given_on_the_command_line(tmp_path):
    path = log_of(session(reported=False), tmp_path)
    lines = [json.loads(x) for x in cli_ok("cache", path, "--why", "--json").splitlines()]
    assert [e["reason"] for e in lines] == ["first", "hit", "hit"] and lines[1]["reported"] == {"input": 10}
    lines = [json.loads(x) for x in cli_ok("cache", path, "--why", "--json", "--ttl", "5").splitlines()]
    assert [e["reason"] for e in lines] == ["first", "ttl_expired", "ttl_expired"]  # ten seconds apart


def test_a_page_over_a_following_store_shows_a_call_before_the_ledger_reaches_it(tmp_path):
    with LocalStore(log_of(session(), tmp_path)) as store:
        views = Views(store, wait_for_cache=False)  # the ledger is kept up elsewhere (callctx ui, serve)
        early = views.call(3)
        assert early["cache"] == {"pending": True, "ready": 0, "calls": 5} and early["diff"] is None
        assert early["messages"] and store.state().ledger == 0  # the rest is there; nothing was simulated
        store.ledger.update(upto=2)
        assert views.call(3)["cache"]["pending"] and views.call(2)["cache"]["reason"] == "hit"
        store.ledger.update()
        assert views.call(3)["cache"] == entry_json(store.cache(3)) and store.state().ledger == 5

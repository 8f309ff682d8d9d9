"""The cache ledger against a provider that really caches, driven by real frameworks: the OpenAI
Agents SDK and a LangGraph agent (each in its extra environment, traced by OpenInference and
exported over OTLP/HTTP to ``callctx serve``'s receiver) answer one question per step against
:class:`~helpers.caching_server.CachingServer`, with a cache buster injected before known steps:
a timestamp in the system prompt, a tool added, a pause past the TTL, another model, a prompt
under the minimum, an eviction by the provider. Between busters every call is a clean hit.

What the server did is checked first (the busters busted, the clean calls hit), then that every
call arrived with the usage the server answered, then what ``callctx cache LOG --why --json
--ttl TTL`` says of each call: the injected reason, the call it was compared with, the first
difference where the buster put it, the usage reported, a loss exactly on the busted calls.

The minimum cacheable prefix is the rules table's (``gpt-4.1`` family: 2,048 tokens). Real time
plays no part in the outcome: the TTL, on the server and on the ledger, is 600 s, longer than a
whole run may take (the script is given 300 s), so no real gap between calls reaches it; and the
pause takes no time: the script moves the server's clock (``POST /_admin/advance``) and its own
span timestamps (the clocks its tracing reads: see each ``*_busters.py``) forward by the TTL and a
minute at once. The ledger sees a gap over the TTL exactly there, however slow the machine."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers.caching_server import (
    OPENING,
    CacheRules,
    CachingServer,
    Difference,
    Eviction,
    Served,
    Step,
    difference_problems,
    expected_calls,
    ledger,
    long_prompt,
    loss_problems,
    reason_problems,
    reported_problems,
    served_problems,
    table_rules,
)
from helpers.extras import ROOT, venv_python
from helpers.otel_rows import exported
from helpers.stores import all_calls

from callctx.projection.calls import ModelCall
from callctx.projection.otel_traces import row_of
from callctx.serve import Receiver, serve_http
from callctx.store.connection import ChdbConnection
from callctx.store.otel_table import OtelTable

TTL = 600.0  # more than a run may last (SCRIPT_TIMEOUT): only a pause makes a gap this long
PAUSE = TTL + 60.0  # how far a pause moves the clocks forward, at once
SCRIPT_TIMEOUT = 300
M1, M2 = "gpt-4.1-mini", "gpt-4.1"
QUESTION = "What's the weather in Paris?"
RULES = table_rules("openai", ttl_seconds=TTL)
MIN = max(RULES(M1).min_tokens, RULES(M2).min_tokens)
LONG = long_prompt(MIN + 600)  # stable, well over the minimum on its own
STAMP = f"Current time: {datetime.now(UTC):%Y-%m-%dT%H:%M:%S}Z."


def _stamped_inside(prompt: str) -> str:
    """The prompt with the timestamp line before its last twelve rules (a few hundred tokens on)."""
    lines = prompt.split("\n")
    return "\n".join([*lines[:-12], STAMP, *lines[-12:]])


STAMPED_START = f"{STAMP}\n\n{LONG}"
STAMPED_INSIDE = _stamped_inside(LONG)
WEATHER, BOTH, FORECAST_FIRST = ["get_weather"], ["get_weather", "get_forecast"], ["get_forecast", "get_weather"]


def _step(instructions: str, tools: list[str], model: str, *, pause: float = 0, evict: bool = False) -> dict:
    return {"instructions": instructions, "tools": tools, "model": model, "question": QUESTION,
            "pause": pause, "evict": evict}  # fmt: skip


# Per framework: each step's plan for the script, and what its first call must show.
SCENARIOS: dict[str, list[tuple[Step, dict[str, Any]]]] = {
    "openai_agents": [
        (Step("nothing", "first", None), _step(LONG, WEATHER, M1)),
        (Step("nothing", "hit"), _step(LONG, WEATHER, M1)),
        (Step("a timestamp opening the instructions", "prefix_changed", Difference("system", 0, 0), "none"),
         _step(STAMPED_START, WEATHER, M1)),
        (Step("a second tool, after the first", "tools_changed", Difference("tools", 1), "none"),
         _step(STAMPED_START, BOTH, M1)),
        (Step("a pause past the TTL", "ttl_expired", None, "none"), _step(STAMPED_START, BOTH, M1, pause=PAUSE)),
        (Step("another model", "model_changed", None, "none"), _step(STAMPED_START, BOTH, M2)),
        (Step("a prompt under the minimum", "below_minimum", short=True), _step(OPENING, BOTH, M2)),
        (Step("nothing", "hit"), _step(STAMPED_START, BOTH, M2)),
        (Step("an eviction by the provider", "evicted", None, "none"), _step(STAMPED_START, BOTH, M2, evict=True)),
    ],
    "langgraph": [
        (Step("nothing", "first", None), _step(LONG, WEATHER, M1)),
        (Step("nothing", "hit"), _step(LONG, WEATHER, M1)),
        (Step("a timestamp inside the system prompt", "prefix_changed",
              Difference("system", 0, STAMPED_INSIDE.index(STAMP)), "partial"), _step(STAMPED_INSIDE, WEATHER, M1)),
        (Step("a second tool, before the first", "tools_changed", Difference("tools", 0), "none"),
         _step(STAMPED_INSIDE, FORECAST_FIRST, M1)),
        (Step("another model", "model_changed", None, "none"), _step(STAMPED_INSIDE, FORECAST_FIRST, M2)),
        (Step("a pause past the TTL", "ttl_expired", None, "none"),
         _step(STAMPED_INSIDE, FORECAST_FIRST, M2, pause=PAUSE)),
        (Step("an eviction by the provider", "evicted", None, "none"),
         _step(STAMPED_INSIDE, FORECAST_FIRST, M2, evict=True)),
        (Step("a prompt under the minimum", "below_minimum", short=True), _step(OPENING, FORECAST_FIRST, M2)),
        (Step("nothing", "hit"), _step(STAMPED_INSIDE, FORECAST_FIRST, M2)),
    ],
}  # fmt: skip


def test_the_scenarios_inject_what_they_say():
    """The texts behind the expected differences: the stamp starts where the first difference is."""
    assert LONG[0] != STAMP[0] and STAMPED_START.startswith(STAMP)
    at = STAMPED_INSIDE.index(STAMP)
    assert STAMPED_INSIDE[:at] == LONG[:at] and LONG[at] != STAMP[0]
    assert LONG.startswith(OPENING + "\n")
    assert RULES(M1).min_tokens == RULES(M2).min_tokens  # another model, the same minimum: only the model changed


@dataclass
class Run:
    name: str
    rx: Receiver
    served: list[Served]
    evictions: list[Eviction]
    steps: list[Step]

    @property
    def log(self) -> Path:
        return self.rx.log.path

    def calls(self) -> list[ModelCall]:
        return all_calls(self.rx.store)


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def run(request, tmp_path_factory):
    name = request.param
    python = venv_python(name)
    if python is None:
        pytest.skip(f"the {name} environment is not built (make extras)")
    tmp = tmp_path_factory.mktemp(name)
    rx = Receiver(tmp / "received.jsonl")
    srv = serve_http(rx, "127.0.0.1", 0)
    scenario = SCENARIOS[name]
    with CachingServer(openai=RULES) as server:
        plan = {"service": f"{name}-busters", "session": f"{name}-busters-1", "agent": "Support agent",
                "evict_url": server.url + "/_admin/evict", "advance_url": server.url + "/_admin/advance",
                "steps": [p for _, p in scenario]}  # fmt: skip
        (tmp / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
        try:
            proc = subprocess.run(
                [str(python), str(ROOT / "tests" / "frameworks" / f"{name}_busters.py"),
                 f"http://127.0.0.1:{srv.server_port}", server.base_url, str(tmp / "plan.json")],
                capture_output=True, text=True, timeout=SCRIPT_TIMEOUT,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-3000:]
            deadline = time.monotonic() + 30
            while not _settled(rx, len(server.served)) and time.monotonic() < deadline:
                time.sleep(0.05)  # polls until the exported spans are in
        finally:
            srv.shutdown()
        served, evictions = server.served, server.evictions
    yield Run(name, rx, served, evictions, [s for s, _ in scenario])
    rx.close()


def _settled(rx: Receiver, n_requests: int) -> bool:
    calls = all_calls(rx.store)
    return n_requests > 0 and len(calls) >= n_requests and all(c.status != "running" for c in calls)


def _rules(s: Served) -> CacheRules:
    return RULES(s.model)


# ---- the run: what the server did and what arrived ---------------------------------------------
def test_the_server_cached_as_the_busters_say(run):
    assert served_problems(run.steps, run.served, _rules) == []
    assert len(run.served) == 2 * len(run.steps) and {s.api for s in run.served} == {
        "responses" if run.name == "openai_agents" else "chat"
    }


def test_the_eviction_happened_just_before_the_call_it_busts(run):
    (evicted,) = [e.call for e in expected_calls(run.steps) if e.reason == "evicted"]
    (eviction,) = run.evictions
    assert eviction.model is None and eviction.entries > 0
    assert run.served[evicted - 2].at <= eviction.at <= run.served[evicted - 1].at


def test_every_call_arrived_with_the_usage_the_server_answered(run):
    calls = run.calls()
    assert len(calls) == len(run.served)
    got = [(c.model, c.usage.input, c.usage.cache_read or 0, c.foreign, c.status) for c in calls]
    want = [(s.model, s.prompt_tokens, s.cache_read, True, "ok") for s in run.served]
    assert got == want


# ---- the ledger ---------------------------------------------------------------------------------
def test_the_ledger_gives_each_call_its_injected_reason(run):
    problems = reason_problems(ledger(run.log, TTL), expected_calls(run.steps), run.served, TTL)
    assert problems == [], "\n".join(problems)


def test_the_ledger_finds_each_first_difference_where_it_was_injected(run):
    problems = difference_problems(ledger(run.log, TTL), expected_calls(run.steps))
    assert problems == [], "\n".join(problems)


def test_the_ledger_reports_what_the_server_answered(run):
    problems = reported_problems(ledger(run.log, TTL), run.served)
    assert problems == [], "\n".join(problems)


def test_the_ledger_counts_a_loss_exactly_on_the_busted_calls(run):
    problems = loss_problems(ledger(run.log, TTL), expected_calls(run.steps), TTL)
    assert problems == [], "\n".join(problems)


# ---- the same spans through the Collector's ClickHouse table ------------------------------------
def test_the_calls_read_back_from_the_collectors_clickhouse_table_keep_their_reasons(run, chdb_folder, tmp_path):
    """The framework's spans in the exporter's table, read by the ClickHouse store (``cache --why
    --store``): every call's ledger line as the log's, and each injected reason found."""
    name = f"otel_traces_{run.name}"
    table = OtelTable(ChdbConnection(chdb_folder), table=name)
    table.create()
    assert table.insert(row_of(r) for r in exported(run.log).spans) > 0
    rows = ledger(f"chdb:{chdb_folder}?table={name}", TTL)
    keep = ("call", "reason", "reported", "possible", "compared_with", "first_difference", "lost_tokens")
    assert [{k: r[k] for k in keep} for r in rows] == [{k: r[k] for k in keep} for r in ledger(run.log, TTL)]
    problems = reason_problems(rows, expected_calls(run.steps), run.served, TTL)
    assert problems == [], "\n".join(problems)

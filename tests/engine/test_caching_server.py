"""The caching server itself, through the providers' own SDKs: OpenAI reads the longest earlier
prefix in 128-token steps from the minimum, Anthropic reads only at block boundaries near a
breakpoint; nothing under the minimum, past the TTL (a hit refreshes it; the TTL runs on the
server's clock plus what ``advance`` added), after an eviction or for another model; usage says
what was read and written, counted in o200k tokens."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import openai
import pytest
from helpers.caching_server import (
    OPENING,
    CacheRules,
    CachingServer,
    Difference,
    Served,
    Step,
    difference_problems,
    expected_calls,
    long_prompt,
    loss_problems,
    pieces,
    reason_problems,
    reported_problems,
    served_problems,
    text_of,
)

from callctx.components import tokens

MIN, STEP, TTL = 1024, 128, 10.0
RULES = CacheRules(min_tokens=MIN, ttl_seconds=TTL, step_tokens=STEP)
SYSTEM = long_prompt(1500)
count = tokens.counter("o200k_base").count
encode = tokens.encoding("o200k_base").encode_ordinary


class Clock:
    """The server's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock):
    with CachingServer(openai=RULES, anthropic=RULES, clock=clock) as s:
        yield s


@pytest.fixture
def oai(server):
    return openai.OpenAI(api_key="test", base_url=server.base_url, max_retries=0)


@pytest.fixture
def claude(server):
    return anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0)


def chat(client, system: str = SYSTEM, user: str = "Where is my order?", model: str = "gpt-4.1", **kw: Any):
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return client.chat.completions.create(model=model, messages=messages, **kw)


def cached(r) -> int:
    return r.usage.prompt_tokens_details.cached_tokens


def point_at_most(n: int) -> int:
    """The longest cacheable prefix of ``n`` tokens: the minimum, then 128-token steps."""
    return 0 if n < MIN else MIN + (n - MIN) // STEP * STEP


def test_a_repeated_prompt_reads_its_prefix_in_steps_from_the_minimum(server, oai):
    first, again = chat(oai), chat(oai)
    total = count(SYSTEM) + count("Where is my order?")
    assert first.usage.prompt_tokens == again.usage.prompt_tokens == total
    assert cached(first) == 0
    assert cached(again) == point_at_most(total) > MIN
    assert [(s.prompt_tokens, s.cache_read, s.cache_write) for s in server.served] == [
        (total, 0, 0), (total, point_at_most(total), 0)
    ]  # fmt: skip


def test_a_changed_prefix_reads_only_the_shared_part(server, oai):
    lines = SYSTEM.splitlines()
    changed = "\n".join([*lines[:-8], "Today is 2026-12-01.", *lines[-8:]])
    chat(oai)
    r = chat(oai, system=changed)
    shared = 0
    for a, b in zip(encode(SYSTEM), encode(changed), strict=False):
        if a != b:
            break
        shared += 1
    assert MIN < point_at_most(shared) < point_at_most(r.usage.prompt_tokens)
    assert cached(r) == point_at_most(shared)
    assert cached(chat(oai, system=changed)) == point_at_most(r.usage.prompt_tokens)  # and it was cached again


def test_a_longer_request_reads_the_earlier_one_and_tools_come_first(server, oai):
    params = {"type": "object", "properties": {"id": {"type": "string"}}}
    tool = {"type": "function", "function": {"name": "track", "description": "Track a parcel.", "parameters": params}}
    chat(oai)
    longer = oai.chat.completions.create(
        model="gpt-4.1",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Where is my order?"},
                  {"role": "assistant", "content": "Which one?"}, {"role": "user", "content": "The last one."}],
    )  # fmt: skip
    assert cached(longer) == point_at_most(count(SYSTEM) + count("Where is my order?"))
    with_tool = chat(oai, tools=[tool])
    assert cached(with_tool) == 0  # the tools open the prefix: a new tool changes all of it
    assert with_tool.choices[0].message.tool_calls[0].function.name == "track"
    assert [p.part for p in pieces("chat", server.served[-1].body)] == ["tools", "system", "messages"]


def test_under_the_minimum_nothing_is_read(server, oai):
    short = long_prompt(MIN - 100)
    assert count(short) < MIN - 50
    assert [cached(chat(oai, system=short)) for _ in range(3)] == [0, 0, 0]
    assert [s.cache_read for s in server.served] == [0, 0, 0]


def test_past_the_ttl_nothing_is_read_and_a_hit_refreshes_it(server, oai, clock):
    chat(oai)
    clock.now += TTL * 0.8
    assert cached(chat(oai)) > 0
    clock.now += TTL * 0.8  # 1.6 TTL after the first request, 0.8 after the hit that refreshed it
    assert cached(chat(oai)) > 0
    clock.now += TTL + 0.01
    assert cached(chat(oai)) == 0
    assert cached(chat(oai)) > 0  # the expired request cached it again


def admin(server: CachingServer, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST to one of the server's admin endpoints: the status and the JSON answered."""
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_advancing_the_time_expires_entries_in_process_and_over_http(server, oai, clock):
    chat(oai)
    assert server.advance(TTL * 0.8) == server.now() == clock.now + TTL * 0.8
    assert cached(chat(oai)) > 0  # 0.8 TTL later: still there
    assert admin(server, "/_admin/advance", {"seconds": TTL + 0.5}) == (200, {"now": clock.now + TTL * 1.8 + 0.5})
    assert cached(chat(oai)) == 0  # past the TTL, on the server's time alone: the clock itself did not move
    assert [s.at for s in server.served] == [clock.now, clock.now + 8.0, clock.now + 18.5]
    server.evict()
    assert server.evictions[-1].at == clock.now + 18.5  # evictions are on the same time
    for bad in ({}, {"seconds": -1}, {"seconds": "5"}, {"seconds": True}):
        status, answer = admin(server, "/_admin/advance", bad)
        assert status == 400 and "seconds must be a finite number" in answer["error"]["message"], bad
    with pytest.raises(ValueError, match="finite"):
        server.advance(float("inf"))
    assert server.now() == clock.now + 18.5


def test_eviction_reads_nothing_and_only_for_the_model_evicted(server, oai, clock):
    chat(oai), chat(oai, model="gpt-4.1-mini")
    request = urllib.request.Request(server.url + "/_admin/evict", data=json.dumps({"model": "gpt-4.1"}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
    with urllib.request.urlopen(request) as answer:
        assert json.loads(answer.read())["evicted"] > 0
    assert cached(chat(oai)) == 0
    assert cached(chat(oai, model="gpt-4.1-mini")) > 0
    assert server.evict() > 0  # every model, in-process
    assert cached(chat(oai, model="gpt-4.1-mini")) == 0
    assert [(e.model, e.at) for e in server.evictions] == [("gpt-4.1", clock.now), (None, clock.now)]


def test_each_model_has_a_cache_of_its_own(oai):
    chat(oai, model="gpt-4.1")
    assert cached(chat(oai, model="gpt-4.1-mini")) == 0
    assert cached(chat(oai, model="gpt-4.1")) > 0


def test_responses_report_cached_input_and_answer_with_the_script(server, oai):
    tool = {"type": "function", "name": "track", "description": "Track a parcel.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}  # fmt: skip
    first = oai.responses.create(model="gpt-4.1", instructions=SYSTEM, input="Where is my order?", tools=[tool])
    call = first.output[0]
    assert call.type == "function_call" and call.name == "track"
    items = [{"role": "user", "content": "Where is my order?"},
             {"type": "function_call", "call_id": call.call_id, "name": "track", "arguments": call.arguments},
             {"type": "function_call_output", "call_id": call.call_id, "output": "It left the depot."}]  # fmt: skip
    second = oai.responses.create(model="gpt-4.1", instructions=SYSTEM, input=items, tools=[tool])
    assert "It left the depot." in second.output_text
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert second.usage.input_tokens_details.cached_tokens == point_at_most(first.usage.input_tokens)
    assert second.usage.input_tokens == sum(count(p.text) for p in pieces("responses", server.served[-1].body))


def anthropic_body(blocks: list[tuple[str, bool]], user: str = "Where is my order?") -> dict[str, Any]:
    system = [{"type": "text", "text": t, **({"cache_control": {"type": "ephemeral"}} if mark else {})}
              for t, mark in blocks]  # fmt: skip
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": system,
            "messages": [{"role": "user", "content": user}]}  # fmt: skip


def usage(m) -> tuple[int, int, int]:
    u = m.usage
    return u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens


def test_anthropic_reads_only_at_a_breakpoint_and_reports_what_it_wrote(claude):
    head = count(SYSTEM)
    tail = count("Where is my order?")
    marked = anthropic_body([(SYSTEM, True)])
    assert usage(claude.messages.create(**marked)) == (tail, 0, head)
    assert usage(claude.messages.create(**marked)) == (tail, head, 0)
    assert usage(claude.messages.create(**anthropic_body([(SYSTEM, False)]))) == (head + tail, 0, 0)  # no marker
    # the entry is found at a block boundary behind a later breakpoint, which writes past it
    later = anthropic_body([(SYSTEM, False), ("Reply in English.", True)])
    assert usage(claude.messages.create(**later)) == (tail, head, count("Reply in English."))
    # the same text split into other blocks is another prefix
    split = SYSTEM.index("\n1. ")
    resplit = anthropic_body([(SYSTEM[:split], False), (SYSTEM[split:], True)])
    assert claude.messages.create(**resplit).usage.cache_read_input_tokens == 0


def test_anthropic_writes_no_entry_under_the_minimum_and_looks_back_20_blocks(claude):
    short = long_prompt(MIN - 200)
    for _ in range(2):
        assert usage(claude.messages.create(**anthropic_body([(short, True)])))[1:] == (0, 0)
    claude.messages.create(**anthropic_body([(SYSTEM, True)]))
    notes = [(f"Note {i}.", False) for i in range(25)]
    # 20 positions back from a breakpoint, counting itself: block 19 finds the entry at block 0...
    near = anthropic_body([(SYSTEM, False), *notes[:18], ("Last note.", True)])
    assert claude.messages.create(**near).usage.cache_read_input_tokens == count(SYSTEM)
    # ...block 20 does not
    far = anthropic_body([(SYSTEM, False), *notes[:19], ("Last note.", True)])
    assert claude.messages.create(**far).usage.cache_read_input_tokens == 0


def test_anthropic_answers_with_the_script_and_refuses_a_fifth_breakpoint(claude):
    tool = {"name": "track", "description": "Track a parcel.",
            "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}  # fmt: skip
    first = claude.messages.create(**anthropic_body([(SYSTEM, True)]), tools=[tool])
    use = first.content[0]
    assert (use.type, use.name, first.stop_reason) == ("tool_use", "track", "tool_use")
    body = anthropic_body([(SYSTEM, True)])
    body["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": use.id, "name": "track", "input": use.input}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "It left the depot.",
                                      "cache_control": {"type": "ephemeral"}}]},
    ]  # fmt: skip
    second = claude.messages.create(**body, tools=[tool])
    assert second.stop_reason == "end_turn" and "It left the depot." in second.content[0].text
    assert second.usage.cache_read_input_tokens > 0 and second.usage.cache_creation_input_tokens > 0
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        claude.messages.create(**anthropic_body([(f"Block {i}.", True) for i in range(5)]))


def test_automatic_caching_marks_the_last_block(claude):
    body = {**anthropic_body([(SYSTEM, False)]), "cache_control": {"type": "ephemeral"}}
    total = count(SYSTEM) + count("Where is my order?")
    assert usage(claude.messages.create(**body)) == (0, 0, total)
    assert usage(claude.messages.create(**body)) == (0, total, 0)


def test_prompt_tokens_are_the_o200k_counts_of_the_pieces(server, oai):
    r = chat(oai, user="Where is the parcel I ordered on Monday?")
    body = server.served[-1].body
    assert r.usage.prompt_tokens == sum(count(p.text) for p in pieces("chat", body))
    assert text_of("chat", body, "system", 0) == SYSTEM
    assert text_of("chat", body, "messages", 0) == "Where is the parcel I ordered on Monday?"


def test_the_long_prompt_is_stable_and_opens_with_a_prompt_of_its_own():
    assert long_prompt(2500) == long_prompt(2500) and count(long_prompt(2500)) >= 2500
    assert long_prompt(2500).startswith(OPENING + "\n") and count(OPENING) < 30


def test_the_expected_calls_follow_the_runs():
    steps = [
        Step("nothing", "first", None),
        Step("timestamp", "prefix_changed", Difference("system", 0, 0), "none"),
        Step("short prompt", "below_minimum", short=True),
        Step("nothing", "hit"),
        Step("eviction", "evicted", None, "none"),
    ]
    calls = expected_calls(steps)
    assert [(e.call, e.reason, e.compared_with) for e in calls] == [
        (1, "first", None), (2, "hit", 1),
        (3, "prefix_changed", 2), (4, "hit", 3),
        (5, "below_minimum", 4), (6, "below_minimum", 5),
        (7, "hit", 4), (8, "hit", 7),
        (9, "evicted", 8), (10, "hit", 9),
    ]  # fmt: skip
    assert [e.busted for e in calls] == [False, False, True, False, False, False, False, False, True, False]
    assert calls[2].difference == Difference("system", 0, 0) and calls[0].difference is None


# ---- the checks a ledger is held to -------------------------------------------------------------
STEPS = [
    Step("nothing", "first", None),
    Step("a tool added", "tools_changed", Difference("tools", 1), "none"),
    Step("a pause past the TTL", "ttl_expired", None, "none"),
]
GAPS = [0.0, 0.1, 0.2, 0.3, TTL + 2, TTL + 2.1]  # arrival times: the pause before call 5


def served_run(reads: list[int], at: list[float] = GAPS) -> list[Served]:
    return [Served(i, "/v1/chat/completions", "chat", "gpt-4.1", t, {}, 3000, r, 0, {})
            for i, (r, t) in enumerate(zip(reads, at, strict=True))]  # fmt: skip


def right_rows(served: list[Served]) -> list[dict[str, Any]]:
    """What a right ledger says of the run above."""
    rows = []
    for e, s in zip(expected_calls(STEPS), served, strict=True):
        before = served[e.compared_with - 1] if e.compared_with else None
        d = e.difference if isinstance(e.difference, Difference) else None
        rows.append({
            "call": e.call, "reason": e.reason, "compared_with": e.compared_with,
            "reported": {"cache_read": s.cache_read, "cache_write": None, "input": s.prompt_tokens},
            "possible": {"cache_read": s.cache_read, "tokens": s.prompt_tokens},
            "first_difference": d and {"part": d.part, "index": d.index, "offset": 0, "before": "", "after": "{"},
            "gap_seconds": s.at - before.at if before else None,
            "lost_tokens": 2944 if e.busted else 0, "lost_usd": 0.001 if e.busted else 0.0,
        })  # fmt: skip
    return rows


def all_problems(rows: list[dict[str, Any]], served: list[Served]) -> list[str]:
    expected = expected_calls(STEPS)
    return [*reason_problems(rows, expected, served, TTL), *difference_problems(rows, expected),
            *reported_problems(rows, served), *loss_problems(rows, expected, TTL)]  # fmt: skip


def test_the_checks_pass_a_right_ledger_and_name_each_wrong_answer():
    served = served_run([0, 2944, 0, 2944, 0, 2944])
    assert served_problems(STEPS, served, lambda s: RULES) == []
    assert all_problems(right_rows(served), served) == []
    wrong: list[tuple[str, Any, str]] = [
        ("reason", "prefix_changed", "call 3: reason 'prefix_changed'"),
        ("compared_with", 1, "compared with 1"),
        ("first_difference", {"part": "tools", "index": 0}, "expected {'part': 'tools', 'index': 1}"),
        ("reported", {"cache_read": 128, "cache_write": 0, "input": 3000}, "call 3: reported"),
        ("lost_tokens", 0, "call 3 (tools_changed): lost_tokens 0, must be > 0"),
        ("lost_usd", None, "lost_usd None"),
    ]
    for key, value, message in wrong:
        rows = right_rows(served)
        rows[2] = {**rows[2], key: value}
        assert any(message in p for p in all_problems(rows, served)), (key, all_problems(rows, served))
    rows = right_rows(served)
    rows[1]["lost_tokens"] = 12  # a loss on a hit
    rows[4]["gap_seconds"] = 1.0  # an expired call within the TTL
    rows[0]["first_difference"] = {"part": "system", "index": 0}  # a difference for the first call
    problems = all_problems(rows, served)
    assert any("call 2 (hit): lost_tokens 12, must be 0" in p for p in problems)
    assert any("call 5 (ttl_expired): gap_seconds 1.0" in p for p in problems)
    assert any("call 1: first difference" in p and "expected none" in p for p in problems)
    assert (
        all_problems(right_rows(served)[:-1], served)
        == ["the ledger lists calls [1, 2, 3, 4, 5], the run made 1 to 6"] * 4
    )


def test_the_server_checks_name_a_buster_that_did_not_bust_and_a_hit_that_missed():
    problems = served_problems(STEPS, served_run([0, 0, 2944, 2944, 0, 2944]), lambda s: RULES)
    assert problems == ["call 2 (nothing, gpt-4.1): read 0 of 3000, must be a hit",
                        "call 3 (a tool added, gpt-4.1): read 2944, must read nothing"]  # fmt: skip
    late = served_problems(STEPS, served_run([0, 2944, 0, 2944, 0, 2944], [0, 0.1, 0.2, TTL + 1, TTL + 1.1, TTL + 1.2]),
                           lambda s: RULES)  # fmt: skip
    assert late == ["call 4 (a tool added, gpt-4.1): 10.80 s after call 3, TTL 10.0 s",
                    "call 5 (a pause past the TTL, gpt-4.1): 0.10 s after call 4, TTL 10.0 s"]  # fmt: skip

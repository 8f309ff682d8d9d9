"""The cache ledger's reasons, call by call, over requests whose busts are known: each reason
of the closed set is reached by the change that causes it, with the first difference at the
place changed and the tokens lost counted from what the compared call had cached."""

from __future__ import annotations

import zlib

import pytest

from callctx.components import cache
from callctx.components.cache_ledger import (
    REASONS,
    Item,
    Ledger,
    Parts,
    first_difference,
    request_of_parts,
    tool_change,
)

RULES = {
    # block-keyed at breakpoints, as Anthropic
    "anthropic": {"mode": "breakpoints", "ttl_seconds": 300, "min_tokens": 100, "price_per_mtok": 3.0,
                  "read_multiplier": 0.1, "write_multiplier": 1.25},
    # prefix-keyed, automatic, as OpenAI
    "openai": {"mode": "prefix", "ttl_seconds": 300, "min_tokens": 128, "step_tokens": 16, "price_per_mtok": 2.0,
               "read_multiplier": 0.1, "write_multiplier": 1.0},
}  # fmt: skip


def tokenize(text: str) -> list[int]:
    return [zlib.crc32(w.encode()) for w in text.split()]


def words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


SYSTEM = words("rule", 300)
TOOLS = ['{"name": "search", "parameters": {}}', '{"name": "fetch", "parameters": {}}']


class Run:
    """Feeds a ledger calls built from parts, as a store would."""

    def __init__(self, rules_row: str = "anthropic", **kw) -> None:
        self.ledger = Ledger(RULES, **kw)
        self.rules_row = rules_row
        self.n = 0

    def call(
        self, *, at: float, messages: list[str], system: str = SYSTEM, tools: list[str] = TOOLS,
        model: str = "m-1", read: int | None = None, write: int | None = None, marked: bool = True,
        function: str = "agent", parts: Parts | None = None,
    ):  # fmt: skip
        self.n += 1
        if parts is None:
            names = [t.split('"')[3] for t in tools]
            parts = Parts(tools=tools, tool_names=names, system=[system], messages=messages)
        request = request_of_parts(parts, tokenize, marked=marked) if not parts.empty else None
        item = Item(
            call=self.n, span_id=f"{self.n:016x}", start_ns=int(at * 1e9), model=model, function=function,
            service="svc", tree="t", rules=self.rules_row, usage_read=read, usage_write=write, usage_input=50,
            request=request, parts=parts, marked=marked,
        )  # fmt: skip
        return self.ledger.add(item)


def test_a_stable_prefix_reads_what_it_allowed_and_the_first_call_writes_it():
    run = Run()
    first = run.call(at=0, messages=["user: hello"])
    assert first.reason == "first" and first.compared_with is None and first.possible.cache_write > 0
    second = run.call(at=10, messages=["user: hello", "assistant: hi", "user: more"], read=first.possible.cache_write)
    assert second.reason == "hit" and second.compared_with == 1
    assert second.possible.cache_read == first.possible.cache_write and second.lost_tokens == 0
    assert second.first_difference is None  # it only adds to the end


def test_a_timestamp_in_the_system_prompt_is_a_changed_prefix_found_at_its_character():
    run = Run()
    run.call(at=0, messages=["user: hello"])
    busted = SYSTEM.replace("rule150", "2026-12-02T10:00:00Z")
    e = run.call(at=5, system=busted, messages=["user: hello"], read=0)
    assert e.reason == "prefix_changed" and e.compared_with == 1
    d = e.first_difference
    assert d is not None and (d.part, d.index) == ("system", 0)
    assert d.offset == SYSTEM.index("rule150") and d.after.startswith(busted[max(0, d.offset - 40) : d.offset])
    assert "2026" in d.after and "rule150" in d.before
    assert e.lost_tokens > 0 and e.lost_usd is not None and e.lost_usd > 0
    assert "system text 0" in e.sentence and "call 1" in e.sentence


def test_a_tool_added_names_the_tool():
    run = Run()
    run.call(at=0, messages=["user: hello"])
    e = run.call(at=5, tools=[*TOOLS, '{"name": "write_file", "parameters": {}}'], messages=["user: hello"], read=0)
    assert e.reason == "tools_changed" and e.tools is not None
    assert e.tools.added == ["write_file"] and not e.tools.removed and not e.tools.changed
    assert e.first_difference is not None and (e.first_difference.part, e.first_difference.index) == ("tools", 2)
    assert "write_file" in e.sentence


def test_a_tool_changed_and_one_removed():
    before = Parts(tools=TOOLS, tool_names=["search", "fetch"])
    after = Parts(tools=['{"name": "search", "parameters": {"q": 1}}'], tool_names=["search"])
    change = tool_change(before, after)
    assert change.changed == ["search"] and change.removed == ["fetch"] and not change.added


def test_a_pause_past_the_ttl_expires_the_prefix():
    run = Run()
    run.call(at=0, messages=["user: hello"])
    e = run.call(at=301, messages=["user: hello", "assistant: hi", "user: again"], read=0)
    assert e.reason == "ttl_expired" and e.gap_seconds == 301 and e.compared_with == 1
    assert e.first_difference is None and e.lost_tokens > 0


def test_a_ttl_given_in_seconds_replaces_the_rules():
    run = Run(ttl=2)
    run.call(at=0, messages=["user: hello"])
    assert run.call(at=3, messages=["user: hello"], read=0).reason == "ttl_expired"
    assert run.call(at=4, messages=["user: hello"]).reason == "hit"


def test_a_switch_of_model():
    run = Run()
    run.call(at=0, messages=["user: hello"])
    e = run.call(at=5, messages=["user: hello"], model="m-2", read=0)
    assert e.reason == "model_changed" and "m-1" in e.sentence and "m-2" in e.sentence


def test_a_prefix_under_the_minimum():
    run = Run()
    small = words("w", 40)
    run.call(at=0, system=small, tools=[], messages=["user: hi"])
    e = run.call(at=1, system=small, tools=[], messages=["user: hi"], read=0)
    assert e.reason == "below_minimum" and "100" in e.sentence and e.lost_tokens == 0


def test_no_breakpoint_asked_for():
    run = Run()
    run.call(at=0, messages=["user: hello"], marked=False)
    e = run.call(at=1, messages=["user: hello"], marked=False, read=0)
    assert e.reason == "no_breakpoint" and "cache_control" in e.sentence
    assert e.lost_tokens >= 256  # the system text and the tools it shares with call 1, to the 64-token mark


def test_eviction_is_a_read_short_of_an_unchanged_prefix_and_openai_hears_of_the_cache_key():
    run = Run("openai")
    first = run.call(at=0, messages=["user: hello"])
    e = run.call(at=5, messages=["user: hello"], read=0)
    assert e.possible.cache_read > 0 and first.reason == "first"
    assert e.reason == "evicted" and e.lost_tokens == e.possible.cache_read
    assert "prompt_cache_key" in e.sentence


def test_a_read_within_a_few_tokens_of_the_possible_is_a_hit():
    run = Run("openai")
    run.call(at=0, messages=["user: hello"])
    possible = run.call(at=1, messages=["user: hello"]).possible.cache_read
    assert run.call(at=2, messages=["user: hello"], read=possible - 3).reason == "hit"


def test_no_content_is_unknown_and_says_which_setting_captures_it():
    run = Run()
    e = run.call(at=0, messages=[], parts=Parts())
    assert e.reason == "unknown" and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in e.sentence


def test_the_compared_call_is_the_one_sharing_the_longest_prefix_not_the_latest():
    run = Run()
    run.call(at=0, messages=["user: hello"], function="planner")
    run.call(at=1, system=words("other", 300), messages=["user: x"], function="writer")
    e = run.call(at=2, messages=["user: hello", "assistant: plan", "user: go"], function="planner")
    assert e.compared_with == 1 and e.reason == "hit"


def test_every_reason_is_reached_above():
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    for reason in REASONS:
        assert f'"{reason}"' in source.split("def test_every_reason_is_reached_above")[0], reason


@pytest.mark.parametrize(
    ("before", "after", "where"),
    [
        (Parts(messages=["user: a", "assistant: b"]), Parts(messages=["user: a", "assistant: c"]), ("messages", 1, 11)),
        (Parts(system=["x"]), Parts(system=["x", "y"]), ("system", 1, 0)),
        (Parts(messages=["user: a"]), Parts(messages=["user: a", "user: b"]), None),
        (Parts(messages=["user: a", "user: b"]), Parts(messages=["user: a"]), None),
    ],
)
def test_first_difference(before, after, where):
    d = first_difference(before, after)
    assert (d.part, d.index, d.offset) == where if where else d is None


def test_a_rebuilt_request_marks_a_breakpoint_before_the_turn():
    req = request_of_parts(Parts(system=["a b"], messages=["user: c", "user: d"]), tokenize, marked=True)
    assert [(b.breakpoint, b.turn) for b in req.blocks] == [(False, False), (True, False), (False, True)]
    assert isinstance(req, cache.Request)

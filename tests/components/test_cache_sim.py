"""The cache simulator against hand-computed cases, one per rule of each provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from callctx.components import cache
from callctx.components.cache import Block, Request, Simulator, by_model, load_rules
from callctx.components.cache_rules import breakpoint_model


def blocks(*sizes: int, marks: tuple[int, ...] = (), start: int = 0, turn_from: int | None = None) -> tuple[Block, ...]:
    """Blocks of the given token counts, with distinct token ids from ``start`` on."""
    out, t = [], start
    for i, n in enumerate(sizes):
        out.append(Block(tuple(range(t, t + n)), i in marks, turn_from is not None and i >= turn_from))
        t += n
    return tuple(out)


def req(bl: tuple[Block, ...], t: float = 0.0) -> Request:
    return Request(bl, t)


# ---- Anthropic ------------------------------------------------------------------------------
def test_anthropic_minimum_length():
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    short = blocks(1000, 50, marks=(0,))  # the prefix at the breakpoint is 1,000 < 1,024 tokens
    assert sim.step_one(req(short)).write == 0
    assert sim.step_one(req(short, 1)).read == 0
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    long = blocks(1100, 50, marks=(0,))
    first = sim.step_one(req(long))
    assert (first.read, first.write, first.uncached) == (0, 1100, 50)
    second = sim.step_one(req(long, 1))
    assert (second.read, second.write, second.uncached) == (1100, 0, 50)
    assert Simulator("anthropic", "claude-haiku-4-5").min_tokens == 4096  # per model family


def test_anthropic_lookback_of_20_blocks():
    base = [100] * 12  # an entry at the end of block 11 (1,200 tokens)
    a = blocks(*base, marks=(11,))
    far = blocks(*base, *[100] * 25, marks=(36,))  # 25 blocks after the entry: out of reach
    near = blocks(*base, *[100] * 19, marks=(30,))  # 19 blocks after: within the 20-block lookback
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    sim.step_one(req(a))
    assert sim.step_one(req(far, 1)).read == 0
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    sim.step_one(req(a))
    r = sim.step_one(req(near, 1))
    assert r.read == 1200 and r.write == 1900
    assert r.limit == 1200  # what the first request had already sent


def test_anthropic_ttl_and_refresh():
    a = blocks(2000, 10, marks=(0,))
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    sim.step_one(req(a, 0))
    assert sim.step_one(req(a, 299)).read == 2000  # within 5 minutes; the hit refreshes the entry
    assert sim.step_one(req(a, 598)).read == 2000  # 299 s after the refresh
    assert sim.step_one(req(a, 899)).read == 0  # 301 s after the last use: expired


def test_anthropic_breakpoint_cap_and_costs():
    # six breakpoints: only the last four are kept, the first two write nothing
    six = blocks(*[1100] * 6, 50, marks=(0, 1, 2, 3, 4, 5))
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    first = sim.step_one(req(six))
    only_first = blocks(1100, 77, marks=(1,))
    assert sim.step_one(req(only_first, 1)).read == 0  # block 0's entry was never written
    assert first.write == 6600 and first.uncached == 50
    price = 3.0 / 1e6
    assert first.cost == pytest.approx(price * (50 + 6600 * 1.25))
    again = sim.step_one(req(six, 2))
    assert again.read == 6600 and again.cost == pytest.approx(price * (50 + 6600 * 0.1))


# ---- OpenAI ---------------------------------------------------------------------------------
# The mechanics below run on a fixed table (the provider table changes with the providers).
MECHANICS = {
    "openai": {"mode": "prefix", "min_tokens": 1024, "step_tokens": 128, "ttl_seconds": 600,
               "write_multiplier": 1.0, "read_multiplier": 0.25, "price_per_mtok": 2.0},
    "gemini": {"mode": "prefix", "min_tokens": {"gemini-2.5-pro": 4096, "gemini-2.5-flash": 1024, "default": 2048},
               "step_tokens": 1, "ttl_seconds": 300, "write_multiplier": 1.0, "read_multiplier": 0.25,
               "price_per_mtok": 0.3},
}  # fmt: skip


def test_openai_prefix_from_1024_in_128_steps():
    a = blocks(2000)
    b = blocks(1500, 500, start=0)  # the first 1,500 tokens equal a's
    b = (Block(a[0].tokens[:1500]), Block(tuple(range(10**6, 10**6 + 500))))
    sim = Simulator("openai", "gpt-4.1", MECHANICS)
    sim.step_one(req(a))
    r = sim.step_one(req(b, 1))
    assert r.read == 1408  # 1,024 + 3 x 128 <= 1,500 < 1,536
    assert r.write == 0 and r.uncached == 592
    assert r.cost == pytest.approx(2.0 / 1e6 * (592 + 1408 * 0.25))
    c = (Block(a[0].tokens[:1000]), Block(tuple(range(10**7, 10**7 + 1000))))
    assert sim.step_one(req(c, 2)).read == 0  # shares fewer than 1,024 tokens


def test_openai_ttl():
    a = blocks(3000)
    sim = Simulator("openai", "gpt-4.1", MECHANICS)
    sim.step_one(req(a, 0))
    assert sim.step_one(req(a, 601)).read == 0
    assert sim.step_one(req(a, 700)).read == 2944  # written again at 601: 1,024 + 15 x 128


def test_openai_explicit_breakpoints():
    a = blocks(1500, 500, marks=(0,))
    sim = Simulator("openai-explicit", "gpt-4.1")
    sim.step_one(req(a))
    r = sim.step_one(req(a, 1))
    assert r.read == 1500 and r.write == 0  # only at the mark, no write premium


def test_openai_breakpoints_are_found_only_where_the_request_marks():
    """GPT-5.6 and later: no look-back over unmarked block boundaries (Anthropic looks back 20)."""
    first = blocks(1100, 300, 300, marks=(0, 1))  # entries at 1,100 and 1,400 tokens
    unmarked = blocks(1100, 300, 300, 300, marks=(3,))  # the same first blocks, marked only further on
    remarked = blocks(1100, 300, 300, 300, marks=(1, 3))
    for later, read in ((unmarked, 0), (remarked, 1400)):
        sim = Simulator("openai-explicit", "gpt-5.6-sol")
        sim.step_one(req(first))
        r = sim.step_one(req(later, 1))
        assert r.read == read
        assert r.write == 2000 - read  # written up to its last mark, at 1.25x
        assert r.cost == pytest.approx(4.0 / 1e6 * (read * 0.1 + (2000 - read) * 1.25))
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    sim.step_one(req(first))
    assert sim.step_one(req(unmarked, 1)).read == 1400  # Anthropic's look-back finds it unmarked


def test_openai_looks_up_at_message_ends_and_marks_at_most_four():
    ends = (Block(tuple(range(1200)), True, message_end=True), Block(tuple(range(5000, 5300)), message_end=True))
    sim = Simulator("openai-explicit", "gpt-5.6-sol")
    sim.step_one(req((ends[0], Block(tuple(range(9000, 9400)), True, message_end=True))))  # writes at 1,200 and 1,600
    r = sim.step_one(req((ends[0], Block(tuple(range(9000, 9400)), False, message_end=True), ends[1]), 1))
    assert r.read == 1600  # the end of an earlier message is looked up, marked or not
    six = blocks(*[1100] * 6, 50, marks=(0, 1, 2, 3, 4, 5))
    sim = Simulator("openai-explicit", "gpt-5.6-sol")
    assert sim.step_one(req(six)).write == 6600
    assert sim.step_one(req(blocks(1100, 77, marks=(0,)), 1)).read == 0  # the first two marks wrote nothing


def test_openai_without_marks_writes_its_implicit_breakpoint():
    a = (Block(tuple(range(1500)), message_end=True), Block(tuple(range(7000, 7100)), turn=True, message_end=True))
    sim = Simulator("openai-explicit", "gpt-5.6-sol")
    assert sim.step_one(req(a)).write == 1600  # the latest message, the turn with it
    b = (a[0], Block(tuple(range(8000, 8100)), turn=True, message_end=True))
    assert sim.step_one(req(b, 1)).read == 0  # nothing at the end of the first message: that turn was unique


def test_the_openai_row_hands_breakpoint_models_to_the_explicit_row():
    new, old = Simulator("openai", "gpt-5.6-sol"), Simulator("openai", "gpt-5.5")
    assert (new.row, new.mode, new.marking, new.lookup, new.min_tokens) == (
        "openai-explicit", "breakpoints", "openai", "breakpoints", 1024)  # fmt: skip
    assert (old.row, old.mode, old.min_tokens) == ("openai", "prefix", 2048)
    assert (old.routing_tokens, old.routing_rate) == (256, 15)  # routed by the first tokens and the key
    assert Simulator("anthropic", "claude-sonnet-4-5").lookup == "lookback"


@pytest.mark.parametrize(
    ("model", "marks"),
    [("gpt-5.6", True), ("gpt-5.6-sol", True), ("gpt-5.6-luna-2026-07-01", True), ("gpt-6-luna", True),
     ("gpt-6.2-sol", True), ("gpt-10", True), ("gpt-5.5", False), ("gpt-5.5-pro", False), ("gpt-5", False),
     ("gpt-5-mini", False), ("gpt-4.1", False), ("gpt-4o", False), ("o3", False), ("chatgpt-4o-latest", False),
     ("my-azure-deployment", False), ("", False)],
)  # fmt: skip
def test_which_models_cache_at_breakpoints(model, marks):
    assert breakpoint_model(model) is marks


def test_openai_routing_by_prefix_and_key():
    """Before GPT-5.6 the cache is per machine: the first 256 tokens and prompt_cache_key pick it,
    and past 15 requests a minute for one pair, requests spread over more machines."""
    shared = tuple(range(300))  # the agent's first tokens, the same in every session

    def session(s: int) -> tuple[Block, ...]:
        return (Block(shared), Block(tuple(range(10_000 * (s + 1), 10_000 * (s + 1) + 2000))))

    def share(keyed: bool, sessions: int) -> float:
        sim = Simulator("openai", "gpt-4.1")
        for i in range(40):  # every session calls every 10 s: 6 a minute each
            for s in range(sessions):
                sim.step_one(Request(session(s), i * 10.0 + s, route=f"key-{s}" if keyed else ""))
        return sim.report.hit_share

    assert share(False, 1) == share(True, 1) > 0.9  # one session: one machine either way
    assert share(True, 10) == share(True, 1)  # one key per session: each session keeps its machine
    assert share(False, 10) < share(True, 10) - 0.05  # 60 a minute on one prefix: the rest overflow


# ---- Gemini ---------------------------------------------------------------------------------
def test_gemini_implicit_minimums_by_model():
    a = blocks(3000, 10)
    b = (a[0], Block(tuple(range(10**6, 10**6 + 10))))
    flash = Simulator("gemini", "gemini-2.5-flash", MECHANICS)
    flash.step_one(req(a))
    assert flash.step_one(req(b, 1)).read == 3000
    pro = Simulator("gemini", "gemini-2.5-pro", MECHANICS)
    pro.step_one(req(a))
    assert pro.step_one(req(b, 1)).read == 0  # 3,000 < the 4,096 minimum of 2.5 Pro


# ---- the limit and the rules table -----------------------------------------------------------
def test_limit_counts_only_what_came_before_the_turn():
    a = blocks(800, 300, marks=(0,), turn_from=1)
    b = (a[0], Block(a[1].tokens, False, True))  # the same turn again
    sim = Simulator("openai", "gpt-4.1", MECHANICS)
    sim.step_one(req(a))
    r = sim.step_one(req(b, 1))
    assert r.limit == 800  # the turn never counts, even when it repeats
    assert r.read == 1024  # a prefix cache reads on into the repeated turn...
    assert sim.report.limit_share == 1.0  # ...but the share of the limit counts up to the limit only


def test_limit_is_exact_to_the_token_across_block_boundaries():
    a = blocks(100, 100, 100)
    merged = (Block(a[0].tokens + a[1].tokens[:37]), Block(tuple(range(5000, 5100))))
    sim = Simulator("openai", "gpt-4.1")
    sim.step_one(req(a))
    assert sim.step_one(req(merged, 1)).limit == 137


def test_rules_table_is_data():
    rules = load_rules()
    assert {"anthropic", "openai", "gemini"} <= set(rules)
    assert by_model(rules["anthropic"]["min_tokens"], "claude-3-5-haiku-latest") == 2048
    assert by_model(rules["openai"]["read_multiplier"], "gpt-5-mini") == 0.1
    mine = {**rules, "anthropic": {**rules["anthropic"], "read_multiplier": 0.5}}
    sim = Simulator("anthropic", "claude-sonnet-4-5", rules=mine)
    assert sim.read_mult == 0.5
    with pytest.raises(ValueError, match="no cache rules"):
        Simulator("mistral")


# ---- the guard and the command line ------------------------------------------------------------
def test_guard_passes_the_default_registry_and_flags_a_timestamp():
    from callctx.components import ContextComponent, default_registry
    from callctx.components.guard import check

    report = check(default_registry(plugins=False))
    assert report.ok, report.findings
    assert any("current_date moves as expected" in n for n in report.notes)

    unstable = default_registry(plugins=False)
    unstable.register(ContextComponent("timestamp", "L0", 2, lambda ctx: f"Now: {ctx.clock():%H:%M:%S}"))
    report = check(unstable)
    assert not report.ok
    assert {(f.component, f.scenario) for f in report.findings} == {
        ("timestamp", "a few seconds later"),
        ("timestamp", "clock past midnight"),
    }
    assert all(f.invalidated > 100 for f in report.findings)

    moved = default_registry(plugins=False)
    date = moved.unregister("current_date")
    moved.register(ContextComponent("current_date", "L0", 11, date.build))
    report = check(moved)
    assert report.ok  # still expected to move at midnight...
    assert any("current_date moves as expected" in n and "cached tokens" in n for n in report.notes)

    sneaky = default_registry(plugins=False)
    sneaky.register(ContextComponent("turn_counter", "L1", 30, lambda ctx: f"<input_size>{len(ctx.turn.user_input)}"
                                                                          "</input_size>"))  # fmt: skip
    report = check(sneaky)
    assert [(f.component, f.scenario) for f in report.findings] == [("turn_counter", "new turn input")]


def test_cache_and_guard_commands(runtime, tmp_path):
    import io

    from callctx.cli.main import main
    from callctx.cli.research_agent import run

    run(runtime)
    runtime.close()
    out, err = io.StringIO(), io.StringIO()
    chart = tmp_path / "cache.html"
    code = main(["cache", str(runtime.log_path), "--provider", "openai", "--model", "gpt-4.1",
                 "--chart", str(chart)], out, err)  # fmt: skip
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "simulated over 11 calls" in text and "of the" in text and "with no caching" in text
    page = chart.read_text()
    assert page.startswith("<!doctype html>") and page.count("<rect") == 3 * 11 and "<svg" in page
    assert main(["cache", str(runtime.log_path), "--provider", "mistral"], io.StringIO(), err) == 2
    out = io.StringIO()
    assert main(["guard"], out, io.StringIO()) == 0 and "stable" in out.getvalue()


def test_the_rules_table_cites_its_sources_and_names_every_model():
    rules = load_rules()
    text = (Path(cache.__file__).parent / "cache_rules.yaml").read_text()
    assert text.count("read 2026-11-30") > 50  # every row says where it came from and when it was read
    for provider in ("anthropic", "openai", "gemini"):
        assert rules[provider]["sources"], provider
    a = rules["anthropic"]
    assert by_model(a["min_tokens"], "claude-opus-4-6") == 4096
    assert by_model(a["price_per_mtok"], "claude-opus-4-6") == 5.0  # not the $15 of Opus 4 / 4.1
    assert by_model(a["price_per_mtok"], "claude-opus-4-1-20250805") == 15.0
    o = rules["openai"]
    prices = {m: by_model(o["price_per_mtok"], m) for m in ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini")}
    assert len(set(prices.values())) == 4, prices  # prefix matching never lends a model another's price


def test_an_unknown_model_gets_the_strictest_minimum_and_a_warning(caplog):
    known = Simulator("anthropic", "claude-sonnet-4-5")
    unknown = Simulator("anthropic", "claude-nova-9")
    assert not known.warnings and known.min_tokens == 1024
    strictest = max(load_rules()["anthropic"]["min_tokens"].values())
    assert unknown.min_tokens == strictest and "claude-nova-9" in unknown.warnings[0]
    assert "claude-nova-9" in caplog.text

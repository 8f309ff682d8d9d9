"""The provider table: each row resolves to a client, a wire format and the cache rules' rows
it names; every list of providers (the wire names, the prices, the CLI options, the debugger
page) is the table's; the words recognise the span provider and model names they did."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from callctx.cli import cache as cache_cli
from callctx.cli import read as read_cli
from callctx.components import providers, wire
from callctx.components.cache import by_model, load_rules
from callctx.components.context import Context, Segment
from callctx.models import Model, client_class, resolve
from callctx.ui import prices

STATIC = Path(prices.__file__).parent / "static"
ONLINE = [p for p in providers.TABLE if not p.offline]


def _context() -> Context:
    seg = Segment("identity", "L0", "system", "You are a test.", tokens=5)
    return Context(tools=[], segments=[seg], problems=[], encoding="o200k_base")


@pytest.mark.parametrize("row", providers.TABLE, ids=lambda p: p.name)
def test_every_name_of_a_row_resolves_to_its_client(row):
    cls = client_class(row)
    for name in row.names:
        spec = f"{name}:some-model"
        model = resolve(spec) if row.offline else resolve(spec, client=object())
        assert type(model) is cls and isinstance(model, Model)
        assert model.params.model == "some-model"
        assert model.wire in row.wires
        assert model.wire == row.wires[0]  # the client speaks the row's default wire
    if row.offline:
        assert resolve(row.name).params.model == "scripted"  # an offline spec needs no model name
    else:
        with pytest.raises(ValueError, match="needs a model name"):
            resolve(row.name)


@pytest.mark.parametrize("row", ONLINE, ids=lambda p: p.name)
def test_every_name_of_a_row_resolves_to_its_wire_and_a_body(row):
    context = _context()
    for name in row.names:
        assert wire.resolve(name) == row.wires[0]
        assert wire.build(name, context)  # a builder for it
    for w in row.wires:
        assert wire.resolve(w) == w


def test_every_wire_has_a_client_and_a_builder():
    spoken = {p.wires[0] for p in ONLINE}
    assert set(wire.WIRES) == spoken
    context = _context()
    for w in wire.WIRES:
        assert wire.build(w, context)


def test_every_row_names_rows_of_the_cache_rules_and_every_rules_row_is_named():
    rules = load_rules()
    for row in ONLINE:
        assert row.cache_rows and row.prices is not None, row.name
        assert set(row.cache_rows) <= set(rules) and row.prices in rules
        assert "price_per_mtok" in rules[row.prices]
    assert set(providers.CACHE_ROWS) == set(rules)


def test_names_are_unique_and_the_lists_are_the_ones_callctx_had():
    names = [n for p in providers.TABLE for n in p.names]
    assert len(names) == len(set(names)) == len(providers.NAMES)
    assert wire.WIRES == ("anthropic", "openai-chat", "openai-responses", "gemini")
    assert wire.ALIASES == {"openai": "openai-chat", "google": "gemini", "claude": "anthropic"}
    assert prices.PROVIDERS == ("anthropic", "openai", "gemini") and prices.DEFAULT == "anthropic"
    assert set(providers.NAMES) >= {"scripted", "openai", "openai-responses", "anthropic", "gemini", "google"}
    with pytest.raises(ValueError, match="unknown provider 'mistral'"):
        resolve("mistral:large")
    with pytest.raises(KeyError):
        providers.named("mistral")


def _old_provider_row(provider: str | None, model: str | None = None) -> str | None:
    """``cache_row`` as it was written before the table: what the table must keep doing."""
    for text in (provider, model):
        t = (text or "").lower()
        for name, words in (("anthropic", ("anthropic", "claude")), ("openai", ("openai", "gpt-")),
                            ("gemini", ("gemini", "google", "vertex"))):  # fmt: skip
            if any(w in t for w in words):
                return name
    return None


SPANS = [
    ("anthropic", "claude-sonnet-4-5", "anthropic"),
    ("openai", "gpt-4o", "openai"),
    ("gcp.gemini", "gemini-2.5-flash", "gemini"),
    ("gcp.vertex_ai", "gemini-2.5-pro", "gemini"),
    ("gcp.gen_ai", None, None),  # no word of the table in it (guidance.py knows it as google)
    ("google", None, "gemini"),
    ("azure.ai.openai", "gpt-4.1", "openai"),
    ("aws.bedrock", "anthropic.claude-3-5-sonnet", "anthropic"),
    ("scripted", "scripted-research", None),
    ("scripted", "claude-opus-4-6", "anthropic"),
    ("litellm", "gpt-5-mini", "openai"),
    (None, "gemini-3.8-flash", "gemini"),
    ("OpenAI", None, "openai"),
    ("openrouter", "Claude-3-Haiku", "anthropic"),
    ("mistral_ai", "mistral-large", None),
    (None, None, None),
    ("", "", None),
]


@pytest.mark.parametrize(("provider", "model", "row"), SPANS)
def test_provider_row_recognises_the_span_names_it_did(provider, model, row):
    assert providers.cache_row(provider, model) == row == _old_provider_row(provider, model)


def test_each_clients_span_provider_name_finds_its_own_rows():
    for row in ONLINE:
        span_name = client_class(row).provider  # the gen_ai.provider.name its chat spans carry
        found = providers.recognise(span_name)
        assert found is not None, row.name
        assert found.prices == row.prices and found.cache_rows == row.cache_rows


def test_prices_take_cached_tokens_out_of_the_input_where_the_provider_counts_them_in():
    p = prices.Prices()
    usage = {"input": 1000, "output": 0, "cache_read": 800, "cache_write": 0}
    # anthropic reports cached tokens apart: all 1000 are fresh; openai and gemini count them in
    rows = load_rules()
    for name, model, fresh in (("anthropic", "claude-opus-4-6", 1000), ("openai", "gpt-4o", 200),
                               ("gcp.gemini", "gemini-2.5-pro", 200)):  # fmt: skip
        r = rows[providers.recognise(name).prices]
        price = by_model(r["price_per_mtok"], model) / 1e6
        want = price * (fresh + 800 * by_model(r["read_multiplier"], model))
        assert p.cost(usage, name, model) == pytest.approx(want)
    assert p.cost(usage, "scripted", "scripted") is None


def test_the_cli_options_are_the_tables():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    read_cli.register(sub)
    cache_cli.register(sub)
    context = sub.choices["context"]
    option = next(a for a in context._actions if "--provider" in a.option_strings)
    assert list(option.choices) == [*providers.WIRES, *providers.ALIASES]
    cache = sub.choices["cache"]
    option = next(a for a in cache._actions if "--provider" in a.option_strings)
    assert option.default == providers.CACHE_ROWS[0]
    assert all(r in option.help for r in providers.CACHE_ROWS)


def test_the_pages_scripts_name_no_provider():
    """The page lists providers and wires from /ui/api/facets: none is written in its files."""
    words = {w for p in providers.TABLE if not p.offline for w in (*p.names, *p.wires, *p.words, *p.cache_rows)}
    files = sorted([*STATIC.glob("*.js"), *STATIC.glob("*.html")])
    assert len(files) >= 5
    for f in files:
        text = f.read_text(encoding="utf-8").lower()
        found = sorted(w for w in words if w.lower() in text)
        assert not found, f"{f.name} names {found}"

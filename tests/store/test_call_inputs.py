"""What tells calls of one function apart, as every store answers it: each model call names the
agentic call it ran in and the first words of that call's input (the local store from its log,
in any order the records arrive; the ClickHouse store from its table, alike), a listing keeps
the calls made in given agentic calls, and what the read API says of an excerpt is shaped like
every other text it answers. The excerpt itself: first words, one line, cut between words."""

from __future__ import annotations

import json

import pytest
from helpers.otel_rows import exported
from helpers.stores import all_calls, log_of
from helpers.trip import CITIES, SESSION, trip_log

from callctx import agentic, setup
from callctx.export.shaping import Shaper
from callctx.models import ScriptedModel
from callctx.projection.batch import records
from callctx.projection.events import LogHeader, SpanStarted, encode
from callctx.projection.log_reader import read_log
from callctx.serve.read_api import answer
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.excerpts import EXCERPT_CHARS, excerpt
from callctx.store.local import LocalStore
from callctx.store.model import Filter
from callctx.store.otel_table import OtelTable


@pytest.fixture(scope="module")
def trip(tmp_path_factory):
    return trip_log(tmp_path_factory.mktemp("trip"))


def test_each_call_names_its_agentic_call_and_the_first_words_of_its_input(trip):
    with LocalStore(trip) as store:
        calls = all_calls(store)
        research = [c for c in calls if c.function == "research_city"]
        assert len(research) == 6
        by_agent: dict[str, set[str | None]] = {}
        for c in research:
            by_agent.setdefault(c.agent_span or "", set()).add(c.excerpt)
        assert sorted(e for said in by_agent.values() for e in said) == sorted(f"city: {c}, days: 4" for c in CITIES)
        assert all(len(said) == 1 for said in by_agent.values()) and len(by_agent) == 3  # one city per call
        for c in research:  # the agentic call is the span the call ran in, on its path
            assert c.agent_span == store.ancestors(c.span_id)[-2]
            assert store.span_io(c.agent_span).function == "research_city"
        top = [c for c in calls if c.function == "plan_trip"]
        assert {c.excerpt for c in top} == {"cities: [Paris, Rome, Berlin]"}
        # the tree lists the same words beside each agentic call
        root = store.spans(SESSION).items[0]
        kids = store.spans(SESSION, root.span_id).items
        assert sorted(k.excerpt for k in kids if k.function == "research_city") == sorted(
            f"city: {c}, days: 4" for c in CITIES
        )
        assert all(k.excerpt is None for k in kids if k.kind == "llm")


def test_a_listing_keeps_the_calls_made_in_given_agentic_calls(trip):
    with LocalStore(trip) as store:
        calls = all_calls(store)
        paris = next(c for c in calls if c.excerpt == "city: Paris, days: 4")
        path = tuple(store.ancestors(paris.span_id))
        kept = store.calls(Filter(tree=SESSION, agent_in=path)).items
        # the calls of Paris's research and of the plan above it, never Rome's or Berlin's
        assert {c.function for c in kept} == {"plan_trip", "research_city"}
        assert {c.excerpt for c in kept} == {"city: Paris, days: 4", "cities: [Paris, Rome, Berlin]"}
        assert [c.index for c in kept] == sorted(c.index for c in kept)
        assert store.calls(Filter(agent_in=())).total == 0


def test_records_in_any_order_give_the_same_calls(trip, tmp_path):
    """Spans arriving children first (as an exporter sends them: a span goes when it ends), a
    block at a time: each call waits for its agentic call and is resolved when it arrives."""
    records = list(read_log(trip))
    spans = [r for r in records if type(r) is not LogHeader]
    late = {r.span_id for r in spans if type(r) is SpanStarted and r.name.startswith("invoke_agent")}
    first = [r for r in spans if getattr(r, "span_id", None) not in late]
    then = [r for r in spans if getattr(r, "span_id", None) in late]
    log = tmp_path / "reordered.jsonl"
    log.write_bytes(b"".join(encode(r) for r in [*records[:1], *first]))
    with LocalStore(log, finished=True) as store, LocalStore(trip) as ordered:
        before = all_calls(store)
        assert before and all(c.agent_span is None and c.excerpt is None for c in before)
        with open(log, "ab") as f:
            f.write(b"".join(encode(r) for r in then))
        got = [(c.index, c.agent_span, c.excerpt, c.function) for c in all_calls(store)]
        assert got == [(c.index, c.agent_span, c.excerpt, c.function) for c in all_calls(ordered)]


def test_the_clickhouse_store_answers_the_same(conn, trip, tmp_path):
    batch = exported(trip)  # the spans as an exporter sends them, into a table and into a log
    table = OtelTable(conn, table="traces_call_inputs")
    table.create()
    assert table.write(batch.spans) == len(batch.spans)
    local_log = log_of(records(batch), tmp_path)
    with LocalStore(local_log, finished=True) as local, ClickHouseStore(conn, table=table.table) as ch:
        assert all_calls(ch) == all_calls(local)  # agent spans and excerpts included
        assert {c.excerpt for c in all_calls(ch)} >= {f"city: {c}, days: 4" for c in CITIES}
        paris = next(c for c in all_calls(ch) if c.excerpt == "city: Paris, days: 4")
        path = tuple(ch.ancestors(paris.span_id))
        f = Filter(tree=SESSION, agent_in=path)
        assert ch.calls(f).items == local.calls(f).items and ch.calls(f).total == 4  # 2 plan_trip, 2 Paris
        root = local.spans(SESSION).items[0]
        assert ch.spans(SESSION, root.span_id) == local.spans(SESSION, root.span_id)
        for kid in local.spans(SESSION, root.span_id).items:
            assert ch.span_io(kid.span_id) == local.span_io(kid.span_id)


def test_the_read_api_shapes_an_excerpt_like_any_text_it_answers(tmp_path):
    secret = "ghp_" + "a1B2c3D4e5" * 3 + "a1B2c3"  # a GitHub token: short enough for an excerpt
    long_secret = "sk-ant-api03-" + "Q" * 93 + "AA"  # longer than an excerpt: never in one, even cut
    rt = setup(tmp_path / "events.jsonl", model=ScriptedModel({"*": ["ok"]}))

    @agentic
    def deploy(note: str, api_key: str) -> str:
        return rt.exec("Deploy.")

    @agentic
    def check(text: str) -> str:
        return rt.exec("Check.")

    deploy("to production", "hunter2hunter2hunter2")
    check(f"use {secret} for it")
    check(f"then {long_secret} again")
    rt.close()
    with LocalStore(tmp_path / "events.jsonl") as store:
        raw = [c.excerpt for c in all_calls(store)]
        # the store holds them as written (a raw reader with the token may see them)
        assert raw == [
            "note: to production, api_key: hunter2hunter2hunter2",
            f"text: use {secret} for it",
            "text: then …",
        ]
        shaped = answer(store, ["api", "calls"], {}, Shaper().redact)
        listed = [c["excerpt"] for c in json.loads(shaped.body)["calls"]]
        assert listed == ["note: to production, api_key: [REDACTED]", "text: use [REDACTED] for it", "text: then …"]
        assert b"hunter2" not in shaped.body and secret.encode() not in shaped.body and b"sk-ant" not in shaped.body


@pytest.mark.parametrize(
    ("text", "mime", "said"),
    [
        ('{"city": "Paris", "days": 2}', "application/json", "city: Paris, days: 2"),
        (
            '{"q": {"city": "Rome", "tags": ["a", "b"]}, "n": null}',
            "application/json",
            "q: {city: Rome, tags: [a, b]}, n: null",
        ),
        ('{"prompt": "Plan it:\\n  first\\tthen"}', "application/json", "prompt: Plan it: first then"),
        ("just text\non two lines", "text/plain", "just text on two lines"),
        ('"a JSON string"', "application/json", "a JSON string"),
        ("{not json", None, "not json"),  # broken JSON: its start, without the punctuation
        ("", None, None),
        (None, None, None),
    ],
)
def test_an_excerpt_reads_as_first_words_on_one_line(text, mime, said):
    assert excerpt(text, mime) == said


def test_an_excerpt_is_cut_between_words_never_inside_one():
    words = [f"w{i}" + "x" * (i % 7) for i in range(200)]
    said = excerpt(" ".join(words))
    assert said is not None and said.endswith(" …") and len(said) <= EXCERPT_CHARS
    assert said[:-2].split() == words[: len(said[:-2].split())]  # whole words, in order
    long = "k" * (EXCERPT_CHARS + 5)
    assert excerpt(f"{long} after") == "…"  # a first word longer than an excerpt is never shown cut
    assert excerpt(f"key: {long}") == "key: …"
    assert excerpt(json.dumps({"notes": "y" * 10_000})) == "notes: …"
    assert excerpt(json.dumps({"a": "b " * 200_000})).startswith("a: b b")  # past what is decoded: its start

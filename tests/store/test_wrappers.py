"""One model call per request. LlamaIndex's agents, traced by OpenInference, make three LLM-kind
spans for one request to the provider: the outer ``predict_and_call`` wrapper, a
``_prepare_chat_with_tools`` preparation under it, and the client's ``chat`` that carries the
usage. Only the last is a call, whatever order the records arrive in and however the log is
cut into blocks; an LLM span that wraps nothing, or wraps one that reports no usage, stays a
call; the SDK's own span under one of callctx's calls stays part of that call."""

from __future__ import annotations

import itertools
import json

from helpers.stores import calls_of, log_of
from helpers.wrapped import llama_request, span
from hypothesis import given, settings
from hypothesis import strategies as st

from callctx.projection import schema as s
from callctx.projection.events import encode
from callctx.projection.log import EventLog
from callctx.store.contexts import context_of
from callctx.store.local import LocalStore


def only_the_request(calls) -> bool:
    return [c.span_id for c in calls] == [format(4, "016x")] and calls[0].function == "support"


def indexed_in_blocks(records, cuts, tmp_path) -> list:
    """The calls of a log written (and indexed) a block at a time, cut at ``cuts``."""
    path = tmp_path / "blocks.jsonl"
    path.unlink(missing_ok=True)
    with EventLog(path) as log, LocalStore(path) as store:
        at = 0
        for cut in [*sorted(cuts), len(records)]:
            for rec in records[at:cut]:
                log.write(encode(rec))
            log.flush()
            store.refresh()
            at = cut
        return [store.call(n) for n in range(1, store.state().calls + 1)]


def test_a_wrapper_and_its_preparation_are_not_calls():
    assert only_the_request(calls_of(llama_request()))


def test_in_the_order_spans_end_as_an_exporter_sends_them():
    by_end = sorted(range(0, 8, 2), key=lambda i: llama_request()[i + 1].end_ns)
    records = llama_request()
    assert only_the_request(calls_of([r for i in by_end for r in (records[i], records[i + 1])]))


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(range(8)), cuts=st.sets(st.integers(1, 7), max_size=4))
def test_any_order_and_any_blocks(order, cuts, tmp_path_factory):
    records = [llama_request()[i] for i in order]
    assert only_the_request(indexed_in_blocks(records, cuts, tmp_path_factory.mktemp("w")))


def test_every_order_record_by_record(tmp_path):
    records = llama_request()
    for order in itertools.islice(itertools.permutations(range(8)), 0, 40320, 997):
        assert only_the_request(indexed_in_blocks([records[i] for i in order], range(1, 8), tmp_path)), order


def test_an_llm_span_alone_or_above_one_without_usage_stays_a_call():
    alone = [*span(1, None, "agent", 0, 100), *span(2, 1, "OpenAI.chat", 10, 90, {"llm.model_name": "gpt-4o"})]
    assert len(calls_of(alone)) == 1
    nested_without_usage = [
        *span(1, None, "agent", 0, 100),
        *span(2, 1, "outer", 10, 90, {"llm.model_name": "gpt-4o"}, {"llm.token_count.prompt": 10}),
        *span(3, 2, "inner", 11, 80, {"llm.model_name": "gpt-4o"}),
    ]
    assert [c.span_id for c in calls_of(nested_without_usage)] == [format(2, "016x"), format(3, "016x")]


def test_two_requests_under_one_wrapper_are_two_calls():
    records = llama_request() + list(
        span(5, 2, "OpenAI.chat", 81, 89, {"llm.model_name": "gpt-4o"}, {"llm.token_count.prompt": 1300})
    )
    assert [c.span_id for c in calls_of(records)] == [format(4, "016x"), format(5, "016x")]


def test_a_restart_indexes_the_same_calls(tmp_path):
    path, index = log_of(llama_request(), tmp_path), tmp_path / "index.sqlite"
    with LocalStore(path, index=index) as store:
        first = store.state().calls
    with LocalStore(path, index=index) as store:  # resumed from the index kept
        again = store.state().calls
    index.unlink()
    with LocalStore(path, index=index) as store:  # indexed anew from the log
        assert store.state().calls == again == first == 1


def test_a_call_whose_span_carries_no_messages_borrows_its_wrappers():
    """Google ADK: ``call_llm`` holds the request, the client's ``generate_content`` under it the usage."""
    asked = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Book a table for two"}]}])
    chat = {s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: "gemini-2.5-flash"}
    records = [
        *span(1, None, "agent", 0, 100),
        *span(2, 1, "call_llm", 10, 90, {**chat, s.INPUT_MESSAGES: asked}),
        *span(3, 2, "generate_content gemini-2.5-flash", 11, 80, chat,
              {s.USAGE_INPUT: 1500, s.USAGE_OUTPUT: 12, s.OUTPUT_MESSAGES: json.dumps(
                  [{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}])}),
    ]  # fmt: skip
    with LocalStore(log_of(records)) as store:
        assert store.state().calls == 1
        call = store.call(1)
        found = context_of(store.recorded(call))
        assert call.span_id == format(3, "016x")
        assert [m.text for m in found.messages.messages] == ["Book a table for two"]
        assert [m.text for m in found.messages.output] == ["Done."]  # its own, not the wrapper's

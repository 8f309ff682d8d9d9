"""The local store: an event log and its index, read through the read model. Calls numbered and
named as the projection's rules say, whatever order the records arrive in; trees folded on read
equal to replaying the log; an index that resumes, rebuilds and never loses a record."""

from __future__ import annotations

import itertools
import json
import random
import sqlite3

import pytest
from google.protobuf.json_format import MessageToDict
from helpers import root_calls
from helpers.otlp_requests import build, span
from helpers.stores import all_calls, log_of, served_trees, tree_keys
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from callctx.projection import Projection, read_log
from callctx.projection.ancestry import Ancestor, agentic_chain
from callctx.projection.batch import Batch, records
from callctx.projection.calls import number
from callctx.projection.errors import BadInput, NotFound
from callctx.projection.events import SpanEnded, SpanStarted, encode
from callctx.projection.log import EventLog
from callctx.projection.log_reader import LogTail
from callctx.projection.node import STARTED
from callctx.projection.otlp import decode_request
from callctx.projection.otlpjson import ids_to_hex
from callctx.serve import Receiver
from callctx.store import model
from callctx.store.index import VERSION
from callctx.store.local import LocalStore
from callctx.store.model import Filter

TRACE = bytes.fromhex("ab" * 16)
CHAT = [("gen_ai.operation.name", "chat"), ("gen_ai.request.model", "m")]


def agent(name: str) -> list[tuple[str, str]]:
    return [("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", name)]


def protobuf(rx: Receiver, req) -> None:
    rx.ingest(rx.decode(req.SerializeToString(), "application/x-protobuf"))


def test_the_store_satisfies_the_read_model():
    wanted = {name for name in dir(model.Store) if not name.startswith("_")}
    assert wanted <= set(dir(LocalStore))


# ---- what a receiver writes, and what it reads back ----------------------------------------------
def test_the_receiver_log_is_the_records_and_the_trees_are_the_replay(tmp_path):
    requests = [
        build([([("service.name", "a")], [("s", [
            span(TRACE, 1, None, "invoke_agent root", 10, 100, agent("root")),
            span(TRACE, 2, 1, "chat m", 20, 30, [*CHAT, ("gen_ai.usage.input_tokens", 12)]),
            span(TRACE, 3, 1, "plain", 40, 50, code=2, message="boom"),
        ])])]),
        build([([("service.name", "b")], [("s", [span(TRACE, 4, 3, "chat late", 45, 46, CHAT)])])]),
    ]  # fmt: skip
    answers = {}
    for how in ("protobuf", "json"):
        rx = Receiver(tmp_path / how / "log.jsonl", index_every=None)
        for req in requests:
            if how == "protobuf":
                protobuf(rx, req)
            else:
                body = json.dumps(ids_to_hex(MessageToDict(req, use_integers_for_enums=True))).encode()
                rx.ingest(rx.decode(body, "application/json"))
        answers[how] = (served_trees(rx.store), [c.function for c in all_calls(rx.store)])
        rx.close()
    expected = []
    for req in requests:
        spans = sorted(decode_request(req).spans, key=lambda r: (r.start_ns, r.span_id))
        expected += [encode(rec) for rec in records(Batch(spans))]
    written = (tmp_path / "protobuf" / "log.jsonl").read_bytes().split(b"\n", 1)[1]  # past the header
    assert written == b"".join(expected)
    replayed = Projection.from_log(tmp_path / "protobuf" / "log.jsonl", recover=False)
    assert answers["protobuf"][0] == {k: replayed.session_tree(k) for k in replayed.sessions()}
    assert answers["protobuf"] == answers["json"]
    assert answers["protobuf"][1] == ["root", "root"]  # the late call runs in root, through the plain span


def test_calls_wait_for_their_ancestors_and_cycles_and_duplicates_count_once(tmp_path):
    rx = Receiver(tmp_path / "log.jsonl", index_every=None)
    protobuf(rx, build([([("service.name", "s")], [("x", [
        span(TRACE, 0x43, 0x41, "chat c1", 30, 31, CHAT),
        span(TRACE, 0x44, 0x45, "chat c2", 32, 33, CHAT, code=2, message="boom"),
        span(TRACE, 0x45, 0x44, "loop", 34, 35),
    ])])]))  # fmt: skip
    first = {c.span_id: c for c in all_calls(rx.store)}
    assert first["43" * 8].function is None  # its parent has not arrived yet
    protobuf(rx, build([([], [("x", [
        span(TRACE, 0x41, 0x42, "invoke_agent step", 20, 40, agent("step")),
        span(TRACE, 0x43, 0x41, "chat c1 again", 30, 31, CHAT),
        span(TRACE, 0x46, 0x41, "chat ours", 36, 37, [*CHAT, ("callctx.context", "m"), ("callctx.function", "mine")]),
    ])])]))  # fmt: skip
    assert {c.span_id: c.path for c in all_calls(rx.store)}["43" * 8] == ["step"]  # partly resolved, waits on
    protobuf(rx, build([([], [("x", [span(TRACE, 0x42, None, "invoke_agent root", 10, 50, agent("root"))])])]))
    calls = {c.span_id: c for c in all_calls(rx.store)}
    assert calls["43" * 8].call_path == "root → step" and calls["43" * 8].function == "step"
    assert calls["44" * 8].function is None and calls["44" * 8].status == "error"  # its chain loops
    assert calls["46" * 8].function == "mine" and not calls["46" * 8].foreign
    assert len(calls) == 3 and rx.store.state().calls == 3  # the duplicate counts once
    rx.close()


@pytest.mark.parametrize("order", ["ours first", "sdk first"])
def test_the_provider_sdks_own_span_of_our_call_is_part_of_it(tmp_path, order):
    """The provider SDKs trace their own requests (an LLM-kind span under our chat span): one
    request is one call, ours, whichever span arrives first."""
    ours = span(TRACE, 2, 1, "chat m", 20, 30, [*CHAT, ("callctx.context", "m"), ("callctx.function", "f")])
    sdk = span(TRACE, 3, 2, "anthropic.messages.create", 21, 29, [*CHAT, ("gen_ai.usage.input_tokens", 7)])
    root = span(TRACE, 1, None, "invoke_agent f", 10, 40, agent("f"))
    batches = [[sdk], [ours, root]] if order == "sdk first" else [[root, ours], [sdk]]
    rx = Receiver(tmp_path / "log.jsonl", index_every=None)
    for batch in batches:
        protobuf(rx, build([([], [("x", batch)])]))
        rx.store.refresh()
    (call,) = all_calls(rx.store)
    assert call.span_id == "02" * 8 and not call.foreign
    rx.close()


def test_an_index_of_an_older_schema_or_another_log_is_made_anew(tmp_path):
    log = tmp_path / "log.jsonl"
    rx = Receiver(log, index_every=None)
    protobuf(rx, build([([], [("x", [span(TRACE, 1, None, "invoke_agent a", 1, 2, agent("a")),
                                      span(TRACE, 2, 1, "chat m", 1, 2, CHAT)])])]))  # fmt: skip
    before = (served_trees(rx.store), all_calls(rx.store))
    rx.close()
    index = f"{log}.index.sqlite"
    db = sqlite3.connect(index)  # what an index of another version looks like
    db.executescript(f"DROP TABLE spans; CREATE TABLE spans (span_id TEXT); PRAGMA user_version = {VERSION - 1};")
    db.close()
    again = Receiver(log, index_every=None)
    assert (served_trees(again.store), all_calls(again.store)) == before
    again.close()
    other = tmp_path / "other.jsonl"  # another log moved in place of this one, with its index left behind
    rx2 = Receiver(other, index_every=None)
    protobuf(rx2, build([([], [("x", [span(TRACE, 9, None, "invoke_agent z", 1, 2, agent("z"))])])]))
    rx2.close()
    other.replace(log)
    third = LocalStore(log, index=index)
    assert [t.functions for t in third.trees().items] == [["z"]]
    third.close()


def test_a_refused_write_loses_nothing(tmp_path, monkeypatch):
    import errno
    import os

    from callctx.projection import log as log_module

    log = tmp_path / "log.jsonl"
    rx = Receiver(log, index_every=None)
    real = os.write
    failing = [True]

    def write(fd, data):
        if failing[0] and fd == rx.log._fd:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(log_module.os, "write", write)
    protobuf(rx, build([([], [("x", [span(TRACE, 1, None, "invoke_agent a", 1, 9, agent("a"))])])]))
    assert not rx.store.trees().items  # kept in memory, retried: not in the log yet
    failing[0] = False
    protobuf(rx, build([([], [("x", [span(TRACE, 2, 1, "chat later", 2, 3, CHAT)])])]))
    served = served_trees(rx.store)
    rx.close()
    replayed = Projection.from_log(log, recover=False)
    assert served == {k: replayed.session_tree(k) for k in replayed.sessions()} and served
    assert {r.span_id for r in read_log(log) if type(r) is SpanStarted} == {"01" * 8, "02" * 8}


def test_trees_and_calls_total_their_usage(tmp_path):
    usage = [("gen_ai.usage.input_tokens", 100), ("gen_ai.usage.output_tokens", 20),
             ("gen_ai.usage.cache_read_input_tokens", 64), ("gen_ai.usage.cache_creation_input_tokens", 8)]  # fmt: skip
    rx = Receiver(tmp_path / "log.jsonl", index_every=None)
    protobuf(rx, build([([("service.name", "s")], [("x", [
        span(TRACE, 0x60 + i, None, f"chat {i}", 10 + i, 20 + i, [*CHAT, *usage]) for i in range(2)
    ])])]))  # fmt: skip
    trees = rx.store.trees()
    calls = all_calls(rx.store)
    rx.close()
    assert trees.total == 1 and [c.usage.counts() for c in calls] == [
        {"input": 100, "output": 20, "cache_read": 64, "cache_write": 8}] * 2  # fmt: skip
    assert trees.items[0].usage.counts() == {"input": 200, "output": 40, "cache_read": 128, "cache_write": 16}
    assert [(s.provider, s.model) for s in trees.items[0].spend] == [(None, "m")]


def test_reads_check_their_parameters(tmp_path):
    store = LocalStore(log_of([]), finished=True)
    with pytest.raises(BadInput):
        store.calls(offset=-1)
    with pytest.raises(NotFound, match="no calls yet"):
        store.call(1)
    with pytest.raises(NotFound):
        store.tree("nope")
    with pytest.raises(NotFound):
        store.span_tree("ffffffffffffffff")
    assert store.calls(limit=10**9).limit == model.MAX_LIMIT
    store.close()


# ---- any records, in any order: the projection's rules -------------------------------------------
KINDS = ("agentic", "plain", "llm", "ours", "sdk")


@st.composite
def forests(draw):
    """Spans of a few traces: agentic calls, plain spans, foreign model calls, our own model
    calls and the SDK's span under one of ours; a session on some roots."""
    spans = []
    sid = 0
    for t in range(draw(st.integers(1, 3))):
        trace = format(0xAB00 + t, "032x")
        ids: list[tuple[int, str]] = []
        for i in range(draw(st.integers(1, 9))):
            sid += 1
            parent = draw(st.sampled_from([None, *ids])) if ids and i else None
            kind = draw(st.sampled_from(KINDS if parent else ("agentic", "plain", "llm")))
            if kind == "sdk" and (parent is None or parent[1] != "ours"):
                kind = "llm"
            start = draw(st.integers(0, 50))
            ended = draw(st.booleans()) or draw(st.booleans())
            session = draw(st.sampled_from([None, "s1", "s2"])) if parent is None else None
            spans.append((trace, sid, parent[0] if parent else None, kind, start, ended, session))
            ids.append((sid, kind))
    return spans


def records_of(spans):
    return spans_as_records(spans, _forest_attributes)


def _forest_attributes(kind: str, sid: int) -> dict:
    return {
        "agentic": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"a{sid}"},
        "plain": {},
        "llm": {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": sid},
        "ours": {"gen_ai.operation.name": "chat", "callctx.context": "{}", "callctx.function": f"o{sid}",
                 "callctx.call_path": f"x → o{sid}"},
        "sdk": {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"},
    }[kind]  # fmt: skip


def indexed_in_blocks(records, path, rnd, blocks: int) -> LocalStore:
    """A live store over a log of ``records`` written in ``blocks`` cuts chosen by ``rnd``,
    its index brought up to date after each: the index sees the log a block at a time (read
    as live, to compare with a replay that does not recover)."""
    store = LocalStore(path, finished=False)
    with EventLog(path) as log:
        cuts = sorted(rnd.sample(range(len(records) + 1), min(blocks, len(records) + 1)))
        start = 0
        for cut in [*cuts, len(records)]:
            for rec in records[start:cut]:
                log.write(encode(rec))
            start = cut
            store.refresh()
    return store


def spans_as_records(spans, attributes) -> list:
    """(trace, sid, parent, kind, start, ended, session) tuples as start and end records, each
    span's attributes made by ``attributes(kind, sid)``."""
    out = []
    for trace, sid, parent, kind, start, ended, session in spans:
        attrs = attributes(kind, sid)
        if session:
            attrs["gen_ai.conversation.id"] = session
        span_id, parent_id = format(sid, "016x"), format(parent, "016x") if parent else None
        out.append(SpanStarted(trace, span_id, parent_id, f"{kind} {sid}", start, attrs))
        if ended:
            out.append(SpanEnded(trace, span_id, start + 5, "error" if sid % 5 == 0 else "ok"))
    return out


def wrappers_of(spans, links):
    """One request, one call: LLM spans above a call that carries usage (``llm``: the others
    carry none) are its wrappers, and a call under a wrapper that ended with no usage is its
    preparation; neither is a call."""
    kinds = {format(sid, "016x"): (kind, ended, format(parent, "016x") if parent else None)
             for _, sid, parent, kind, _, ended, _ in spans}  # fmt: skip
    wrappers = set()
    for _, sid, parent, kind, _, _, _ in spans:
        if kind != "llm" or agentic_chain(format(parent, "016x") if parent else None, links.get).in_our_call:
            continue
        up = kinds[format(sid, "016x")][2]
        while up is not None:
            if kinds[up][0] in ("llm", "sdk"):
                wrappers.add(up)
            up = kinds[up][2]
    prepared = {sid for sid, (kind, ended, parent) in kinds.items() if kind == "sdk" and ended and parent in wrappers}
    return wrappers | prepared


def oracle(spans):
    """What the projection's rules say the calls are: (number, span id, function, path, status)."""
    links = {}
    for _, sid, parent, kind, _, _, _ in spans:
        k = {"agentic": "agentic", "plain": "other"}.get(kind, "llm")
        links[format(sid, "016x")] = Ancestor(format(parent, "016x") if parent else None, k, f"a{sid}", kind == "ours")
    calls = []
    for _, sid, parent, kind, start, ended, _ in spans:
        if kind not in ("llm", "ours", "sdk"):
            continue
        chain = agentic_chain(format(parent, "016x") if parent else None, links.get)
        if kind != "ours" and chain.in_our_call:
            continue
        function, path = (f"o{sid}", ["x", f"o{sid}"]) if kind == "ours" else (chain.function, chain.path)
        status = ("error" if sid % 5 == 0 else "ok") if ended else "running"
        calls.append((start, format(sid, "016x"), function, path, status))
    calls = [c for c in calls if c[1] not in wrappers_of(spans, links)]
    calls.sort()
    return [(i, sid, fn, path, status) for i, (_, sid, fn, path, status) in enumerate(calls, start=1)]


TRACE_AB = "0000000000000000000000000000ab00"


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(forests(), st.randoms(use_true_random=False), st.integers(1, 4))
@example(  # a model-call span under one of our chat spans, above which a foreign LLM span is a call, not a wrapper
    [(TRACE_AB, 1, None, "llm", 0, False, None), (TRACE_AB, 2, 1, "ours", 1, False, None),
     (TRACE_AB, 3, None, "agentic", 0, False, None), (TRACE_AB, 4, 1, "agentic", 0, True, None),
     (TRACE_AB, 5, 2, "llm", 0, False, None)],
    random.Random(0), 1,
)  # fmt: skip
def test_any_arrival_gives_the_projections_calls_and_trees(tmp_path_factory, spans, rnd, blocks):
    records = records_of(spans)
    rnd.shuffle(records)
    folder = tmp_path_factory.mktemp("arrival")
    path = folder / "log.jsonl"
    store = indexed_in_blocks(records, path, rnd, blocks)
    got = [(c.index, c.span_id, c.function, c.path, c.status) for c in all_calls(store)]
    assert got == oracle(spans)
    assert [c.index for c in number(all_calls(store))] == [g[0] for g in got]
    replayed = Projection.from_log(path, recover=False)
    for key in replayed.sessions():
        assert store.tree(key) == replayed.session_tree(key)
    for sid, n in replayed.nodes.items():
        if n.holds:
            assert store.span_tree(sid, final=True) == replayed.view(sid).text
    store.close()


# ---- which trees: root calls, keyed by the first session on them or above them ----------------------
def written(path, recs, *, one_by_one: bool, store: LocalStore) -> Projection:
    """``recs`` written to a new log at ``path`` (the store refreshed after each record when
    ``one_by_one``, else once); the log replayed."""
    with EventLog(path) as log:
        for rec in recs:
            log.write(encode(rec))
            if one_by_one:
                store.refresh()
    store.refresh()
    return Projection.from_log(path, recover=False)


ARRIVALS = ["as written", "reversed", "one at a time", "reversed, one at a time"]


@pytest.mark.parametrize("arrival", ARRIVALS)
@pytest.mark.parametrize("case", list(root_calls.CASES))
def test_each_root_call_is_listed_in_the_tree_the_fold_puts_it_in(tmp_path, case, arrival):
    make, keys = root_calls.CASES[case]
    recs = make()[::-1] if arrival.startswith("reversed") else make()
    store = LocalStore(tmp_path / "log.jsonl", finished=False)
    replayed = written(tmp_path / "log.jsonl", recs, one_by_one=arrival.endswith("one at a time"), store=store)
    assert sorted(replayed.sessions()) == sorted(keys)
    assert sorted(tree_keys(store)) == sorted(keys) and store.state().trees == len(keys)
    for key in keys:
        assert store.tree(key) == replayed.session_tree(key) != ""
    for sid, n in replayed.nodes.items():
        if n.holds:
            assert store.span_tree(sid, final=True) == replayed.view(sid).text
    store.close()


@pytest.mark.parametrize("arrival", ARRIVALS)
def test_a_parent_in_another_trace_is_no_ancestor_of_a_call(tmp_path, arrival):
    recs = root_calls.parent_in_another_trace()
    recs = recs[::-1] if arrival.startswith("reversed") else recs
    store = LocalStore(tmp_path / "log.jsonl", finished=False)
    written(tmp_path / "log.jsonl", recs, one_by_one=arrival.endswith("one at a time"), store=store)
    calls = {c.span_id: (c.function, c.path, c.tree) for c in all_calls(store)}
    assert calls == {root_calls.sid(2): ("outer", ["outer"], root_calls.T1),
                     root_calls.sid(4): ("inner", ["inner"], root_calls.T2)}  # fmt: skip
    assert store.ancestors(root_calls.sid(4)) == [root_calls.sid(3), root_calls.sid(4)]  # its trace's only
    store.close()


def test_a_trace_in_several_trees_counts_in_each_and_a_trace_of_plain_spans_is_listed_by_its_id(tmp_path):
    plain = "a9" * 16
    recs = [*root_calls.lost_parent_under_a_session_root(), *root_calls.whole(plain, 7, None, "GET /health", 5, {})]
    store = LocalStore(log_of(recs, tmp_path), finished=True)
    rows = {t.key: (t.kind, t.spans, t.calls, t.usage.input) for t in store.trees().items}
    assert rows == {"S": ("session", 3, 1, 3), root_calls.T1: ("trace", 3, 1, 3), plain: ("trace", 1, 0, None)}
    assert store.trees(Filter(session="S")).total == 2  # both trees of the trace that names it
    assert store.tree(plain) == "" and store.state().trees == 3
    assert [c.tree for c in all_calls(store)] == [root_calls.T1]  # the call's own tree
    assert len(all_calls(store, Filter(tree="S"))) == 1  # a trace's calls are listed with each of its trees
    store.close()


LOOP = [  # a model call, a plain span naming session S and an agent: each the parent of the one before
    SpanStarted(TRACE.hex(), "01" * 8, "03" * 8, "chat m", 0, dict(CHAT)),
    SpanStarted(TRACE.hex(), "02" * 8, "01" * 8, "plain", 1, {"gen_ai.conversation.id": "S"}),
    SpanStarted(TRACE.hex(), "03" * 8, "02" * 8, "invoke_agent a", 2, dict(agent("a"))),
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("one_by_one", [True, False])
def test_a_loop_of_parents_loses_the_link_of_the_span_that_arrives_last(tmp_path, order, one_by_one):
    store = LocalStore(tmp_path / "log.jsonl", finished=False)
    replayed = written(tmp_path / "log.jsonl", [LOOP[i] for i in order], one_by_one=one_by_one, store=store)
    assert sorted(tree_keys(store)) == sorted(replayed.sessions())
    assert served_trees(store) == {k: replayed.session_tree(k) for k in replayed.sessions()}
    store.close()


@st.composite
def tangles(draw):
    """Spans of a few traces whose calls make trees of their own: sessions named on any span,
    plain roots, hidden agents, parents that never arrive, parents in another trace, loops of
    parents, and span ids started again in another trace."""
    spans = []
    count = draw(st.integers(1, 12))
    traces = draw(st.integers(1, 3))
    for sid in range(1, count + 1):
        trace = format(0xAB00 + draw(st.integers(0, traces - 1)), "032x")
        same = [s[1] for s in spans if s[0] == trace]
        parent = draw(st.one_of(st.none(), st.sampled_from(same) if same else st.none(), st.integers(1, count + 2)))
        kind = draw(st.sampled_from(["agentic", "agentic", "hidden", "plain", "plain", "llm", "tool"]))
        session = draw(st.sampled_from([None, None, "s1", "s2"]))
        spans.append((trace, sid, parent, kind, draw(st.integers(0, 30)), draw(st.booleans()), session))
    for again in draw(st.lists(st.sampled_from(spans), max_size=2)):  # the same span id in another trace
        spans.append((format(0xAB00 + traces, "032x"), *again[1:]))
    return spans


def tangled_records(spans):
    return spans_as_records(spans, _tangle_attributes)


def _tangle_attributes(kind: str, sid: int) -> dict:
    return {
        "agentic": dict(agent(f"a{sid}")),
        "hidden": {**dict(agent(f"h{sid}")), "callctx.expose": "hidden"},
        "plain": {},
        "llm": {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": sid},
        "tool": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{sid}"},
    }[kind]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(tangles(), st.randoms(use_true_random=False), st.integers(1, 4), st.floats(0, 0.3))
def test_any_arrival_lists_the_trees_of_the_fold(tmp_path_factory, spans, rnd, blocks, dup):
    """However the spans arrive (any order, any blocks, with duplicates), the index lists the
    trees the fold of the log has, each folded from its member traces as the replay renders
    it; a trace with no call is listed under its own id, as an empty tree."""
    records = tangled_records(spans)
    records += [r for r in records if rnd.random() < dup]
    rnd.shuffle(records)
    path = tmp_path_factory.mktemp("tangles") / "log.jsonl"
    store = indexed_in_blocks(records, path, rnd, blocks)
    replayed = Projection.from_log(path, recover=False)
    keys = tree_keys(store)
    assert len(keys) == len(set(keys)) == store.state().trees
    sessions = set(replayed.sessions())
    with_calls = {n.trace_id for tree in replayed.trees.values() for n in tree.top_calls}
    without = {n.trace_id for n in replayed.nodes.values() if n.state & STARTED} - with_calls - sessions
    assert set(keys) == sessions | without
    for key in sessions:
        assert store.tree(key) == replayed.session_tree(key)
    assert all(store.tree(key) == "" for key in without)
    for sid, n in replayed.nodes.items():
        if n.holds:
            assert store.span_tree(sid, final=True) == replayed.view(sid).text
    store.close()


def test_numbering_follows_starts_when_a_call_arrives_late(tmp_path):
    path = tmp_path / "log.jsonl"
    store = LocalStore(path)
    with EventLog(path) as log:
        for sid, start in ((1, 20), (2, 30)):
            log.write(encode(SpanStarted("ab" * 16, format(sid, "016x"), None, "chat", start, dict(CHAT))))
        store.refresh()
        assert [c.span_id[-1] for c in all_calls(store)] == ["1", "2"]
        log.write(encode(SpanStarted("ab" * 16, format(3, "016x"), None, "chat", 10, dict(CHAT))))
    assert [(c.index, c.span_id[-1]) for c in all_calls(store)] == [(1, "3"), (2, "1"), (3, "2")]
    assert store.calls(Filter(model="m"), offset=1, limit=1).items[0].index == 2  # numbered over all calls
    store.close()


# ---- the log as it grows -------------------------------------------------------------------------
def test_the_tail_reads_whole_lines_resumes_and_sees_a_replaced_log(tmp_path):
    path = tmp_path / "log.jsonl"
    recs = [SpanStarted("ab" * 16, format(i, "016x"), None, f"s{i}", i) for i in range(1, 6)]
    lines = [encode(r) for r in recs]
    with EventLog(path) as log:
        log.write(lines[0])
    with open(path, "ab") as f:
        f.write(lines[1][:7])  # a record still being written
    tail = LogTail(path)
    got = [loc.record for block in tail.read() for loc in block]
    assert [type(r).__name__ for r in got] == ["LogHeader", "SpanStarted"]
    with open(path, "ab") as f:
        f.write(lines[1][7:] + b"garbage that is no record\n" + lines[2])
    located = [loc for block in tail.read() for loc in block]
    assert [loc.record for loc in located] == recs[1:3] and tail.damaged == 1
    raw = path.read_bytes()
    assert all(raw[loc.offset : loc.offset + loc.length] == encode(loc.record) for loc in located)
    again = LogTail(path, offset=tail.offset, line=tail.line, identity=tail.identity)  # another process resumes
    with open(path, "ab") as f:
        f.write(lines[3])
    assert [loc.record for block in again.read() for loc in block] == [recs[3]]
    path.unlink()
    with EventLog(path) as log:  # another log in its place
        log.write(lines[4])
    fresh = [loc.record for block in again.read() for loc in block]
    assert again.replaced and fresh[-1] == recs[4] and recs[3] not in fresh


def test_a_store_reads_a_log_written_by_a_running_agent(tmp_path):
    from callctx import agentic, setup

    path = tmp_path / "events.jsonl"
    rt = setup(path, log_buffer=0)
    store = LocalStore(path)
    seen = []

    @agentic
    def outer():
        rt.exec("first")
        seen.append([c.status for c in all_calls(store)])
        return inner()

    @agentic
    def inner():
        return rt.exec("second")

    outer()
    rt.close()
    assert seen == [["ok"]]
    assert [(c.function, c.status) for c in all_calls(store)] == [("outer", "ok"), ("inner", "ok")]
    assert [t.status for t in store.trees().items] == ["ok"]
    finished = LocalStore(path, finished=True)
    assert finished.tree(tree_keys(finished)[0]) == store.tree(tree_keys(store)[0])
    store.close()
    finished.close()


def test_damage_is_counted_and_the_rest_indexed(tmp_path):
    good = [SpanStarted("ab" * 16, format(i, "016x"), None, "chat", i, dict(CHAT)) for i in range(1, 4)]
    path = tmp_path / "log.jsonl"
    with EventLog(path) as log:
        log.write(encode(good[0]))
        log.write(b'{"e":"start","nonsense\n')
        for rec in good[1:]:
            log.write(encode(rec))
    store = LocalStore(path)
    state = store.state()
    assert state.damaged == 1 and state.calls == 3 and store.damage[0].line == 3
    store.close()


def test_a_random_log_written_in_pieces_indexes_like_one_written_whole(tmp_path):
    rnd = random.Random(7)
    recs = records_of([("ab" * 16, i, (i - 1) or None, rnd.choice(("agentic", "llm", "plain")), i, True, None)
                       for i in range(1, 60)])  # fmt: skip
    whole, pieces = tmp_path / "whole.jsonl", tmp_path / "pieces.jsonl"
    with EventLog(whole) as log:
        for rec in recs:
            log.write(encode(rec))
    store = LocalStore(pieces)
    with EventLog(pieces) as log:
        for rec in recs:
            log.write(encode(rec))
            if rnd.random() < 0.3:
                store.refresh()
    one = LocalStore(whole)
    assert all_calls(store) == all_calls(one) and served_trees(store) == served_trees(one)
    store.close()
    one.close()

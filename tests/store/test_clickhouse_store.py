"""The ClickHouse store over the Collector's traces table (chDB: the real engine, the exporter's
DDL): every answer the same as the local store's over the same spans (listings, filters,
pages, trees, contexts, the cache ledger), in both of the exporter's table variants; listings
that follow the table as it grows; two stores over one table alike; clear errors."""

from __future__ import annotations

import itertools
import os

import pytest
from helpers import foreign_chat, root_calls
from helpers.cli import cli, cli_ok
from helpers.otel_rows import exported
from helpers.stores import all_calls, log_of, served_views, tree_keys
from helpers.wrapped import llama_request

from callctx.projection import Projection
from callctx.projection.batch import Batch, records
from callctx.projection.errors import NotFound
from callctx.projection.otel_traces import row_of
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.connection import HttpConnection, parse
from callctx.store.contexts import rebuild, reconstruct
from callctx.store.local import LocalStore
from callctx.store.model import Filter, StoreUnavailable
from callctx.store.otel_table import OtelTable, Variant

_names = itertools.count()


def table_of(conn, batch: Batch, variant: Variant = "map") -> OtelTable:
    """A new traces table holding ``batch``'s spans, written as the exporter writes them."""
    t = OtelTable(conn, table=f"traces_{next(_names)}")
    t.create(variant=variant)
    assert t.write(batch.spans) == len(batch.spans)
    return t


def pair(conn, tmp_path, batch: Batch, variant: Variant = "map") -> tuple[LocalStore, ClickHouseStore]:
    """The local store over a log of ``batch``, and the ClickHouse store over a table of it."""
    local = LocalStore(log_of(records(batch), tmp_path), finished=True)
    t = table_of(conn, batch, variant)
    return local, ClickHouseStore(conn, table=t.table)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    cli_ok("demo", "--out", out, "--quiet")
    return exported(out / "events.jsonl")


def every_page(store, f: Filter, limit: int) -> list:
    pages, offset = [], 0
    while offset is not None:
        page = store.calls(f, offset=offset, limit=limit)
        pages.append((page.total, page.items))
        offset = page.next_offset
    return pages


@pytest.mark.parametrize("variant", ["map", "json"])
def test_our_agent_reads_the_same_from_the_table_as_from_its_log(conn, demo, tmp_path, variant):
    local, ch = pair(conn, tmp_path, demo, variant)
    with local, ch:
        assert ch.table.variant == variant
        assert all_calls(ch) == all_calls(local) and len(all_calls(ch)) == 11
        assert ch.trees().items == local.trees().items
        assert ch.facets() == local.facets()
        span_ids = [r.span_id for r in demo.spans]
        assert served_views(ch, span_ids) == served_views(local, span_ids)
        for key in tree_keys(local):  # a level at a time, and every span's ancestors
            assert ch.spans(key, limit=1000) == local.spans(key, limit=1000)
        key = local.tree_of(demo.spans[0].trace_id)
        for sid in span_ids:
            assert ch.ancestors(sid) == local.ancestors(sid)
            assert ch.span_tree(sid) == local.span_tree(sid)
            assert ch.spans(key, sid) == local.spans(key, sid)
        rebuilt = [rebuild(ch.recorded(c)) for c in all_calls(ch, Filter(ours=True))]
        assert len(rebuilt) == 11 and all(r.verified for r in rebuilt)
        assert [ch.cache(n) for n in range(1, 12)] == [local.cache(n) for n in range(1, 12)]
        state, want = ch.state(), local.state()
        assert (state.calls, state.trees, state.spans, state.damaged) == (want.calls, want.trees, want.spans, 0)


def test_a_frameworks_session_keeps_its_calls_filters_pages_and_cache_reasons(conn, tmp_path):
    sent = exported(log_of(foreign_chat.session(), tmp_path / "s"))
    local, ch = pair(conn, tmp_path, sent)
    with local, ch:
        calls = all_calls(ch)
        assert calls == all_calls(local) and all(c.foreign for c in calls)
        assert [ch.cache(n).reason for n in range(1, 6)] == ["first", "hit", "prefix_changed", "ttl_expired",
                                                             "model_changed"]  # fmt: skip
        assert ch.cache(3).first_difference == local.cache(3).first_difference
        for call in calls:  # the table keeps every value as a string: the same messages read back
            assert reconstruct(ch.recorded(call)).messages == reconstruct(local.recorded(call)).messages
        first, last = calls[0].start_ns, calls[-1].start_ns
        filters = [
            Filter(), Filter(model=foreign_chat.MODEL), Filter(model="nope"), Filter(service="agent"),
            Filter(service="nope"), Filter(ours=False), Filter(ours=True), Filter(status="ok"),
            Filter(status="error"), Filter(status="running"), Filter(status="interrupted"),
            Filter(since_ns=calls[2].start_ns), Filter(until_ns=calls[2].start_ns), Filter(since_ns=last + 1),
            Filter(tree=calls[0].tree), Filter(tree="nope"), Filter(session=calls[0].session),
            Filter(service="agent", model=foreign_chat.MODEL, since_ns=first),
        ]  # fmt: skip
        for f in filters:
            for limit in (1, 2, 100):
                assert every_page(ch, f, limit) == every_page(local, f, limit), f
            assert ch.trees(f).items == local.trees(f).items and ch.trees(f).total == local.trees(f).total, f
        assert ch.call(5) == local.call(5)


@pytest.mark.parametrize("case", list(root_calls.CASES))
def test_root_calls_make_the_same_trees_from_the_table_as_from_the_log(conn, tmp_path, case):
    """Calls with no agentic call above them are root calls of the tree of the first session on
    them or above them (else of their trace), and a parent in another trace is no parent: one
    trace may give calls to several trees, and both stores list the trees the fold has."""
    make, keys = root_calls.CASES[case]
    log = log_of(make(), tmp_path / "log")
    local, ch = pair(conn, tmp_path, exported(log))
    replayed = Projection.from_log(log)
    with local, ch:
        assert sorted(tree_keys(ch)) == sorted(tree_keys(local)) == sorted(replayed.sessions()) == sorted(keys)
        assert ch.trees().items == local.trees().items
        assert ch.state().trees == local.state().trees == len(keys)
        for key in keys:
            assert ch.tree(key) == local.tree(key) == replayed.session_tree(key) != ""
            assert every_page(ch, Filter(tree=key), 10) == every_page(local, Filter(tree=key), 10)
        assert all_calls(ch) == all_calls(local)
        for sid in replayed.nodes:
            assert ch.ancestors(sid) == local.ancestors(sid)
            assert ch.span_tree(sid, final=True) == local.span_tree(sid, final=True)
        for key in keys:  # every level of every tree
            parents: list[str | None] = [None]
            while parents:
                parent = parents.pop()
                nodes = ch.spans(key, parent, limit=100)
                assert nodes == local.spans(key, parent, limit=100)
                parents += [n.span_id for n in nodes.items if n.children]


def test_a_wrapper_span_is_no_call_whichever_half_of_the_trace_arrives_first(conn, tmp_path):
    """LlamaIndex's three LLM spans of one request (OpenInference): only the one carrying the
    usage is a call. The table gets the trace in two inserts; the listing follows each."""
    recs = llama_request()
    whole = exported(log_of(recs, tmp_path / "w"))
    with LocalStore(log_of(records(whole), tmp_path), finished=True) as local:
        want = all_calls(local)
    assert len(want) == 1
    by_start = sorted(whole.spans, key=lambda r: r.start_ns)
    for first_half in (by_start[2:], by_start[:2]):  # the leaves first, then the wrappers first
        rest = [r for r in by_start if r not in first_half]
        t = table_of(conn, Batch(first_half))
        with ClickHouseStore(conn, table=t.table) as ch:
            ch.refresh()
            t.write(rest)
            assert all_calls(ch) == want  # derived again: the trace's rows changed
            (got,) = ch.recorded_many(want)
            assert got.around is not None and got.around[0].span_id == want[0].parent_id


def test_two_stores_over_one_table_answer_alike_and_derive_each_trace_once(conn, demo):
    t = table_of(conn, demo)
    with ClickHouseStore(conn, table=t.table) as a, ClickHouseStore(conn, table=t.table) as b:
        assert a.derived.catch_up() == len({r.trace_id for r in demo.spans})
        assert b.derived.catch_up() == 0  # the listings are in the table, not in the process
        assert all_calls(b) == all_calls(a) and b.trees().items == a.trees().items


class Watched:
    """A connection that notes the SQL of every query it passes on."""

    def __init__(self, conn):
        self.conn, self.source, self.queries = conn, conn.source, []

    def query(self, sql, params=None):
        self.queries.append((sql, params))
        return self.conn.query(sql, params)

    def command(self, sql):
        self.conn.command(sql)

    def insert(self, table, body):
        self.conn.insert(table, body)

    def close(self):
        pass


def test_a_writer_derives_the_traces_it_wrote_from_its_own_rows_as_a_reader_would(conn, demo, tmp_path):
    """``serve --store`` hands its rows to the listings: the traces whose rows in the table are
    all its own are derived without reading them back, into the listings a reader derives
    from the table; a trace another writer added to is read back."""
    session = exported(log_of(foreign_chat.session(), tmp_path))
    read = table_of(conn, Batch(demo.spans + session.spans))
    with ClickHouseStore(conn, table=read.table) as reader:
        want = (all_calls(reader), reader.trees().items, reader.facets())
    watched = Watched(conn)
    writer = ClickHouseStore(watched, table=f"traces_{next(_names)}", create=True)
    with writer:
        half = len(session.spans) // 2
        mine = writer.table.rows_of(demo.spans + session.spans[:half])
        writer.table.insert(mine)
        writer.derived.remember(mine)
        writer.table.write(session.spans[half:])  # another writer's rows of the session's trace
        watched.queries.clear()
        writer.refresh()
        reads = [p["t"] for q, p in watched.queries if f"FROM {writer.table.name} WHERE TraceId IN" in q]
        assert reads == [[session.spans[0].trace_id]]  # the demo's trace came from memory
        assert (all_calls(writer), writer.trees().items, writer.facets()) == want

        llama = exported(log_of(llama_request(), tmp_path / "llama"))
        rows = writer.table.rows_of(llama.spans)
        writer.table.insert(rows)
        writer.derived.remember(rows)
        watched.queries.clear()
        writer.refresh()  # the table grew by this process's rows only: only their trace is looked at
        (among,) = [p["among"] for q, p in watched.queries if p and "among" in p]
        assert among == [llama.spans[0].trace_id]
        assert len(all_calls(writer)) == len(want[0]) + 1


def test_the_clickhouse_connect_client_reads_the_same(conn, chdb_folder, demo):
    """``clickhouse://`` goes through clickhouse-connect's client; its chDB backend runs the
    same engine in this process."""
    import clickhouse_connect

    t = table_of(conn, demo)
    client = clickhouse_connect.get_client(dsn=f"chdb://{chdb_folder}")
    with ClickHouseStore(HttpConnection(client=client, source="clickhouse-connect"), table=t.table) as http, \
         ClickHouseStore(conn, table=t.table) as direct:  # fmt: skip
        assert all_calls(http) == all_calls(direct)
        call = all_calls(http, Filter(ours=True))[4]
        assert rebuild(http.recorded(call)).verified


def test_unknown_calls_trees_and_spans_are_not_found(conn, demo):
    t = table_of(conn, demo)
    with ClickHouseStore(conn, table=t.table) as ch:
        with pytest.raises(NotFound, match=r"call 12 is out of range \(1 to 11\)"):
            ch.call(12)
        with pytest.raises(NotFound):
            ch.call(0)
        with pytest.raises(NotFound):
            ch.tree("no-such-tree")
        with pytest.raises(NotFound, match="no tree"):
            ch.spans("no-such-tree")
        with pytest.raises(NotFound):
            ch.span_tree("ab" * 8)
        assert ch.ancestors("ab" * 8) == []


def test_a_missing_table_unreachable_server_and_bad_urls_are_one_clear_line(conn, monkeypatch):
    with pytest.raises(StoreUnavailable, match=r"no table otel\.absent .*clickhouse exporter"):
        ClickHouseStore(conn, table="absent")
    monkeypatch.delenv("CALLCTX_CLICKHOUSE_PASSWORD", raising=False)
    with pytest.raises(StoreUnavailable) as e:
        ClickHouseStore.open(parse("clickhouse://alice:s3cret@127.0.0.1:9/otel"))
    text = str(e.value)
    assert (
        "\n" not in text
        and "s3cret" not in text
        and "cannot reach ClickHouse at clickhouse://alice@127.0.0.1:9" in text
    )
    for url, says in (
        ("chdb:", "names no folder"),
        ("clickhouse:///otel", "not a store URL"),
        ("clickhouse://h:port/otel", "port that is not a number"),
        ("clickhouse://h/otel?table=x;drop", "not a plain ClickHouse name"),
        ("clickhouse://h/otel?tabel=x", "unknown option 'tabel'"),
    ):
        with pytest.raises(StoreUnavailable, match=says):
            parse(url)
    url = parse("clickhouse://bob:pw@db.example:8123/traces?table=spans")
    assert (url.host, url.port, url.user, url.password, url.database, url.table) == (
        "db.example", 8123, "bob", "pw", "traces", "spans")  # fmt: skip
    assert "pw" not in url.source and "pw" not in repr(url)
    monkeypatch.setenv("CALLCTX_CLICKHOUSE_PASSWORD", "from-env")
    assert parse("clickhouses://bob@db.example/traces").password == "from-env"
    assert parse("clickhouses://bob@db.example/traces").port == 8443


def test_the_reading_commands_take_a_store(conn, chdb_folder, demo, tmp_path):
    t = table_of(conn, demo)
    log = log_of(records(demo), tmp_path)
    store = f"chdb:{chdb_folder}?table={t.table}"
    assert cli_ok("calls", "--store", store) == cli_ok("calls", log)
    assert cli_ok("context", "--store", store, "--at", "4") == cli_ok("context", log, "--at", "4")
    assert cli_ok("tree", "--store", store, "--at", "6") == cli_ok("tree", log, "--at", "6")
    code, _, err = cli("calls", log, "--store", store)
    assert code == 2 and "not both" in err
    code, _, err = cli("calls")
    assert code == 2 and "an event log, or --store" in err
    code, _, err = cli("calls", "--store", f"chdb:{chdb_folder}?table=absent")
    assert code == 2 and err.count("\n") == 1 and "no table otel.absent" in err


def test_the_store_url_names_no_password_in_state(conn, demo):
    t = table_of(conn, demo)
    with ClickHouseStore(conn, table=t.table) as ch:
        assert ch.state().source == f"chdb:{os.fspath(conn.path)} otel.{t.table}"


def test_rows_the_decoder_refuses_are_counted_and_the_rest_listed(conn, demo):
    t = table_of(conn, demo)
    bad = row_of(demo.spans[0])
    bad.span_id = "not-hex"
    t.insert([bad])
    with ClickHouseStore(conn, table=t.table) as ch:
        assert ch.state().damaged == 1 and ch.state().calls == 11


def test_with_two_trees_in_the_table_every_node_carries_the_number_the_listing_gives(conn, demo, tmp_path):
    """A tree's spans are folded from its own traces; the calls among them are still numbered
    over every call of the table, as the listing numbers them (and as the local store does)."""
    framework = exported(log_of(foreign_chat.session(), tmp_path / "s"))
    local, ch = pair(conn, tmp_path, Batch([*demo.spans, *framework.spans]))
    with local, ch:
        numbers = {c.span_id: c.index for c in all_calls(ch)}
        assert len(numbers) == 11 + 5
        seen = 0
        for key in tree_keys(local):
            parents: list[str | None] = [None]
            while parents:
                parent = parents.pop()
                nodes = ch.spans(key, parent, limit=1000)
                assert nodes == local.spans(key, parent, limit=1000)
                for n in nodes.items:
                    if n.call is not None:
                        assert n.call == numbers[n.span_id]
                        seen += 1
                    if n.children:
                        parents.append(n.span_id)
        assert seen == len(numbers)

"""The Collector's ClickHouse traces table in chDB: made with the exporter's DDL, filled with
rows mapped as the exporter maps OTLP, read back to the same trees, calls and contexts."""

from __future__ import annotations

import math

import pytest
from helpers import foreign_chat
from helpers.cli import cli_ok
from helpers.otel_rows import exported, through_table
from helpers.stores import all_calls, log_of, rebuilt_calls, served_views

from callctx.projection import otel_traces
from callctx.projection.batch import records
from callctx.store.connection import ChdbConnection
from callctx.store.local import LocalStore
from callctx.store.model import StoreUnavailable
from callctx.store.otel_table import OtelTable


@pytest.fixture(scope="module")
def table(chdb_folder):
    t = OtelTable(ChdbConnection(chdb_folder))
    t.create()
    yield t
    t.close()


# pdata's TestValueAsString (pdata/pcommon/value_test.go), value by value
@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("s", "s"), (42, "42"), (1.61803399, "1.61803399"), (0.000000009, "9e-9"), (math.inf, "Infinity"),
        (-math.inf, "-Infinity"), (math.nan, "NaN"), (True, "true"), ({}, "{}"), ([], "[]"), (None, ""),
        ({"strKey": "strVal", "nullKey": None, "mapKey": {"keyTwo": "valTwo", "keyOne": "valOne"}, "intKey": 7,
          "floatKey": 18.6, "boolKey": False, "arrKey": ["strOne", "strTwo"]},
         '{"arrKey":["strOne","strTwo"],"boolKey":false,"floatKey":18.6,"intKey":7,'
         '"mapKey":{"keyOne":"valOne","keyTwo":"valTwo"},"nullKey":null,"strKey":"strVal"}'),
        (["strVal", 7, 18.6, False, None], '["strVal",7,18.6,false,null]'),
        ({"key": '<a href="x">&y</a>'}, '{"key":"<a href=\\"x\\">&y</a>"}'),
        (1.0, "1"), (1e21, "1e+21"), (1.5e-7, "1.5e-7"), (1e-6, "0.000001"),
    ],
)  # fmt: skip
def test_values_are_stored_as_the_exporter_stores_them(value, text):
    assert otel_traces.as_string(value) == text


def test_our_agents_calls_read_from_the_table_rebuild_and_verify(table, tmp_path):
    cli_ok("demo", "--out", tmp_path / "demo", "--quiet")
    sent = exported(tmp_path / "demo" / "events.jsonl")
    back = through_table(table, sent)
    before, after = log_of(records(sent), tmp_path / "a"), log_of(records(back), tmp_path / "b")
    span_ids = [r.span_id for r in sent.spans]
    with LocalStore(before, finished=True) as a, LocalStore(after, finished=True) as b:
        assert served_views(b, span_ids) == served_views(a, span_ids)
        assert [c.span_id for c in all_calls(b)] == [c.span_id for c in all_calls(a)]
    rebuilt = rebuilt_calls(after)
    assert len(rebuilt) == 11 and all(r.verified for r in rebuilt)


def test_a_frameworks_calls_keep_their_messages_usage_and_cache_reasons(table, tmp_path):
    sent = exported(log_of(foreign_chat.session(), tmp_path))  # GenAI chat spans with cache busters
    back = through_table(table, sent)
    with LocalStore(log_of(records(sent), tmp_path / "a"), finished=True) as a, \
         LocalStore(log_of(records(back), tmp_path / "b"), finished=True) as b:  # fmt: skip
        calls = all_calls(b)
        assert [(c.model, c.usage, c.function) for c in calls] == [(c.model, c.usage, c.function) for c in all_calls(a)]
        assert [c.usage.cache_read for c in calls] == [0, foreign_chat.PREFIX, 0, 0, 0]
        reasons = [b.cache(n).reason for n in range(1, 6)]
        assert reasons == ["first", "hit", "prefix_changed", "ttl_expired", "model_changed"]
        assert b.cache(3).first_difference == a.cache(3).first_difference


def test_a_span_that_never_ended_reads_as_interrupted_again(table, tmp_path):
    from callctx.projection.events import SpanStarted
    from callctx.projection.schema import INTERRUPTED

    sent = exported(log_of([SpanStarted("ef" * 16, "1" * 16, None, "job", 10**18, {"x": 1})], tmp_path))
    assert sent.spans[0].started.attributes[INTERRUPTED] is True
    back = through_table(table, sent)
    assert back.spans[0].ended is None
    assert back.spans[0].started.attributes == {"x": "1", INTERRUPTED: True}  # the exporter keeps strings


def test_a_missing_table_or_another_schema_is_one_clear_line(table):
    missing = OtelTable(table.conn, table="nothing_here")
    with pytest.raises(StoreUnavailable, match=r"no table otel\.nothing_here .*clickhouse exporter"):
        missing.check()
    table._query(
        "CREATE TABLE IF NOT EXISTS otel.other (TraceId String, Duration Int64) ENGINE = MergeTree ORDER BY TraceId"
    )
    with pytest.raises(
        StoreUnavailable,
        match=r"otel\.other is not the clickhouse exporter's traces table: "
        r"expected Timestamp DateTime64\(9\) \(missing\)",
    ):
        OtelTable(table.conn, table="other").check()
    table.check()  # the exporter's own table passes


def test_a_hostile_table_name_is_refused_before_any_sql(table):
    with pytest.raises(StoreUnavailable, match="not a plain ClickHouse name"):
        OtelTable(table.conn, table="x; DROP TABLE otel.otel_traces")


def test_the_columns_the_table_has_for_a_spans_context_keep_it(table, tmp_path):
    """TraceState, ScopeVersion and Links.TraceState: what the exporter's table can hold of a
    span's context and scope survives it (schema URLs and dropped counts have no column)."""
    from callctx.projection.events import Origin, SpanLink
    from callctx.projection.spans import SpanData, to_records

    span = SpanData(
        trace_id="a7" * 16, span_id="12" * 8, parent_id=None, name="job", start_ns=10**18, end_ns=10**18 + 5,
        resource={"service.name": "svc"}, scope="agents",
        links=[SpanLink("cd" * 16, "34" * 8, {"why": "follows"}, "vendor=7")],
        origin=Origin(trace_state="congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", scope_version="1.4.2"),
    )  # fmt: skip
    sent = exported(log_of(to_records(span), tmp_path))
    (back,) = through_table(table, sent).spans
    assert back.started.origin == Origin(trace_state="congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", scope_version="1.4.2")
    assert back.ended is not None
    assert [(lk.trace_state, lk.attributes) for lk in back.ended.links] == [("vendor=7", {"why": "follows"})]

"""The Collector's ClickHouse traces table, in chDB (the ClickHouse engine in-process): made
with the exporter's own DDL, checked, written as the exporter writes it and read back a trace
at a time.

The DDL is the exporter's ``internal/sqltemplates/traces_table.sql`` (opentelemetry-collector-
contrib), rendered as the exporter renders it for a server without full-text indexes
(``MergeTree()``, bloom filter indexes, no TTL unless asked). Rows are
:class:`~callctx.projection.otel_traces.TraceRow`, mapped by :mod:`callctx.projection.otel_traces`
the way the exporter maps OTLP. This module is the groundwork of a ClickHouse store (the read
model over the table): what exists today makes, checks, fills and reads the table.

Threading: chDB runs one engine per process, bound to one folder, and one process per folder
(the engine locks it); one :class:`OtelTable` per folder, used from any thread (chDB's
connections are thread-safe). Errors: :class:`~callctx.store.model.StoreUnavailable` with one
line naming what was expected (chDB not installed, a folder another process holds, a missing
table or one of another schema); a malformed row is rejected by the decoder and counted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from callctx.projection.batch import Batch
from callctx.projection.otel_traces import TABLE, EventRow, LinkRow, TraceRow, decode_rows

from .model import StoreUnavailable

DATABASE: Final = "otel"  # the exporter's default database
MAX_TRACE_ROWS: Final = 100_000  # spans read for one trace at most

TRACES_TABLE_SQL: Final = """CREATE TABLE IF NOT EXISTS {db}.{table} (
    Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(T64, ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    ResourceAttributeItems Array(String) ALIAS arrayMap(kv -> concat(kv.1, '=', kv.2), \
CAST(ResourceAttributes, 'Array(Tuple(String, String))')),
    SpanAttributeItems Array(String) ALIAS arrayMap(kv -> concat(kv.1, '=', kv.2), \
CAST(SpanAttributes, 'Array(Tuple(String, String))')),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1,
    INDEX idx_lower_span_name lower(SpanName) TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 8
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
PRIMARY KEY (ServiceName, SpanName, toDateTime(Timestamp))
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
{ttl}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1"""

# the columns a reader needs, and their types as DESCRIBE TABLE prints them
COLUMNS: Final[dict[str, str]] = {
    "Timestamp": "DateTime64(9)",
    "TraceId": "String",
    "SpanId": "String",
    "ParentSpanId": "String",
    "TraceState": "String",
    "SpanName": "LowCardinality(String)",
    "SpanKind": "LowCardinality(String)",
    "ServiceName": "LowCardinality(String)",
    "ResourceAttributes": "Map(LowCardinality(String), String)",
    "ScopeName": "String",
    "ScopeVersion": "String",
    "SpanAttributes": "Map(LowCardinality(String), String)",
    "Duration": "UInt64",
    "StatusCode": "LowCardinality(String)",
    "StatusMessage": "String",
    "Events.Timestamp": "Array(DateTime64(9))",
    "Events.Name": "Array(LowCardinality(String))",
    "Events.Attributes": "Array(Map(LowCardinality(String), String))",
    "Links.TraceId": "Array(String)",
    "Links.SpanId": "Array(String)",
    "Links.TraceState": "Array(String)",
    "Links.Attributes": "Array(Map(LowCardinality(String), String))",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_SELECT: Final = (
    "SELECT toUnixTimestamp64Nano(Timestamp) AS start_ns, TraceId, SpanId, ParentSpanId, TraceState, "
    "SpanName, SpanKind, ServiceName, ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, "
    "Duration, StatusCode, StatusMessage, "
    "arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp) AS event_ns, Events.Name, Events.Attributes, "
    "Links.TraceId, Links.SpanId, Links.TraceState, Links.Attributes"
)


def _identifier(name: str, what: str) -> str:
    if not _NAME.fullmatch(name):
        raise StoreUnavailable(f"{what} {name[:80]!r} is not a plain ClickHouse name (letters, digits, _)")
    return f"`{name}`"


def _time(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"  # DateTime64(9) as text: exact


def traces_table_sql(database: str = DATABASE, table: str = TABLE, *, ttl_days: int | None = None) -> str:
    """The exporter's CREATE TABLE for ``database.table`` (``ttl_days``: the exporter's ``ttl``)."""
    ttl = f"TTL toDateTime(Timestamp) + toIntervalDay({int(ttl_days)})" if ttl_days else ""
    return TRACES_TABLE_SQL.format(db=_identifier(database, "database"), table=_identifier(table, "table"), ttl=ttl)


class OtelTable:
    """The traces table in a chDB folder (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, database: str = DATABASE, table: str = TABLE) -> None:
        try:
            import chdb
        except ImportError:
            raise StoreUnavailable("chDB is not installed: pip install 'callctx[chdb]'") from None
        self.path = os.fspath(path)
        self.name = f"{_identifier(database, 'database')}.{_identifier(table, 'table')}"
        self._database, self._table = database, table
        try:
            self._conn: Any = chdb.connect(self.path)
        except Exception as e:  # noqa: BLE001 - chDB raises RuntimeError and its own errors
            raise StoreUnavailable(f"cannot open the chDB folder {self.path}: {_first_line(e)}") from None

    def _query(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        try:
            out = self._conn.query(sql, "JSONEachRow", params=params or {})
        except Exception as e:  # noqa: BLE001
            raise StoreUnavailable(f"{self.name}: {_first_line(e)}") from None
        return [json.loads(line) for line in out.bytes().splitlines() if line]

    def create(self, *, ttl_days: int | None = None) -> None:
        """Make the database and the table as the exporter does (``CREATE ... IF NOT EXISTS``)."""
        self._query(f"CREATE DATABASE IF NOT EXISTS {_identifier(self._database, 'database')}")
        self._query(traces_table_sql(self._database, self._table, ttl_days=ttl_days))

    def check(self) -> None:
        """:class:`StoreUnavailable` when the table is missing or lacks a column a reader needs,
        or has it with another type; the error names what was expected."""
        exists = self._query(
            "SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = {t:String}",
            {"db": self._database, "t": self._table},
        )
        if not exists or not int(exists[0]["n"]):
            raise StoreUnavailable(
                f"no table {self._database}.{self._table} in {self.path}: expected the traces table "
                "the Collector's clickhouse exporter creates"
            )
        described = {r["name"]: r["type"] for r in self._query(f"DESCRIBE TABLE {self.name}")}
        wrong = [
            f"{name} {want} (found {described[name]})" if name in described else f"{name} {want} (missing)"
            for name, want in COLUMNS.items()
            if described.get(name) != want
        ]
        if wrong:
            raise StoreUnavailable(
                f"{self._database}.{self._table} is not the clickhouse exporter's traces table: expected "
                + "; ".join(wrong[:5])
                + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
            )

    def insert(self, rows: Iterable[TraceRow]) -> int:
        """Write rows as the exporter does, in one INSERT; how many were written."""
        lines = [msgspec.json.encode(_json_row(r)) for r in rows]
        if not lines:
            return 0
        body = b"\n".join(lines).decode()
        self._query(f"INSERT INTO {self.name} FORMAT JSONEachRow\n{body}")
        return len(lines)

    def trace(self, trace_id: str) -> Batch:
        """A trace's spans as records (at most ``MAX_TRACE_ROWS``), by start."""
        rows = self._query(
            f"{_SELECT} FROM {self.name} WHERE TraceId = {{t:String}} "
            f"ORDER BY Timestamp, SpanId LIMIT {MAX_TRACE_ROWS}",
            {"t": trace_id},
        )
        return decode_rows(_row(r) for r in rows)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing is best effort
            self._conn.close()


def _json_row(r: TraceRow) -> dict[str, Any]:
    return {
        "Timestamp": _time(r.start_ns), "TraceId": r.trace_id, "SpanId": r.span_id,
        "ParentSpanId": r.parent_span_id, "TraceState": r.trace_state, "SpanName": r.span_name,
        "SpanKind": r.span_kind, "ServiceName": r.service_name, "ResourceAttributes": r.resource_attributes,
        "ScopeName": r.scope_name, "ScopeVersion": r.scope_version, "SpanAttributes": r.span_attributes,
        "Duration": r.duration, "StatusCode": r.status_code, "StatusMessage": r.status_message,
        "Events.Timestamp": [_time(e.time_ns) for e in r.events], "Events.Name": [e.name for e in r.events],
        "Events.Attributes": [e.attributes for e in r.events],
        "Links.TraceId": [lk.trace_id for lk in r.links], "Links.SpanId": [lk.span_id for lk in r.links],
        "Links.TraceState": [lk.trace_state for lk in r.links], "Links.Attributes": [lk.attributes for lk in r.links],
    }  # fmt: skip


def _row(r: dict[str, Any]) -> TraceRow:
    events = [
        EventRow(int(t), n, a) for t, n, a in zip(r["event_ns"], r["Events.Name"], r["Events.Attributes"], strict=False)
    ]
    columns = (r["Links.TraceId"], r["Links.SpanId"], r["Links.TraceState"], r["Links.Attributes"])
    links = [LinkRow(t, s, st, a) for t, s, st, a in zip(*columns, strict=False)]
    return TraceRow(
        start_ns=int(r["start_ns"]), trace_id=r["TraceId"], span_id=r["SpanId"], parent_span_id=r["ParentSpanId"],
        trace_state=r["TraceState"], span_name=r["SpanName"], span_kind=r["SpanKind"], service_name=r["ServiceName"],
        resource_attributes=r["ResourceAttributes"], scope_name=r["ScopeName"], scope_version=r["ScopeVersion"],
        span_attributes=r["SpanAttributes"], duration=int(r["Duration"]), status_code=r["StatusCode"],
        status_message=r["StatusMessage"], events=events, links=links,
    )  # fmt: skip


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


__all__ = ["COLUMNS", "DATABASE", "TRACES_TABLE_SQL", "OtelTable", "traces_table_sql"]

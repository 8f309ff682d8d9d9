"""The Collector's ClickHouse traces table: made with the exporter's own DDL, checked, written
as the exporter writes it, and read back a span, a trace or a time range at a time.

The DDL is the exporter's (opentelemetry-collector-contrib, ``exporter/clickhouseexporter/
internal/sqltemplates``): ``traces_table.sql`` rendered as the exporter renders it for a server
without full-text indexes (``MergeTree()``, bloom filter indexes, no TTL unless asked), or
``traces_json_table.sql`` for the exporter's ``json: true`` (attributes in ``JSON`` columns),
and ``traces_id_ts_lookup_table.sql`` with its materialized view (each trace's first and last
start, which bounds a trace's read by time). Rows are
:class:`~callctx.projection.otel_traces.TraceRow`, mapped by :mod:`callctx.projection.otel_traces`
the way the exporter maps OTLP.

Which variant a table is, is read from its columns (:meth:`OtelTable.check`). The JSON
variant holds typed values, and ClickHouse keeps a dotted key (``gen_ai.usage.input_tokens``)
as nested paths: it is read back flattened to dotted keys and every value as the Map variant
holds it (``AsString``), so both variants decode to the same records.

Every read is bounded: by trace ids (and their time range), by span, or by ``LIMIT``; a
trace's read at most ``MAX_TRACE_ROWS`` rows.

Threading: as the connection's (any thread). Errors:
:class:`~callctx.store.model.StoreUnavailable` with one line naming what was expected (a
missing table or one of another schema, a refused query); a malformed row is rejected by the
decoder and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from callctx.projection.batch import Batch, Received
from callctx.projection.otel_traces import TABLE, EventRow, LinkRow, TraceRow, as_string, decode_rows, row_of

from .connection import DATABASE, Connection, Param
from .connection import _checked as _checked_name
from .model import StoreUnavailable

MAX_TRACE_ROWS: Final = 100_000  # spans read for one trace at most
Variant = Literal["map", "json"]

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
TRACES_JSON_TABLE_SQL: Final = """CREATE TABLE IF NOT EXISTS {db}.{table} (
    Timestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes JSON CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes JSON CODEC(ZSTD(1)),
    Duration UInt64 CODEC(ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes JSON
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes JSON
    ) CODEC(ZSTD(1)),
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
{ttl}
SETTINGS index_granularity=8192, ttl_only_drop_parts = 1"""

# traces_id_ts_lookup_table.sql and traces_id_ts_lookup_mv.sql
TRACE_ID_TS_SQL: Final = """CREATE TABLE IF NOT EXISTS {db}.{table}_trace_id_ts (
    TraceId String CODEC(ZSTD(1)),
    Start DateTime CODEC(Delta, ZSTD(1)),
    End DateTime CODEC(Delta, ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.01) GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Start)
ORDER BY (TraceId, Start)
{ttl}
SETTINGS index_granularity=8192, ttl_only_drop_parts = 1"""
TRACE_ID_TS_MV_SQL: Final = """CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.{table}_trace_id_ts_mv
TO {db}.{table}_trace_id_ts
AS SELECT
    TraceId,
    min(Timestamp) as Start,
    max(Timestamp) as End
FROM {db}.{table}
WHERE TraceId != ''
GROUP BY TraceId"""

_JSON_TYPES: Final = {
    "ResourceAttributes": "JSON", "SpanAttributes": "JSON", "Events.Attributes": "Array(JSON)",
    "Links.Attributes": "Array(JSON)",
}  # fmt: skip
_BETWEEN: Final = "Timestamp BETWEEN fromUnixTimestamp64Nano({lo:Int64}) AND fromUnixTimestamp64Nano({hi:Int64})"


MAX_TIME: Final = (1 << 63) - 1  # DateTime64(9) ends at int64's nanoseconds (2262-04-11)


def _time(ns: int) -> str:
    """A time as DateTime64(9) text, exact and in no time zone: seconds since the epoch (ten
    digits at least, or ClickHouse reads a short number as a date) and nanoseconds; a time
    past what the column holds is written as its last instant."""
    ns = min(max(ns, 0), MAX_TIME)
    return f"{ns // 1_000_000_000:010d}.{ns % 1_000_000_000:09d}"


def _ttl(ttl_days: int | None, column: str = "toDateTime(Timestamp)") -> str:
    return f"TTL {column} + toIntervalDay({int(ttl_days)})" if ttl_days else ""


def traces_table_sql(
    database: str = DATABASE, table: str = TABLE, *, ttl_days: int | None = None, variant: Variant = "map"
) -> str:
    """The exporter's CREATE TABLE for ``database.table`` (``ttl_days``: the exporter's ``ttl``;
    ``variant``: ``json`` for its ``json: true``)."""
    sql = TRACES_JSON_TABLE_SQL if variant == "json" else TRACES_TABLE_SQL
    return sql.format(db=_identifier(database, "database"), table=_identifier(table, "table"), ttl=_ttl(ttl_days))


def _identifier(name: str, what: str) -> str:
    return f"`{_checked_name(name, what)}`"


class OtelTable:
    """The traces table ``database.table`` of one ClickHouse (see the module docstring)."""

    def __init__(self, conn: Connection, *, database: str = DATABASE, table: str = TABLE) -> None:
        self.conn = conn
        self.database, self.table = database, table
        self.name = f"{_identifier(database, 'database')}.{_identifier(table, 'table')}"
        self.variant: Variant = "map"
        self.has_lookup = False  # the exporter's TraceId -> time range table is there

    @property
    def source(self) -> str:
        return self.conn.source

    def _query(self, sql: str, params: Mapping[str, Param] | None = None) -> list[dict[str, Any]]:
        return self.conn.query(sql, params)

    def create(self, *, ttl_days: int | None = None, variant: Variant = "map") -> None:
        """Make the database, the table and its TraceId lookup as the exporter does
        (``CREATE ... IF NOT EXISTS``)."""
        self.conn.command(f"CREATE DATABASE IF NOT EXISTS {_identifier(self.database, 'database')}")
        self.conn.command(traces_table_sql(self.database, self.table, ttl_days=ttl_days, variant=variant))
        self.conn.command(_lookup_sql(TRACE_ID_TS_SQL, self.database, self.table, ttl_days))
        self.conn.command(_lookup_sql(TRACE_ID_TS_MV_SQL, self.database, self.table, ttl_days))
        self.check()

    def check(self) -> None:
        """:class:`StoreUnavailable` when the table is missing or lacks a column a reader needs,
        or has it with another type; the error names what was expected. Learns the variant."""
        exists = self._query(
            "SELECT name FROM system.tables WHERE database = {db:String} AND name IN ({t:String}, {lk:String})",
            {"db": self.database, "t": self.table, "lk": f"{self.table}_trace_id_ts"},
        )
        names = {r["name"] for r in exists}
        if self.table not in names:
            raise StoreUnavailable(
                f"no table {self.database}.{self.table} in {self.source}: expected the traces table "
                "the Collector's clickhouse exporter creates"
            )
        self.has_lookup = f"{self.table}_trace_id_ts" in names
        described = {r["name"]: r["type"] for r in self._query(f"DESCRIBE TABLE {self.name}")}
        variant: Variant = "json" if described.get("SpanAttributes") == "JSON" else "map"
        wanted = {**COLUMNS, **_JSON_TYPES} if variant == "json" else COLUMNS
        wrong = [
            f"{name} {want} (found {described[name]})" if name in described else f"{name} {want} (missing)"
            for name, want in wanted.items()
            if described.get(name) != want
        ]
        if wrong:
            raise StoreUnavailable(
                f"{self.database}.{self.table} is not the clickhouse exporter's traces table: expected "
                + "; ".join(wrong[:5])
                + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
            )
        self.variant = variant

    # ---- writing ------------------------------------------------------------------------------
    def insert(self, rows: Iterable[TraceRow]) -> int:
        """Write rows as the exporter does, in one INSERT; how many were written."""
        lines = [msgspec.json.encode(_json_row(r)) for r in rows]
        if lines:
            self.conn.insert(self.name, b"\n".join(lines))
        return len(lines)

    def rows_of(self, spans: Iterable[Received]) -> list[TraceRow]:
        """Received spans as the exporter's rows for this table's variant (the Map variant's
        strings, or the JSON variant's typed values)."""
        if self.variant == "json":
            return [row_of(r, value=_json_value) for r in spans]
        return [row_of(r) for r in spans]

    def write(self, spans: Iterable[Received]) -> int:
        """Write received spans as the exporter writes them, in one INSERT."""
        return self.insert(self.rows_of(spans))

    # ---- reading ------------------------------------------------------------------------------
    def count(self) -> int:
        """How many rows the table holds (ClickHouse answers from its parts: no scan)."""
        rows = self._query(f"SELECT count() AS n FROM {self.name}")
        return int(rows[0]["n"]) if rows else 0

    def spans_of(self, trace_ids: Sequence[str], *, since_ns: int | None = None, until_ns: int | None = None,
                 limit: int = MAX_TRACE_ROWS) -> Batch:  # fmt: skip
        """The spans of ``trace_ids`` as records (at most ``limit``), by start; ``since_ns`` and
        ``until_ns`` bound their starts when known (they prune the table's parts)."""
        if not trace_ids:
            return Batch([], 0, [])
        where = ["TraceId IN {t:Array(String)}"]
        params: dict[str, Param] = {"t": list(trace_ids)}
        if since_ns is not None and until_ns is not None:
            where.append(
                "Timestamp BETWEEN fromUnixTimestamp64Nano({lo:Int64}) AND fromUnixTimestamp64Nano({hi:Int64})"
            )
            params["lo"], params["hi"] = since_ns, until_ns
        elif self.has_lookup:
            where.append(
                f"Timestamp BETWEEN (SELECT min(Start) FROM {self._lookup} WHERE TraceId IN {{t:Array(String)}}) "
                f"AND (SELECT max(End) + 1 FROM {self._lookup} WHERE TraceId IN {{t:Array(String)}})"
            )
        return self._batch(" AND ".join(where), params, limit)

    def trace(self, trace_id: str) -> Batch:
        """A trace's spans as records (at most ``MAX_TRACE_ROWS``), by start."""
        return self.spans_of([trace_id])

    def spans_by_id(self, keys: Sequence[tuple[str, str]]) -> Batch:
        """The spans named by (trace id, span id), as records."""
        if not keys:
            return Batch([], 0, [])
        params = {"t": sorted({t for t, _ in keys}), "s": sorted({s for _, s in keys})}
        where = "TraceId IN {t:Array(String)} AND SpanId IN {s:Array(String)}"
        if self.has_lookup:
            where += (
                f" AND Timestamp BETWEEN (SELECT min(Start) FROM {self._lookup} WHERE TraceId IN {{t:Array(String)}})"
                f" AND (SELECT max(End) + 1 FROM {self._lookup} WHERE TraceId IN {{t:Array(String)}})"
            )
        wanted = set(keys)
        batch = self._batch(where, params, 10 * len(keys) + 10)
        batch.spans = [r for r in batch.spans if (r.trace_id, r.span_id) in wanted]
        return batch

    def present(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of the spans named by (trace id, span id) the table holds."""
        if not keys:
            return set()
        params = {"t": sorted({t for t, _ in keys}), "s": sorted({s for _, s in keys})}
        rows = self._query(
            f"SELECT DISTINCT TraceId, SpanId FROM {self.name} WHERE TraceId IN {{t:Array(String)}} "
            f"AND SpanId IN {{s:Array(String)}} LIMIT {len(keys) * 2 + 10}",
            params,
        )
        wanted = set(keys)
        return {k for k in ((r["TraceId"], r["SpanId"]) for r in rows) if k in wanted}

    def trace_of(self, span_id: str) -> str | None:
        """The trace a span id belongs to, or None."""
        rows = self._query(f"SELECT TraceId FROM {self.name} WHERE SpanId = {{s:String}} LIMIT 1", {"s": span_id})
        return rows[0]["TraceId"] if rows else None

    @property
    def _lookup(self) -> str:
        return f"{_identifier(self.database, 'database')}.`{self.table}_trace_id_ts`"

    def select(self) -> str:
        """The columns a span is read back with, for this variant."""
        return _SELECT_JSON if self.variant == "json" else _SELECT

    def _batch(self, where: str, params: Mapping[str, Param], limit: int) -> Batch:
        rows = self._query(
            f"{self.select()} FROM {self.name} WHERE {where} ORDER BY Timestamp, SpanId LIMIT {int(limit)}", params
        )
        return decode_rows(self.row(r) for r in rows)

    def row(self, r: dict[str, Any]) -> TraceRow:
        """A row as :meth:`select` reads it, as a :class:`TraceRow`."""
        return _row(r, flat=self.variant == "json")

    def close(self) -> None:
        self.conn.close()


def _lookup_sql(template: str, database: str, table: str, ttl_days: int | None) -> str:
    db = _identifier(database, "database")
    _checked_name(table + "_trace_id_ts", "table")
    return template.format(db=db, table=table, ttl=_ttl(ttl_days, "toDateTime(Start)"))


_COLUMNS_READ: Final = (
    "toUnixTimestamp64Nano(Timestamp) AS start_ns, TraceId, SpanId, ParentSpanId, TraceState, "
    "SpanName, SpanKind, ServiceName, {res} AS ResourceAttributes, ScopeName, ScopeVersion, {span} AS SpanAttributes, "
    "Duration, StatusCode, StatusMessage, "
    "arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp) AS event_ns, Events.Name, {ev} AS ev_attrs, "
    "Links.TraceId, Links.SpanId, Links.TraceState, {links} AS link_attrs"
)
_SELECT: Final = "SELECT " + _COLUMNS_READ.format(
    res="ResourceAttributes", span="SpanAttributes", ev="Events.Attributes", links="Links.Attributes"
)
_SELECT_JSON: Final = "SELECT " + _COLUMNS_READ.format(
    res="toJSONString(ResourceAttributes)", span="toJSONString(SpanAttributes)",
    ev="arrayMap(a -> toJSONString(a), Events.Attributes)", links="arrayMap(a -> toJSONString(a), Links.Attributes)",
)  # fmt: skip


def _json_value(value: Any) -> Any:
    """A value as the JSON variant stores it: JSON's own types (``AsRaw``); what JSON cannot
    hold (NaN, infinities, bytes) as the Map variant's string."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else as_string(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return as_string(value)


_NO_EVENTS: Final[dict[str, list[Any]]] = {"Events.Timestamp": [], "Events.Name": [], "Events.Attributes": []}
_NO_LINKS: Final[dict[str, list[Any]]] = {
    "Links.TraceId": [], "Links.SpanId": [], "Links.TraceState": [], "Links.Attributes": []
}  # fmt: skip


def _json_row(r: TraceRow) -> dict[str, Any]:
    events = r.events
    links = r.links
    return {
        "Timestamp": _time(r.start_ns), "TraceId": r.trace_id, "SpanId": r.span_id,
        "ParentSpanId": r.parent_span_id, "TraceState": r.trace_state, "SpanName": r.span_name,
        "SpanKind": r.span_kind, "ServiceName": r.service_name, "ResourceAttributes": r.resource_attributes,
        "ScopeName": r.scope_name, "ScopeVersion": r.scope_version, "SpanAttributes": r.span_attributes,
        "Duration": r.duration, "StatusCode": r.status_code, "StatusMessage": r.status_message,
        **({"Events.Timestamp": [_time(e.time_ns) for e in events], "Events.Name": [e.name for e in events],
            "Events.Attributes": [e.attributes for e in events]} if events else _NO_EVENTS),
        **({"Links.TraceId": [lk.trace_id for lk in links], "Links.SpanId": [lk.span_id for lk in links],
            "Links.TraceState": [lk.trace_state for lk in links],
            "Links.Attributes": [lk.attributes for lk in links]} if links else _NO_LINKS),
    }  # fmt: skip


def _row(r: dict[str, Any], *, flat: bool) -> TraceRow:
    attrs = _flattened if flat else _as_is
    events = [
        EventRow(int(t), n, attrs(a)) for t, n, a in zip(r["event_ns"], r["Events.Name"], r["ev_attrs"], strict=False)
    ]
    columns = (r["Links.TraceId"], r["Links.SpanId"], r["Links.TraceState"], r["link_attrs"])
    links = [LinkRow(t, s, st, attrs(a)) for t, s, st, a in zip(*columns, strict=False)]
    return TraceRow(
        start_ns=int(r["start_ns"]), trace_id=r["TraceId"], span_id=r["SpanId"], parent_span_id=r["ParentSpanId"],
        trace_state=r["TraceState"], span_name=r["SpanName"], span_kind=r["SpanKind"], service_name=r["ServiceName"],
        resource_attributes=attrs(r["ResourceAttributes"]), scope_name=r["ScopeName"], scope_version=r["ScopeVersion"],
        span_attributes=attrs(r["SpanAttributes"]), duration=int(r["Duration"]), status_code=r["StatusCode"],
        status_message=r["StatusMessage"], events=events, links=links,
    )  # fmt: skip


def _as_is(attrs: dict[str, str]) -> dict[str, str]:
    return attrs


def _flattened(text: str) -> dict[str, str]:
    """A JSON column's value (nested paths) as the Map variant holds it: dotted keys, each
    value as ``AsString``."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif prefix:
            out[prefix] = as_string(value)

    try:
        walk("", json.loads(text) if text else {})
    except ValueError:
        return {}
    return out


__all__ = [
    "COLUMNS",
    "MAX_TRACE_ROWS",
    "TRACES_JSON_TABLE_SQL",
    "TRACES_TABLE_SQL",
    "OtelTable",
    "Variant",
    "traces_table_sql",
]

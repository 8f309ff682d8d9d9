"""Where a ClickHouse store is, and the one way callctx talks to it: SQL in, JSON rows out.

A store is named by a URL (:func:`parse`):

* ``chdb:PATH``: chDB, the ClickHouse engine in-process, over the folder ``PATH`` (one machine,
  and the tests). The ``chdb`` extra installs it.
* ``clickhouse://[user[:password]@]host[:port]/database?table=otel_traces``: a ClickHouse
  server over HTTP (port 8123 by default; ``clickhouses://`` for HTTPS, port 8443), with the
  official ``clickhouse-connect`` client (the ``clickhouse`` extra). The password may be left
  out of the URL and given in ``$CALLCTX_CLICKHOUSE_PASSWORD`` instead.

Both take the same SQL: queries with server-side parameters (``{name:Type}``, values passed
apart from the text, never spliced in), answered as ``JSONEachRow``; inserts as
``JSONEachRow`` bodies. :attr:`Connection.source` names the store for people, without its
password: it is what errors and ``state().source`` print.

Threading: a connection may be used from any thread (chDB's engine is entered under a lock; the
HTTP client pools its connections). Errors: :class:`~callctx.store.model.StoreUnavailable`,
with one line saying what failed (the client not installed, a folder another process holds, a
server that does not answer, a query the server refused), the password never in it.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, Protocol

import msgspec

from callctx.projection.otel_traces import TABLE

from .model import StoreUnavailable

DATABASE: Final = "otel"  # the exporter's default database
HTTP_PORT: Final = 8123
HTTPS_PORT: Final = 8443
PASSWORD_ENV: Final = "CALLCTX_CLICKHOUSE_PASSWORD"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

Param = str | int | Sequence[str] | Sequence[int]


class StoreURL(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed store URL (see the module docstring); ``password`` is never printed."""

    scheme: Literal["chdb", "clickhouse", "clickhouses"]
    path: str = ""  # chdb: the folder
    host: str = ""
    port: int = 0
    user: str | None = None
    password: str | None = msgspec.field(default=None)
    database: str = DATABASE
    table: str = TABLE

    @property
    def source(self) -> str:
        """The URL as people read it: no password."""
        where = f"?table={self.table}"
        if self.scheme == "chdb":
            return f"chdb:{self.path}{where if self.table != TABLE else ''}"
        user = f"{self.user}@" if self.user else ""
        return f"{self.scheme}://{user}{self.host}:{self.port}/{self.database}{where}"

    def __repr__(self) -> str:
        return f"StoreURL({self.source!r})"


def is_store_url(text: str) -> bool:
    """Does ``text`` name a ClickHouse store (rather than an event log's path)?"""
    return text.startswith(("chdb:", "clickhouse://", "clickhouses://"))


def parse(url: str) -> StoreURL:
    """``url`` as a :class:`StoreURL`; :class:`StoreUnavailable` saying the expected form when
    it is not one."""
    expected = "expected chdb:PATH or clickhouse://[user:password@]host:8123/database?table=otel_traces"
    if url.startswith("chdb:"):
        rest = url[len("chdb:") :]
        if rest.startswith("//"):
            rest = rest[2:]
        path, _, query = rest.partition("?")
        if not path:
            raise StoreUnavailable(f"{url!r} names no folder: {expected}")
        options = _options(query, url, expected)
        return StoreURL(scheme="chdb", path=path, database=options.get("database", DATABASE),
                        table=options.get("table", TABLE))  # fmt: skip
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("clickhouse", "clickhouses") or not parts.hostname:
        raise StoreUnavailable(f"{_unsecret(url)!r} is not a store URL: {expected}")
    try:
        port = parts.port
    except ValueError:
        raise StoreUnavailable(f"{_unsecret(url)!r} has a port that is not a number: {expected}") from None
    database = urllib.parse.unquote(parts.path.strip("/")) or DATABASE
    options = _options(parts.query, url, expected)
    password = urllib.parse.unquote(parts.password) if parts.password is not None else os.environ.get(PASSWORD_ENV)
    return StoreURL(
        scheme=parts.scheme,  # type: ignore[arg-type]
        host=parts.hostname,
        port=port or (HTTPS_PORT if parts.scheme == "clickhouses" else HTTP_PORT),
        user=urllib.parse.unquote(parts.username) if parts.username else None,
        password=password,
        database=_checked(database, "database"),
        table=options.get("table", TABLE),
    )


def _options(query: str, url: str, expected: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, values in urllib.parse.parse_qs(query, keep_blank_values=True).items():
        if key not in ("table", "database"):
            raise StoreUnavailable(f"{_unsecret(url)!r}: unknown option {key!r} (table and database are known)")
        out[key] = _checked(values[-1], key)
    return out


def _checked(name: str, what: str) -> str:
    if not _NAME.fullmatch(name):
        raise StoreUnavailable(f"{what} {name[:80]!r} is not a plain ClickHouse name (letters, digits, _)")
    return name


def _unsecret(url: str) -> str:
    """``url`` with any password in it replaced by ``***``."""
    return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)


class Connection(Protocol):
    """SQL to one ClickHouse (see the module docstring for the contract)."""

    source: str

    def query(self, sql: str, params: Mapping[str, Param] | None = None) -> list[dict[str, Any]]:
        """The rows ``sql`` answers, each a dict of column to value (JSON types)."""
        ...

    def command(self, sql: str) -> None:
        """Run a statement that answers nothing (DDL)."""
        ...

    def insert(self, table: str, body: bytes) -> None:
        """Insert a ``JSONEachRow`` body into ``table`` (a quoted ``db.table``)."""
        ...

    def close(self) -> None: ...


def connect(url: StoreURL) -> Connection:
    """A connection to the store ``url`` names (:class:`StoreUnavailable` when it cannot be made)."""
    if url.scheme == "chdb":
        return ChdbConnection(url.path)
    return HttpConnection(url)


_decode_row: Final = msgspec.json.Decoder(dict[str, Any]).decode


def _rows(out: bytes) -> list[dict[str, Any]]:
    return [_decode_row(line) for line in out.splitlines() if line]


def first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return _unsecret(text.splitlines()[0])[:300]


class ChdbConnection:
    """chDB over one folder: the engine in this process (one folder per process, and one
    process per folder: chDB locks it)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            import chdb
        except ImportError:
            raise StoreUnavailable("chDB is not installed: pip install 'callctx[chdb]'") from None
        self.path = os.fspath(path)
        self.source = f"chdb:{self.path}"
        self._lock = threading.Lock()
        self._spool: str | None = None  # where insert bodies wait for the engine, a moment each
        try:
            self._conn: Any = chdb.connect(self.path)
        except Exception as e:  # noqa: BLE001 - chDB raises RuntimeError and its own errors
            raise StoreUnavailable(f"cannot open the chDB folder {self.path}: {first_line(e)}") from None

    def _run(self, sql: str, params: Mapping[str, Param] | None) -> bytes:
        values = {k: _literal(v) for k, v in (params or {}).items()}
        try:
            with self._lock:
                return bytes(self._conn.query(sql, "JSONEachRow", params=values).bytes())
        except Exception as e:  # noqa: BLE001
            raise StoreUnavailable(f"{self.source}: {first_line(e)}") from None

    def query(self, sql: str, params: Mapping[str, Param] | None = None) -> list[dict[str, Any]]:
        return _rows(self._run(sql, params))

    def command(self, sql: str) -> None:
        self._run(sql, None)

    def insert(self, table: str, body: bytes) -> None:
        """The body goes through a file only its owner reads, removed at once: the engine parses
        a file ten times faster than the same rows inlined in the statement."""
        if self._spool is None:
            self._spool = tempfile.mkdtemp(prefix="callctx-chdb-")  # mode 0700
        fd, path = tempfile.mkstemp(suffix=".jsonl", dir=self._spool)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body)
            self._run(f"INSERT INTO {table} SELECT * FROM file({_quoted(path)}, 'JSONEachRow')", None)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing is best effort
            self._conn.close()
        if self._spool is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self._spool)


def _literal(value: Param) -> str:
    """A parameter as chDB takes it: text as it is, numbers in decimal, arrays as literals."""
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return "[" + ",".join(str(v) if isinstance(v, int) else _quoted(v) for v in value) + "]"


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class HttpConnection:
    """A ClickHouse server over HTTP, with ``clickhouse-connect`` (or any client of its
    ``Client`` interface, ``client``: chDB through its ``chdb://`` DSN in the tests)."""

    def __init__(self, url: StoreURL | None = None, *, client: Any = None, source: str | None = None) -> None:
        self.source = source or (url.source if url is not None else "clickhouse")
        if client is None:
            if url is None:
                raise StoreUnavailable("no ClickHouse URL and no client")
            try:
                import clickhouse_connect
            except ImportError:
                raise StoreUnavailable(
                    "clickhouse-connect is not installed: pip install 'callctx[clickhouse]'"
                ) from None
            try:
                client = clickhouse_connect.get_client(
                    host=url.host, port=url.port, username=url.user or "default", password=url.password or "",
                    database=url.database, secure=url.scheme == "clickhouses", connect_timeout=10,
                    send_receive_timeout=60, autogenerate_session_id=False,
                )  # fmt: skip
            except Exception as e:  # noqa: BLE001 - the client raises its own errors and OSError
                raise StoreUnavailable(f"cannot reach ClickHouse at {self.source}: {first_line(e)}") from None
        self._client = client

    def query(self, sql: str, params: Mapping[str, Param] | None = None) -> list[dict[str, Any]]:
        try:
            out = self._client.raw_query(sql, parameters=dict(params or {}), fmt="JSONEachRow")
        except Exception as e:  # noqa: BLE001
            raise StoreUnavailable(f"{self.source}: {first_line(e)}") from None
        return _rows(bytes(out))

    def command(self, sql: str) -> None:
        try:
            self._client.command(sql)
        except Exception as e:  # noqa: BLE001
            raise StoreUnavailable(f"{self.source}: {first_line(e)}") from None

    def insert(self, table: str, body: bytes) -> None:
        try:
            self._client.raw_insert(table.replace("`", ""), insert_block=body, fmt="JSONEachRow")
        except Exception as e:  # noqa: BLE001
            raise StoreUnavailable(f"{self.source}: {first_line(e)}") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()


__all__ = [
    "DATABASE",
    "PASSWORD_ENV",
    "ChdbConnection",
    "Connection",
    "HttpConnection",
    "StoreURL",
    "connect",
    "first_line",
    "is_store_url",
    "parse",
]

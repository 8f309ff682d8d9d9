"""Exit codes, the command line's error, and checks of its arguments shared by the commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import msgspec

from callctx.projection.calls import ModelCall
from callctx.projection.errors import CallctxError
from callctx.projection.events import decode
from callctx.store.clickhouse import ClickHouseStore
from callctx.store.connection import parse
from callctx.store.local import LocalStore
from callctx.store.model import ANY, MAX_LIMIT, Filter, Store, StoreState, StoreUnavailable

EXIT_OK, EXIT_MISMATCH, EXIT_INPUT = 0, 1, 2


class CliError(CallctxError):
    def __init__(self, message: str, code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.code = code


def check_event_log(path: str) -> Path:
    """``path`` as an event log, or a :class:`CliError` (exit 2) saying why it is not one."""
    p = Path(path)
    if not p.is_file():
        raise CliError(f"no event log at {p}")
    try:
        with open(p, "rb") as f:
            first = f.readline(1 << 20)
    except OSError as e:
        raise CliError(f"cannot read {p}: {e.strerror}") from None
    if not first.strip():
        raise CliError(f"{p} is not a callctx event log (it is empty)")
    try:
        decode(first)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise CliError(f"{p} is not a callctx event log (its first line is not a callctx record: {e})") from None
    return p


def open_log(path: str, err: TextIO) -> LocalStore:
    """The local store over the log at ``path``, indexed in memory (a :class:`CliError`, exit
    2, when there is no log there or it is not an event log); damaged records are reported on
    ``err``, five at most."""
    p = Path(path)
    if not p.exists():
        raise CliError(f"no event log at {p}")
    if p.is_dir():
        raise CliError(f"{p} is a folder, not an event log")
    store = LocalStore(p)
    try:
        state = store.state()
    except StoreUnavailable as e:
        store.close()
        raise CliError(str(e)) from None
    damage = store.damage
    bad = [d for d in damage if not d.torn]
    if bad and not state.spans and not state.calls:
        store.close()
        raise CliError(f"{p} is not a callctx event log ({bad[0].reason} at line {bad[0].line})")
    for d in damage[:5]:
        err.write(f"warning: {p}: line {d.line}: {d.reason}; skipped\n")
    if state.damaged > 5:
        err.write(f"warning: {p}: {state.damaged - 5} more damaged records skipped\n")
    return store


def add_source(p: argparse.ArgumentParser) -> None:
    """The arguments that say what a reading command reads: an event log, or ``--store URL``."""
    p.add_argument("log", nargs="?", help="the event log to read")
    p.add_argument("--store", metavar="URL",
                   help="read a ClickHouse store instead: chdb:PATH, or "
                        "clickhouse://[user:password@]host:8123/database?table=otel_traces")  # fmt: skip


def source_name(args: argparse.Namespace) -> str:
    """What a reading command reads, as its messages name it (a store URL without its password)."""
    if getattr(args, "store", None):
        try:
            return parse(args.store).source
        except StoreUnavailable as e:
            raise CliError(str(e)) from None
    return str(args.log)


def open_source(args: argparse.Namespace, err: TextIO) -> LocalStore | ClickHouseStore:
    """The store a reading command reads: the log's (:func:`open_log`) or ``--store``'s (a
    :class:`CliError`, exit 2, when both or neither are given, or the store cannot be read)."""
    store = getattr(args, "store", None)
    if store and args.log:
        raise CliError("give an event log or --store URL, not both")
    if store:
        try:
            return ClickHouseStore.open(parse(store))
        except StoreUnavailable as e:
            raise CliError(str(e)) from None
    if not args.log:
        raise CliError("say what to read: an event log, or --store URL")
    return open_log(args.log, err)


def every_call(store: Store, f: Filter = ANY) -> Iterator[ModelCall]:
    """Every call ``f`` keeps, in call order, read a page at a time."""
    offset: int | None = 0
    while offset is not None:
        page = store.calls(f, offset=offset, limit=MAX_LIMIT)
        yield from page.items
        offset = page.next_offset


def pick(store: Store, n: int, path: str) -> ModelCall:
    """Call ``n`` of the log, or a :class:`CliError` saying what the log holds."""
    state = store.state()
    if not state.calls:
        raise CliError(f"{path} records no model calls ({holds(state)})")
    if not 1 <= n <= state.calls:
        raise CliError(f"call {n} is out of range: {path} records calls 1 to {state.calls}")
    return store.call(n)


def holds(state: StoreState) -> str:
    """What a log without model calls holds, in a few words."""
    if not state.spans:
        return "it holds no spans yet"
    return f"it holds {state.spans:,} spans in {state.trees:,} trees; `callctx export` shows them"


def program() -> str:
    """How to run this command line again as the user can type it: ``callctx`` when it is on
    the PATH, else its path (``.venv/bin/callctx`` after ``make demo``)."""
    import os
    import shutil

    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    on_path = shutil.which("callctx")
    if here is None or here.name != "callctx" or (on_path and Path(on_path).resolve() == here):
        return "callctx"
    try:
        return os.path.relpath(here)
    except ValueError:
        return str(here)

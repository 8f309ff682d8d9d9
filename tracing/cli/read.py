"""``callctx calls``, ``tree`` and ``context``: what a log's model calls were sent, rebuilt and verified."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

import msgspec

from callctx.components import providers, record, wire
from callctx.components.cache import exchange_text
from callctx.components.context import Context
from callctx.components.tokens import counter as tokens_for
from callctx.projection import LogError, Projection, read_log
from callctx.projection.asof import tree_as_seen_by
from callctx.projection.calls import ModelCall, read_calls
from callctx.projection.events import Blob, SpanStarted
from callctx.projection.llm import messages_of
from callctx.projection.log import Damage
from callctx.store.recorded import Unrebuildable, rebuild

from .common import EXIT_MISMATCH, EXIT_OK, CliError, check_event_log
from .display import format_context, format_reconstructed, share_cacheable, tree_of


def load_calls(path: str, err: TextIO) -> tuple[list[ModelCall], dict[str, str]]:
    damage: list[Damage] = []
    p = Path(path)
    if not p.exists():
        raise CliError(f"no event log at {p}")
    try:
        calls, blobs = read_calls(p, damage=damage)
    except LogError as e:
        raise CliError(str(e)) from None
    bad = [d for d in damage if not d.torn]
    if bad and not calls and not blobs:
        raise CliError(f"{p} is not a callctx event log ({bad[0].reason} at line {bad[0].line})")
    for d in damage[:5]:
        err.write(f"warning: {p}: line {d.line}: {d.reason}; skipped\n")
    if len(damage) > 5:
        err.write(f"warning: {p}: {len(damage) - 5} more damaged records skipped\n")
    return calls, blobs


def pick(calls: list[ModelCall], n: int, path: str) -> ModelCall:
    if not calls:
        raise CliError(f"{path} records no model calls ({_holds(path)})")
    if not 1 <= n <= len(calls):
        raise CliError(f"call {n} is out of range: {path} records calls 1 to {len(calls)}")
    return calls[n - 1]


def restored(call: ModelCall, blobs: dict[str, str]) -> tuple[record.Manifest, Context]:
    if call.manifest is None:
        raise CliError(
            f"call {call.index} carries no recorded context (made by another instrumentation?)", EXIT_MISMATCH
        )
    try:
        m = record.manifest(call.manifest)
        context, _ = record.restore(m, blobs)
    except record.RecordError as e:
        raise CliError(f"cannot rebuild call {call.index}: {e}", EXIT_MISMATCH) from None
    return m, context


def cmd_calls(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    calls, blobs = load_calls(args.log, err)
    if not calls:
        out.write(f"{args.log} records no model calls ({_holds(args.log)})\n")
        return EXIT_OK
    head = f"{'#':>4}  {'function':<22} {'model':<22} {'input':>7} {'output':>6} {'cached':>6} {'cacheable':>9}"
    out.write(f"{head}  {'status':<7} call path\n")
    for c in calls:
        tokens = c.usage.get("input")
        cacheable = "-"
        if c.manifest:
            try:
                m, context = restored(c, blobs)
                _, exchanges = record.restore(m, blobs)
                counter = tokens_for(context.encoding)
                # the whole request: the context and the tool exchange so far
                tokens = context.tokens + sum(counter.count(exchange_text(e)) for e in exchanges)
                cacheable = f"{share_cacheable(context):.0%}"
            except (CliError, record.RecordError) as e:
                err.write(f"warning: {e}\n")
        else:
            cacheable = "(span)"  # another instrumentation's call: read from its span, not rebuilt
        name = c.function or "turn"
        out.write(
            f"{c.index:>4}  {name[:22]:<22} {(c.model or '-')[:22]:<22} {_n(tokens):>7} {_n(c.usage.get('output')):>6} "
            f"{_n(c.usage.get('cache_read')):>6} {cacheable:>9}  {c.status:<7} {c.call_path or ''}\n"
        )
    return EXIT_OK


def _n(value: int | None) -> str:
    return f"{value:,}" if value is not None else "-"


def _holds(path: str) -> str:
    """What a log without model calls holds, in a few words."""
    spans = traces = 0
    seen: set[str] = set()
    for rec in read_log(path):
        if type(rec) is SpanStarted:
            spans += 1
            if rec.trace_id not in seen:
                seen.add(rec.trace_id)
                traces += 1
    if not spans:
        return "it holds no spans yet"
    return f"it holds {spans:,} spans in {traces:,} traces; `callctx export` shows them"


def cmd_tree(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.span is not None:
        path = check_event_log(args.log)
        records = list(read_log(path))
        try:
            if args.final:
                p = Projection()
                p.apply_all(r for r in records if type(r) is not Blob)  # type: ignore[misc]
                p.mark_recovered()
                text = p.view(args.span).text
            else:
                text = tree_as_seen_by(records, args.span)
        except KeyError:
            raise CliError(f"{args.log} holds no span {args.span}") from None
        out.write(text or "(an empty tree)\n")
        return EXIT_OK
    if args.at is None:
        raise CliError("say which tree: --at N (a model call) or --span ID")
    calls, blobs = load_calls(args.log, err)
    call = pick(calls, args.at, args.log)
    if call.foreign:  # not recorded: the tree as the call's span saw it, folded from the log
        tree = tree_as_seen_by(read_log(args.log), call.span_id)
        out.write(tree if tree else "(no call tree: a top-level model call)\n")
        return EXIT_OK
    _, context = restored(call, blobs)
    tree = tree_of(context)
    out.write(tree if tree else "(no call tree: a top-level turn with no history)\n")
    return EXIT_OK


def cmd_context(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    calls, blobs = load_calls(args.log, err)
    call = pick(calls, args.at, args.log)
    if call.foreign:
        rec = messages_of(call.attributes or {})
        if args.json:
            out.write(
                json.dumps({"reconstructed": True, "verified": False, **msgspec.to_builtins(rec)}, indent=2) + "\n"
            )
        else:
            format_reconstructed(call, rec, out)
        return EXIT_OK
    try:
        done = rebuild(call, blobs)
    except Unrebuildable as e:
        raise CliError(str(e), EXIT_MISMATCH) from None
    m, context, body = done.manifest, done.context, done.body
    if not done.verified:
        raise CliError(
            f"call {call.index}: the rebuilt request does not match what was sent "
            f"(sha256 {wire.request_hash(body)[:16]}… vs recorded {m.request[:16]}…)",
            EXIT_MISMATCH,
        )
    target = wire.resolve(args.provider) if args.provider else m.wire
    if target != m.wire:
        body = record.rebuild(m, blobs, target)
    if args.json:
        out.write(json.dumps(body, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    out.write(f"call {call.index}: {call.function or 'turn'}  ({call.call_path or 'top level'})\n")
    note = "" if target == m.wire else f"; shown as {target}"
    out.write(f"sent as {m.wire} to {m.params.model}{note}; request sha256 {m.request[:16]}… verified\n\n")
    format_context(context, out)
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """The calls, tree, context commands."""
    p = sub.add_parser("calls", help="list every model call of an event log")
    p.add_argument("log")
    p.set_defaults(run=cmd_calls)
    p = sub.add_parser("tree", help="the call tree model call N (or span ID) saw")
    p.add_argument("log")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--at", type=int, metavar="N", help="the tree model call N was sent")
    which.add_argument("--span", metavar="ID", help="the tree as span ID saw it when it started")
    p.add_argument("--final", action="store_true", help="with --span: the tree as the log ends, not as the span saw it")
    p.set_defaults(run=cmd_tree)
    p = sub.add_parser("context", help="rebuild and verify the exact request of call N")
    p.add_argument("log")
    p.add_argument("--at", type=int, required=True, metavar="N")
    p.add_argument("--provider", choices=providers.WIRE_NAMES, help="show it in another provider's format")
    p.add_argument("--json", action="store_true", help="print the request body as JSON")
    p.set_defaults(run=cmd_context)

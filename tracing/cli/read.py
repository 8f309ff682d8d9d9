"""``callctx calls``, ``tree`` and ``context``: what a log's model calls were sent, rebuilt
and verified, read through the local store."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

import msgspec

from callctx.components import providers, wire
from callctx.components.cache import exchange_text
from callctx.components.tokens import counter as tokens_for
from callctx.projection.calls import ModelCall
from callctx.projection.errors import NotFound
from callctx.store.contexts import Rebuilt, Unrebuildable, rebuild, reconstruct, request_in
from callctx.store.model import MAX_LIMIT, Store

from .common import EXIT_MISMATCH, EXIT_OK, CliError, add_source, every_call, holds, open_source, pick, source_name
from .display import format_context, format_reconstructed, share_cacheable, tree_of


def rebuilt(store: Store, call: ModelCall) -> Rebuilt:
    """One of our calls restored from the log (a :class:`CliError`, exit 1, when it cannot be)."""
    try:
        return rebuild(store.recorded(call))
    except Unrebuildable as e:
        raise CliError(str(e), EXIT_MISMATCH) from None


def cmd_calls(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_source(args, err) as store:
        state = store.state()
        if not state.calls:
            out.write(f"{source_name(args)} records no model calls ({holds(state)})\n")
            return EXIT_OK
        head = (f"{'#':>4}  {'span' + ' ' * 13 if args.wide else ''}{'function':<22} {'model':<22} {'tokens':>7} "
                f"{'input':>7} {'output':>6} {'read':>6} {'cacheable':>9}")  # fmt: skip
        out.write(f"{head}  {'status':<11} call path\n")
        for c in every_call(store):
            tokens: int | None = None
            cacheable = "-"
            if c.manifest:
                try:
                    done = rebuilt(store, c)
                    counter = tokens_for(done.context.encoding)
                    # the whole request: the context and the tool exchange so far
                    tokens = done.context.tokens + sum(counter.count(exchange_text(e)) for e in done.exchanges)
                    cacheable = f"{share_cacheable(done.context):.0%}"
                except CliError as e:
                    err.write(f"warning: {e}\n")
            else:
                cacheable = "(span)"  # another instrumentation's call: read from its span, not rebuilt
            name = c.function or "turn"
            u = c.usage
            span = f"{c.span_id:<16} " if args.wide else ""
            out.write(
                f"{c.index:>4}  {span}{name[:22]:<22} {(c.model or '-')[:22]:<22} {_n(tokens):>7} {_n(u.input):>7} "
                f"{_n(u.output):>6} {_n(u.cache_read):>6} {cacheable:>9}  {c.status:<11} {c.call_path or ''}"
                f"{f'  ({c.excerpt})' if args.wide and c.excerpt else ''}\n"
            )
        out.write(
            "\ntokens, cacheable: counted by callctx from the rebuilt request (the tool loop included); "
            "input, output, read (from cache): reported by the provider\n"
        )
    return EXIT_OK


def _n(value: int | None) -> str:
    return f"{value:,}" if value is not None else "-"


def cmd_tree(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_source(args, err) as store:
        if args.final and args.span is None:
            if args.at is not None:
                text = store.span_tree(pick(store, args.at, source_name(args)).span_id, final=True)
                out.write(text or "(an empty tree)\n")
            else:
                _final_trees(store, out)
            return EXIT_OK
        if args.span is not None:
            try:
                text = store.span_tree(args.span, final=args.final)
            except NotFound:
                raise CliError(f"{source_name(args)} holds no span {args.span}") from None
            out.write(text or "(an empty tree)\n")
            return EXIT_OK
        if args.at is None:
            raise CliError("say which tree: --at N (a model call) or --span ID")
        call = pick(store, args.at, source_name(args))
        if call.foreign:  # not recorded: the tree as the call's span saw it, folded from the log
            tree = store.span_tree(call.span_id)
            out.write(tree if tree else "(no call tree: a top-level model call)\n")
            return EXIT_OK
        tree = tree_of(rebuilt(store, call).context)
        out.write(tree if tree else "(no call tree: a top-level turn with no history)\n")
    return EXIT_OK


def _final_trees(store: Store, out: TextIO) -> None:
    """Every tree of the source as it ends, seen from each of its root calls."""
    offset = 0
    while True:
        page = store.trees(offset=offset, limit=MAX_LIMIT)
        if not page.total:
            out.write("(no call trees)\n")
        for row in page.items:
            if page.total > 1:
                out.write(f"# {row.kind} {row.key}\n")
            for root in store.spans(row.key, limit=MAX_LIMIT).items:
                out.write(store.span_tree(root.span_id, final=True) or f"(span {root.span_id}: no call tree)\n")
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return


def cmd_context(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_source(args, err) as store:
        call = pick(store, args.at, source_name(args))
        if call.foreign:
            rec = reconstruct(store.recorded(call)).messages
            if args.json:
                doc = {"reconstructed": True, "verified": False, **msgspec.to_builtins(rec)}
                out.write(json.dumps(doc, indent=2) + "\n")
            else:
                format_reconstructed(call, rec, out)
            return EXIT_OK
        done = rebuilt(store, call)
    m, context, body = done.manifest, done.context, done.body
    if not done.verified:
        raise CliError(
            f"call {call.index}: the rebuilt request does not match what was sent "
            f"(sha256 {wire.request_hash(body)[:16]}… vs recorded {m.request[:16]}…)",
            EXIT_MISMATCH,
        )
    target = wire.resolve(args.provider) if args.provider else m.wire
    body = request_in(done, target)
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
    add_source(p)
    p.add_argument(
        "--wide",
        action="store_true",
        help="also each call's span id (for tree --span) and the first words of its caller's input",
    )
    p.set_defaults(run=cmd_calls)
    p = sub.add_parser("tree", help="the call tree model call N (or span ID) saw")
    add_source(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--at", type=int, metavar="N", help="the tree model call N was sent")
    which.add_argument("--span", metavar="ID", help="the tree as span ID saw it when it started")
    p.add_argument(
        "--final",
        action="store_true",
        help="the tree as the log ends, not as a call saw it: of span ID, of call N's span, or alone every tree's",
    )
    p.set_defaults(run=cmd_tree)
    p = sub.add_parser("context", help="rebuild and verify the exact request of call N")
    add_source(p)
    p.add_argument("--at", type=int, required=True, metavar="N")
    p.add_argument("--provider", choices=providers.WIRE_NAMES, help="show it in another provider's format")
    p.add_argument("--json", action="store_true", help="print the request body as JSON")
    p.set_defaults(run=cmd_context)

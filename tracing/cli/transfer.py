"""``callctx export`` and ``callctx import``: an event log to and from OTLP/JSON, Jaeger JSON and trace stores."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from callctx.projection import LogError, Projection
from callctx.projection.batch import Batch, records
from callctx.projection.texts import Assembler

from .common import EXIT_OK, CliError, check_event_log


def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from callctx.export.otlpfile import LinkRefused, write_private
    from callctx.export.shaping import Shaper
    from callctx.projection import jaeger, otlp, spans

    path = check_event_log(args.log)
    try:
        data = list(spans.from_log(path))
    except LogError as e:
        raise CliError(str(e)) from None
    if not args.raw:
        shaper = Shaper()
        data = [shaper.span_data(sp) for sp in data]
    doc = otlp.encode_json(data, args.service) if args.format == "otlp" else jaeger.encode(data, args.service)
    text = json.dumps(doc, ensure_ascii=False)
    if args.output:
        try:
            write_private(Path(args.output), text + "\n", force=args.force)
        except LinkRefused as e:
            raise CliError(str(e)) from None
        err.write(f"{len(data)} spans written to {args.output}{' (raw, unshaped)' if args.raw else ''}\n")
    else:
        out.write(text + "\n")
    return EXIT_OK


def _read_file(args: argparse.Namespace) -> tuple[Batch, str]:
    """(the decoded spans, a default log path) of a trace file."""
    from callctx.projection import jaeger, otlp

    src = Path(args.file)
    if not src.exists():
        raise CliError(f"no such file: {src}")
    try:
        body = src.read_bytes()
        fmt = args.format
        if fmt == "auto":
            fmt = "otlp" if b'"resourceSpans"' in body.lstrip()[:4096] else "jaeger"
        decoded = otlp.decode_json(body) if fmt == "otlp" else jaeger.decode(json.loads(body))
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CliError(f"{src} is not an OTLP/JSON or Jaeger JSON trace file: {e}") from None
    return decoded, str(src.with_suffix(".events.jsonl"))


def _read_store(args: argparse.Namespace) -> tuple[Batch, str]:
    """(the decoded spans, a default log path) pulled from a trace store."""
    from datetime import datetime

    from callctx import importers as stores

    def when(text: str | None) -> datetime | None:
        if text is None:
            return None
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise CliError(f"not an ISO 8601 time: {text!r}") from None

    query = stores.Query(args.trace, args.session, when(args.since), when(args.until), args.service)
    if not (query.trace_id or query.session_id or query.start or query.end):
        raise CliError("say what to pull: --trace ID, --session ID, or --since/--until")
    try:
        if args.source == "phoenix":
            decoded = stores.phoenix(args.url, query, project=args.project, token=args.token)
        else:
            decoded = stores.jaeger(args.url, query, token=args.token)
    except stores.StoreError as e:
        raise CliError(str(e)) from None
    what = args.trace or args.session or "range"
    return decoded, f"{args.source}-{what}.events.jsonl"


def cmd_import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from callctx.export.otlpfile import LinkRefused, refuse_link
    from callctx.projection import EventLog
    from callctx.projection.events import encode

    if args.source:
        args.url = args.url or args.file
        if not args.url:
            raise CliError(f"--from {args.source} needs the store's URL (http://host:6006 for Phoenix)")
        decoded, default = _read_store(args)
        if not decoded.spans:
            raise CliError(f"{args.url} holds no spans for that query ({decoded.rejected} unreadable)")
    else:
        if not args.file:
            raise CliError("give a trace file, or --from phoenix|jaeger URL")
        decoded, default = _read_file(args)
    found = decoded.spans
    target = Path(args.out or default)
    try:
        refuse_link(target, force=args.force)
        log = EventLog(target)
    except (LinkRefused, LogError) as e:
        raise CliError(str(e)) from None
    try:
        for rec in records(Batch(sorted(found, key=lambda r: (r.start_ns, r.span_id))), Assembler()):
            log.write(encode(rec))
    finally:
        log.close()
    for problem in decoded.errors[:5]:
        err.write(f"warning: {problem}\n")
    p = Projection.from_log(target)
    out.write(f"{len(found)} spans imported ({decoded.rejected} rejected) into {target}; {len(p.sessions())} trees\n")
    if args.print:
        for key in p.sessions():
            out.write(f"\n── {key} ──\n{p.session_tree(key)}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """The export, import commands."""
    p = sub.add_parser("export", help="write an event log's spans as OTLP/JSON or Jaeger JSON")
    p.add_argument("log")
    p.add_argument("--format", choices=["otlp", "jaeger"], default="otlp")
    p.add_argument("--service", default="callctx", help="service name for spans that carry none")
    p.add_argument("-o", "--out", "--output", dest="output", help="file to write, mode 0600 (default: standard output)")
    p.add_argument("--force", action="store_true", help="replace a symbolic link at the output (never written through)")
    p.add_argument("--raw", action="store_true", help="everything as recorded: no redaction, no cuts (default: shaped)")
    p.set_defaults(run=cmd_export)
    p = sub.add_parser(
        "import", help="read a trace file (OTLP/JSON, Collector file, Jaeger JSON) or a trace store into an event log"
    )
    p.add_argument("file", nargs="?", help="the trace file; with --from, the store's base URL")
    p.add_argument("--format", choices=["auto", "otlp", "jaeger"], default="auto")
    p.add_argument("--from", dest="source", choices=["phoenix", "jaeger"], help="pull from a running trace store")
    p.add_argument("--url", help="the store's base URL, or give it in place of FILE")
    p.add_argument("--project", default="default", help="Phoenix project (default: default)")
    p.add_argument("--trace", help="the trace id to pull")
    p.add_argument("--session", help="the session to pull (session.id / gen_ai.conversation.id)")
    p.add_argument("--since", help="spans that started at or after this time (ISO 8601)")
    p.add_argument("--until", help="... and before this time (ISO 8601)")
    p.add_argument("--service", help="Jaeger: the service to search in the time range")
    p.add_argument("--token", help="bearer token for the store")
    p.add_argument("-o", "--out", "--log", dest="out", help="event log to write (default: FILE.events.jsonl)")
    p.add_argument("--force", action="store_true", help="replace a symbolic link at the output (never written through)")
    p.add_argument("--print", action="store_true", help="print the call trees")
    p.set_defaults(run=cmd_import)

"""The ``callctx`` command line.

Exit codes: 0 done; 1 a recorded request could not be rebuilt or did not verify; 2 bad
input (no such log, not an event log, a call number out of range, an unknown provider).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import msgspec

from callctx.components import record, wire
from callctx.components.cache import exchange_text
from callctx.components.context import Context, Segment
from callctx.components.tokens import counter as tokens_for
from callctx.projection import LogError, Projection, read_log
from callctx.projection.asof import tree_as_seen_by
from callctx.projection.calls import ModelCall, read_calls
from callctx.projection.events import Blob, SpanStarted, decode
from callctx.projection.llm import Reconstructed, messages_of
from callctx.projection.log import Damage
from callctx.store.recorded import Unrebuildable, rebuild

EXIT_OK, EXIT_MISMATCH, EXIT_INPUT = 0, 1, 2


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.code = code


# ---- reading a log ----------------------------------------------------------------------------
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


# ---- display ---------------------------------------------------------------------------------
def share_cacheable(context: Context) -> float:
    total = context.tokens
    return context.cacheable_tokens / total if total else 0.0


def format_context(context: Context, out: TextIO) -> None:
    """The context as a person reads it: each block with its component, layer and tokens, and
    where the cache breakpoints fall."""
    tools = context.section("tools")
    if tools:
        t = tools[0]
        names = ", ".join(x["name"] for x in context.tools)
        out.write(f"── tools ({len(context.tools)}: {names}; {t.tokens} tokens)\n")
        if t.breakpoint:
            out.write("   ▲ cache breakpoint\n")
    current = None
    for seg in context.segments:
        if seg.section == "tools":
            continue
        section = "system" if seg.section == "system" else "messages"
        if section != current:
            out.write(f"\n══ {section} ══\n")
            current = section
        out.write(f"── {seg.component} · {seg.layer} · {seg.tokens} tokens{'' if seg.cacheable else ' · not cached'}\n")
        out.write(seg.text.rstrip("\n") + "\n")
        if seg.breakpoint:
            out.write("   ▲ cache breakpoint\n")
    total = context.tokens
    out.write(
        f"\n{total:,} tokens, {context.cacheable_tokens:,} before the last breakpoint "
        f"({share_cacheable(context):.0%} cacheable); encoding {context.encoding}\n"
    )
    for p in context.problems:
        out.write(f"problem: component {p.component} failed: {p.error}\n")


def _tree_of(context: Context) -> str:
    seg: Segment | None = context.segment("call_tree")
    if seg is None:
        return ""
    return seg.text.strip("\n").removeprefix("<call_tree>\n").removesuffix("</call_tree>")


# ---- commands --------------------------------------------------------------------------------
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
    tree = _tree_of(context)
    out.write(tree if tree else "(no call tree: a top-level turn with no history)\n")
    return EXIT_OK


def format_reconstructed(call: ModelCall, rec: Reconstructed, out: TextIO) -> None:
    """A foreign call's messages as its span carries them."""
    where = call.call_path or "top level"
    out.write(f"call {call.index}: {call.function or 'turn'}  ({where})\n")
    model = call.model or "an unknown model"
    source = rec.source or "nothing"
    out.write(
        f"made by another instrumentation ({call.provider or 'unknown provider'}, {model}); reconstructed from "
        f"the span's {source} attributes, not hash-verified\n"
    )
    if call.usage:
        out.write("usage: " + ", ".join(f"{k} {v:,}" for k, v in call.usage.items()) + "\n")
    if rec.empty:
        out.write("\n(the span carries no messages: its instrumentation did not capture content)\n")
        return
    for text in rec.system:
        out.write(f"\n══ system ══\n{text.rstrip()}\n")
    if rec.messages:
        out.write("\n══ messages ══\n")
        for m in rec.messages:
            out.write(f"── {m.role}\n{m.text.rstrip()}\n")
    if rec.output:
        out.write("\n══ output ══\n")
        for m in rec.output:
            out.write(f"── {m.role}\n{m.text.rstrip()}\n")


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


def _program() -> str:
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


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from callctx import setup
    from callctx.cli.research_agent import SKILLS, demo_workspace, run
    from callctx.engine.execute import CallRecord
    from callctx.export.otlpfile import OtlpJsonFile
    from callctx.export.shaping import ShapingExporter
    from callctx.models import resolve

    folder = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="callctx-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / "events.jsonl"
    if log_path.exists():
        log_path.unlink()
    model = resolve(args.model) if args.model else None
    workspace, memory = demo_workspace(folder, scale=args.scale)
    rt = setup(log_path, model=model, session_id="demo", workspace=workspace, memory=memory, skills=SKILLS)
    otlp = OtlpJsonFile(folder / "trace.otlp.json")
    rt.provider.add_span_processor(SimpleSpanProcessor(ShapingExporter(otlp)))  # what leaves is shaped
    rt.send_texts = True  # the OTLP file carries what each call was sent, like an exporter would
    shown: list[CallRecord] = []

    def progress(call: CallRecord) -> None:
        tokens = call.context.tokens
        cached = share_cacheable(call.context)
        path = " → ".join(c.function for c in (rt.projection.chain(call.span_id) if call.span_id else []))
        reply = call.reply
        said = "asked for tools" if reply and reply.tool_calls else ("error" if reply is None else "answered")
        out.write(f"\n[{call.index:>2}] {call.function or 'turn'}: {tokens:,} tokens, {cached:.0%} cacheable, {said}\n")
        out.write(f"     path: {path}\n")
        if not args.quiet:
            for line in call.tree.splitlines():
                out.write(f"     │ {line}\n")
        shown.append(call)

    out.write(
        "callctx demo: the research agent, offline (scripted model)\n"
        if model is None
        else f"callctx demo: the research agent with {args.model}\n"
    )
    try:
        run(rt, model=model, on_call=progress, scale=args.scale)
    finally:
        rt.close()
    step = args.show or next((c.index for c in shown if c.function == "_lit_decide"), 1)
    prog = _program()
    chosen = next((c for c in shown if c.index == step), None)
    if chosen is not None:
        out.write(f"\n═════ the full context of call {step} ({chosen.function}), as sent to the model ═════\n")
        format_context(chosen.context, out)
    out.write(
        f"\n{len(shown)} model calls. Event log: {log_path}\nOTLP/JSON trace: {otlp.path}\n"
        f"Look closer:  {prog} calls {log_path}\n"
        f"              {prog} tree {log_path} --at {step}\n"
        f"              {prog} context {log_path} --at {step}\n"
        f"              {prog} context {log_path} --at {step} --provider openai --json\n"
        f"              {prog} cache {log_path} --provider anthropic\n"
    )
    return EXIT_OK


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os
    import signal
    import threading

    from callctx.serve import Receiver, serve_grpc, serve_http

    token = args.token or os.environ.get("CALLCTX_TOKEN") or None
    for name in ("max_body", "max_connections", "max_traces"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be at least 1")
    if not args.read_timeout > 0:
        raise CliError("--read-timeout must be a positive number of seconds")
    rx = Receiver(args.log, max_body=args.max_body, token=token, max_traces=args.max_traces)
    http = serve_http(rx, args.host, args.port, read_timeout=args.read_timeout, max_connections=args.max_connections)
    out.write(f"callctx serve: OTLP/HTTP and the read API on http://{args.host}:{http.server_port}\n")
    grpc_server = None
    if args.grpc_port >= 0:
        grpc_server = serve_grpc(rx, args.host, args.grpc_port, max_concurrent_rpcs=args.max_connections)
        out.write(f"callctx serve: OTLP/gRPC on {args.host}:{grpc_server.port}\n")
    out.write(f"event log: {args.log}{' (bearer token required)' if token else ''}\n")
    out.flush()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    http.shutdown()
    if grpc_server is not None:
        grpc_server.stop(1.0)
    rx.close()
    out.write("callctx serve: stopped\n")
    return EXIT_OK


def cmd_ui(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import signal
    import threading
    import webbrowser

    from callctx.export.shaping import Shaper
    from callctx.serve.http_server import serve_page
    from callctx.ui import LogStore, Views

    path = Path(args.log)
    if path.is_dir():
        raise CliError(f"{path} is a folder, not an event log")
    if path.exists() and path.stat().st_size:
        check_event_log(args.log)
    elif not path.parent.is_dir():
        raise CliError(f"no folder {path.parent} for the event log {path}")
    store = LogStore(path)
    store.refresh()
    shape = None if args.raw else Shaper().redact
    try:
        server = serve_page(Views(store), args.host, args.port, shape=shape)
    except OSError as e:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {e.strerror}") from None
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{server.server_port}/ui/"
    waiting = "" if path.exists() else " (waiting for the log to appear)"
    out.write(f"callctx ui: {url}  ({path}{waiting}; Ctrl-C stops)\n")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        err.write(f"warning: the page is open to anyone who can reach {args.host}; it has no token\n")
    out.flush()
    if args.open:
        webbrowser.open(url)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.shutdown()
    return EXIT_OK


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


def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from callctx.export.otlpfile import write_private
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
        write_private(Path(args.output), text + "\n")
        err.write(f"{len(data)} spans written to {args.output}{' (raw, unshaped)' if args.raw else ''}\n")
    else:
        out.write(text + "\n")
    return EXIT_OK


def _read_file(args: argparse.Namespace) -> tuple[Any, str]:
    """(the decoded spans, a default log path) of a trace file."""
    from callctx.projection import jaeger, otlp
    from callctx.projection.otlp import Decoded

    src = Path(args.file)
    if not src.exists():
        raise CliError(f"no such file: {src}")
    try:
        text = src.read_bytes().decode("utf-8")
        fmt = args.format
        if fmt == "auto":
            fmt = "otlp" if '"resourceSpans"' in text.lstrip()[:4096] else "jaeger"
        decoded = otlp.decode_json(text) if fmt == "otlp" else Decoded(*jaeger.decode(json.loads(text)))
    except (UnicodeDecodeError, ValueError) as e:
        raise CliError(f"{src} is not an OTLP/JSON or Jaeger JSON trace file: {e}") from None
    return decoded, str(src.with_suffix(".events.jsonl"))


def _read_store(args: argparse.Namespace) -> tuple[Any, str]:
    """(the decoded spans, a default log path) pulled from a trace store."""
    from datetime import datetime

    from callctx.importers import stores

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
    from callctx.projection import EventLog, Projection
    from callctx.projection.events import encode
    from callctx.projection.spans import records

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
    log = EventLog(target)
    try:
        for rec in records(sorted(found, key=lambda s: (s.start_ns, s.span_id))):
            log.write(encode(rec))
    finally:
        log.close()
    for e in decoded.errors[:5]:
        err.write(f"warning: {e}\n")
    p = Projection.from_log(target)
    out.write(f"{len(found)} spans imported ({decoded.rejected} rejected) into {target}; {len(p.sessions())} trees\n")
    if args.print:
        for key in p.sessions():
            out.write(f"\n── {key} ──\n{p.session_tree(key)}")
    return EXIT_OK


def cmd_cache(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from callctx.components import cache

    calls, blobs = load_calls(args.log, err)
    if not calls:
        raise CliError(f"{args.log} records no model calls")
    try:
        rules = cache.load_rules(args.rules) if args.rules else None
    except (OSError, ValueError) as e:
        raise CliError(f"cannot read cache rules {args.rules}: {e}") from None
    provider = args.provider
    model = args.model or next((c.model for c in calls if c.model), "") or ""
    tokenize = cache.Tokenizer()
    requests = []
    contexts = []
    calls = [c for c in calls if not c.foreign]  # another instrumentation's calls were not recorded
    if not calls:
        raise CliError(f"{args.log} records no model calls of callctx's own (only other instrumentations')")
    t0 = calls[0].start_ns
    for c in calls:
        m, context = restored(c, blobs)
        contexts.append(context)
        _, exchanges = record.restore(m, blobs)
        label = c.function or "turn"
        requests.append(
            cache.request_of(context, exchanges, time_s=(c.start_ns - t0) / 1e9, label=label, tokenize=tokenize)
        )
    try:
        sim = cache.Simulator(provider, model, rules, key=args.key)
        report = sim.run(requests)
        other = "text" if sim.key == "block" else "block"
        twin = cache.Simulator(provider, model, rules, key=other).run(requests)
    except (KeyError, ValueError) as e:
        raise CliError(str(e)) from None
    for w in sim.warnings:
        err.write(f"warning: {w}\n")
    out.write(
        f"prompt cache of {provider} ({model or 'default model'}), simulated over {len(calls)} calls, "
        f"entries keyed by {sim.key}\n"
    )
    head = f"{'#':>4}  {'function':<20} {'tokens':>8} {'read':>8} {'written':>8} {'uncached':>8} {'limit':>8}"
    out.write(f"{head}  {'cost $':>9}\n")
    for i, r in enumerate(report.calls, start=1):
        row = f"{i:>4}  {r.label:<20} {r.total:8,d} {r.read:8,d} {r.write:8,d} {r.uncached:8,d} {r.limit:8,d}"
        out.write(f"{row}  {r.cost:9.5f}\n")
    saving = 1 - report.cost / report.cost_uncached if report.cost_uncached else 0.0
    out.write(
        f"total: {report.total:,} tokens, {report.read:,} read from cache ({report.hit_share:.1%} hit share, "
        f"{report.limit_share:.1%} of the {report.limit:,}-token limit)\n"
        f"cost ${report.cost:.4f} against ${report.cost_uncached:.4f} with no caching ({saving:.0%} saved)\n"
    )
    if abs(twin.limit_share - report.limit_share) >= 0.001:
        out.write(f"keyed by {other}: {twin.limit_share:.1%} of the limit ({twin.hit_share:.1%} hit share)\n")
    blockwise, textwise = (report, twin) if sim.key == "block" else (twin, report)
    for why in cache.explain(contexts, blockwise, textwise, sim.min_tokens):
        out.write(f"why: {why}\n")
    if args.chart:
        Path(args.chart).write_text(chart_html(report), encoding="utf-8")
        out.write(f"chart: {args.chart}\n")
    return EXIT_OK


def chart_html(report: Any) -> str:
    """A self-contained HTML page: cached (read, written) and uncached tokens per call, and the limit."""
    import html

    calls = report.calls
    width, height, pad = max(600, 8 * len(calls) + 80), 320, 40
    top = max((c.total for c in calls), default=1) or 1
    bar = (width - 2 * pad) / max(1, len(calls))
    scale = (height - 2 * pad) / top
    parts = []
    for i, c in enumerate(calls):
        x = pad + i * bar
        y = height - pad
        for value, color, name in ((c.read, "#2e7d32", "read"), (c.write, "#ef6c00", "written"),
                                   (c.uncached, "#9e9e9e", "uncached")):  # fmt: skip
            h = value * scale
            y -= h
            tip = html.escape(f"call {i + 1} {c.label}: {name} {value:,}")
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(1.0, bar - 1):.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{tip}</title></rect>"
            )
        ly = height - pad - c.limit * scale
        parts.append(f'<line x1="{x:.1f}" x2="{x + bar:.1f}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="#000"/>')
    title = html.escape(
        f"{report.provider} {report.model}: {report.hit_share:.1%} of tokens read from cache, "
        f"{report.limit_share:.1%} of the limit; ${report.cost:.4f} vs ${report.cost_uncached:.4f} uncached"
    )
    legend = (
        '<span style="color:#2e7d32">&#9632; read</span> <span style="color:#ef6c00">&#9632; written</span> '
        '<span style="color:#9e9e9e">&#9632; uncached</span>; the black line: the limit (what any cache could serve)'
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>callctx cache</title></head>"
        f"<body style='font-family:sans-serif'><h3>{title}</h3><p>{legend}</p>"
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
        f"<line x1='{pad}' x2='{width - pad}' y1='{height - pad}' y2='{height - pad}' stroke='#444'/>"
        + "".join(parts)
        + f"<text x='{pad}' y='{height - 10}' font-size='12'>calls 1 to {len(calls)}</text>"
        f"<text x='4' y='{pad - 8}' font-size='12'>{top:,} tokens</text></svg></body></html>\n"
    )


def cmd_guard(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import importlib

    from callctx.components.guard import check

    registry = None
    if args.registry:
        module, _, attr = args.registry.partition(":")
        try:
            obj = getattr(importlib.import_module(module), attr or "registry")
        except (ImportError, AttributeError) as e:
            raise CliError(f"cannot load the registry {args.registry!r}: {e}") from None
        registry = obj() if callable(obj) else obj
    report = check(registry)
    for note in report.notes:
        out.write(f"ok: {note}\n")
    for finding in report.findings:
        out.write(f"UNSTABLE: {finding}\n")
    out.write("the cached prefix is stable\n" if report.ok else f"{len(report.findings)} finding(s)\n")
    return EXIT_OK if report.ok else EXIT_MISMATCH


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="callctx", description="Build what each LLM call sees from the agent's trace.")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="run the research agent (offline by default) and show what each call sees")
    p.add_argument("--model", help="provider:model for a real model, e.g. anthropic:claude-sonnet-4-5 (needs its key)")
    p.add_argument("--out", help="folder for the event log and the OTLP/JSON trace (default: a temporary folder)")
    p.add_argument("--show", type=int, help="the call whose full context to print (default: the _lit_decide call)")
    p.add_argument("--quiet", action="store_true", help="progress lines only, no trees")
    p.add_argument(
        "--scale",
        type=int,
        default=1,
        metavar="N",
        help="N literature/idea rounds and a larger project file: long enough for prompt caches to hit "
        "(then try `callctx cache`)",
    )
    p.set_defaults(run=cmd_demo)

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
    p.add_argument("--provider", choices=[*wire.WIRES, *wire.ALIASES], help="show it in another provider's format")
    p.add_argument("--json", action="store_true", help="print the request body as JSON")
    p.set_defaults(run=cmd_context)

    p = sub.add_parser("cache", help="simulate a provider's prompt cache over a log's model calls")
    p.add_argument("log")
    p.add_argument("--provider", default="anthropic", help="cache model from the rules table (default: anthropic)")
    p.add_argument("--model", help="model name for per-model rules and prices (default: the recorded one)")
    p.add_argument("--rules", help="your own cache rules table (YAML, same shape as the shipped one)")
    p.add_argument(
        "-o", "--out", "--chart", dest="chart", help="write a self-contained HTML chart of cached vs uncached tokens"
    )
    p.add_argument(
        "--key",
        choices=["text", "block"],
        help="what a hit needs: the same text, or the same blocks (default: block where the provider caches at "
        "breakpoints, text for prefix caches); the other key's share is printed when it differs",
    )
    p.set_defaults(run=cmd_cache)

    p = sub.add_parser("guard", help="check that no context component moves bytes inside the cached prefix")
    p.add_argument("--registry", help="module:attribute of your Registry (or a function returning one)")
    p.set_defaults(run=cmd_guard)

    p = sub.add_parser("serve", help="receive OTLP spans (HTTP and gRPC) and serve the call trees they fold into")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=4318, help="OTLP/HTTP and read API port (default 4318)")
    p.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port (default 4317; -1 to turn off)")
    p.add_argument("--log", default="callctx-received.jsonl", help="the receiver's event log")
    p.add_argument("--token", help="require 'Authorization: Bearer TOKEN' (default: $CALLCTX_TOKEN)")
    p.add_argument("--max-body", type=int, default=16 << 20, help="largest request body in bytes, decompressed")
    p.add_argument("--read-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="time for a whole HTTP request (headers and body) to arrive, idle keep-alive included; "
                        "slower connections are closed (default 10)")  # fmt: skip
    p.add_argument("--max-connections", type=int, default=256, metavar="N",
                   help="HTTP connections served at once (more get 503 with Retry-After) and gRPC calls "
                        "in progress (more get RESOURCE_EXHAUSTED) (default 256)")  # fmt: skip
    p.add_argument("--max-traces", type=int, default=1000, metavar="N",
                   help="call trees kept in memory; the least recently updated finished ones leave "
                        "(the log keeps them, the read API folds them back) (default 1000)")  # fmt: skip
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser("ui", help="the debugger page for an event log (live while the log grows)")
    p.add_argument("log")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=4320, help="port (default 4320; 0 picks a free one)")
    p.add_argument("--open", action="store_true", help="open the page in a browser")
    p.add_argument("--raw", action="store_true", help="show texts as recorded (default: secrets redacted)")
    p.set_defaults(run=cmd_ui)

    p = sub.add_parser("export", help="write an event log's spans as OTLP/JSON or Jaeger JSON")
    p.add_argument("log")
    p.add_argument("--format", choices=["otlp", "jaeger"], default="otlp")
    p.add_argument("--service", default="callctx", help="service name for spans that carry none")
    p.add_argument("-o", "--out", "--output", dest="output", help="file to write, mode 0600 (default: standard output)")
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
    p.add_argument("--print", action="store_true", help="print the call trees")
    p.set_defaults(run=cmd_import)
    return ap


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    # damage and unknown models are reported here, once, not by the reader and the simulator too
    quiet = [logging.getLogger("callctx.projection.log"), logging.getLogger("callctx.components.cache")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        return args.run(args, out, err)
    except CliError as e:
        err.write(f"callctx: {e}\n")
        return e.code
    except BrokenPipeError:  # `callctx ... | head`
        return EXIT_OK
    finally:
        for q, level in zip(quiet, levels, strict=True):
            q.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())

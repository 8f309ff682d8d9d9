"""``callctx demo``: the seed's research agent, offline, printing what each call sees."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TextIO

from .common import EXIT_OK, program
from .display import format_context, share_cacheable


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
    rt = setup(log_path, model=model, session_id="demo", workspace=workspace, memory=memory, skills=SKILLS,
               service_name="callctx-demo")  # fmt: skip
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
    prog = program()
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


def register(sub: argparse._SubParsersAction) -> None:
    """The demo command."""
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

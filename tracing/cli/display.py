"""How the commands print a context (its blocks with their component, layer, tokens and
breakpoints) and a foreign call's messages."""

from __future__ import annotations

from typing import TextIO

from callctx.components.context import Context, Segment
from callctx.projection.calls import ModelCall
from callctx.projection.llm import Reconstructed


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


def tree_of(context: Context) -> str:
    seg: Segment | None = context.segment("call_tree")
    if seg is None:
        return ""
    return seg.text.strip("\n").removeprefix("<call_tree>\n").removesuffix("</call_tree>")


def format_reconstructed(call: ModelCall, rec: Reconstructed, out: TextIO) -> None:
    """A foreign call's messages as its span carries them."""
    where = call.call_path or "top level"
    out.write(f"call {call.index}: {call.function or 'turn'}  ({where})\n")
    model = call.model or "an unknown model"
    source = rec.source or "nothing"
    out.write(
        f"made by another instrumentation ({call.provider or 'unknown provider'}, {model}); reconstructed from "
        f"its span ({source}), not hash-verified\n"
    )
    reported = call.usage.counts()
    if reported:
        out.write("usage: " + ", ".join(f"{k} {v:,}" for k, v in reported.items()) + "\n")
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

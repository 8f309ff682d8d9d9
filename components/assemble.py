"""``assemble(ctx, registry) -> Context``: the rules, and nothing but the rules.

Per layer: sort by order, drop false conditions, build, drop empty. Layout: tools, then the
system part (first layer, then the second layer's project part), then the messages (the
call tree, then the turn). Cache breakpoints after the tools, after the first layer, after
the project part and after the call tree. A component that raises is skipped and reported;
the assembly goes on.

``prepare(ctx, registry)`` does ahead of time, once, the work the first assembly for ``ctx``
would otherwise pay for (loading the tokenizer, reading and scanning the workspace files,
counting the session-stable system text); the runtime calls it when it is set up. It never
raises and reports nothing: what fails there fails again, and is reported, in the assembly
that needs it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import msgspec
from opentelemetry import trace

from . import tokens, turn, workspace
from .component import BUILTIN, ContextComponent, Registry
from .context import Context, Problem, Section, Segment, TreeText
from .inputs import Ctx, Sealed
from .memory_store import FileMemory
from .sealed import lay_out
from .tool_section import schemas

log = logging.getLogger(__name__)

SEPARATOR = "\n\n"


def _run(component: ContextComponent, ctx: Ctx, registry: Registry, problems: list[Problem]) -> str | TreeText | None:
    try:
        if not component.condition(ctx):
            return None
        text = component.build(ctx)
    except Exception as e:  # noqa: BLE001 - one broken component must not take the request down
        _report(component.name, e, problems, registry.origin(component.name))
        return None
    match text:
        case None:
            return None
        case str():
            return text if text.strip() else None
        case TreeText():
            return text if any(c.strip() for c in text.chunks) else None
    error = TypeError(f"build returned {type(text).__name__}, not str or TreeText")
    _report(component.name, error, problems, registry.origin(component.name))
    return None


def _report(name: str, error: BaseException, problems: list[Problem], origin: str | None = None) -> None:
    message = f"{type(error).__name__}: {error}"
    problems.append(Problem(name, message, origin))
    source = f" (from {origin})" if origin else ""
    log.warning("callctx: context component %r%s failed and was skipped: %s", name, source, message)
    span = trace.get_current_span()
    if span.is_recording():
        attrs = {"callctx.component": name, "exception.message": message}
        if origin:
            attrs["callctx.component.origin"] = origin
        span.add_event("callctx.component_failed", attrs)


def _segment(
    counter: tokens.TokenCounter,
    component: str,
    layer: str,
    section: Section,
    text: str | TreeText,
    cacheable: bool,
    sealed: Sequence[Sealed] = (),
) -> Segment:
    if isinstance(text, TreeText):
        whole = text.text
        body = whole.strip("\n")
        chunks = [*text.chunks[:-1], text.chunks[-1] + SEPARATOR] if body == whole else [whole + SEPARATOR]
        layout = lay_out(text, SEPARATOR, sealed, whole=whole)
        return Segment(
            component,
            layer,
            section,
            whole + SEPARATOR,
            counter.count_chunks(chunks),
            cacheable,
            blocks=layout.blocks,
            breakpoint_block=layout.breakpoint,
            parent_block=layout.parent,
            reuse_block=layout.reuse,
        )
    body = text.strip("\n") + SEPARATOR
    return Segment(component, layer, section, body, counter.count(body), cacheable)


def _mark_breakpoint(segments: list[Segment], start: int) -> None:
    """Put a breakpoint after the last segment of the cacheable run starting at ``start``."""
    last = None
    for i in range(start, len(segments)):
        if not segments[i].cacheable:
            break
        last = i
    if last is not None:
        s = segments[last]
        segments[last] = msgspec.structs.replace(s, breakpoint=True)


def prepare(ctx: Ctx, registry: Registry | None = None) -> None:
    """Do now, once, what the first assembly for ``ctx`` would otherwise pay for: load the
    tokenizer of its model's encoding, read (and scan) the workspace files, and count the tokens
    of the system part the built-in components show for ``ctx`` (the session-stable text every
    call sends; a later call only counts what differs). Plugins' components are not run, nor a
    memory backend other than ``FileMemory``: nobody's code runs early but callctx's own."""
    try:
        counter = tokens.counter(tokens.encoding_name_for(ctx.model))
        workspace.prepare(ctx, None if registry is None else (c.name for c in registry))
    except Exception as e:  # noqa: BLE001 - the assembly that needs it will fail and say so
        log.debug("callctx: preparing the assembly failed: %s", e)
        return
    if registry is None:
        return
    for layer in ("L0", "L1"):
        for c in registry.layer(layer):
            if c.history or registry.origin(c.name) != BUILTIN:
                continue
            if c.name in _MEMORY_BLOCKS and not isinstance(ctx.memory, FileMemory):
                continue
            try:
                text = c.build(ctx) if c.condition(ctx) else None
            except Exception:  # noqa: BLE001 - the call reports it
                continue
            if isinstance(text, str) and text.strip():
                counter.count(text.strip("\n") + SEPARATOR)


_MEMORY_BLOCKS = ("memory_global", "project_memory")


def assemble(ctx: Ctx, registry: Registry | None = None, *, counter: tokens.TokenCounter | None = None) -> Context:
    """Build what the model sees for ``ctx`` (default registry: the built-ins and plugins).

    ``counter`` defaults to the shared, memoizing counter of the model's encoding.
    """
    if registry is None:
        from .defaults import default_registry

        registry = default_registry()
    if counter is None:
        counter = tokens.counter(tokens.encoding_name_for(ctx.model))
    problems: list[Problem] = []
    segments: list[Segment] = []

    tool_schemas: list[dict[str, Any]] = []
    try:
        tool_schemas = schemas(ctx)
    except Exception as e:  # noqa: BLE001
        _report("tools", e, problems, BUILTIN)
    if tool_schemas:
        text = json.dumps(tool_schemas, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        # no breakpoint of its own: the tools open the prefix the first system breakpoint closes
        segments.append(Segment("tools", "L0", "tools", text, counter.count(text), True))

    start = len(segments)
    for c in registry.layer("L0"):
        built = _run(c, ctx, registry, problems)
        if built is not None:
            segments.append(_segment(counter, c.name, "L0", "system", built, c.cacheable))
    _mark_breakpoint(segments, start)

    history: list[ContextComponent] = []
    start = len(segments)
    for c in registry.layer("L1"):
        if c.history:
            history.append(c)
            continue
        built = _run(c, ctx, registry, problems)
        if built is not None:
            segments.append(_segment(counter, c.name, "L1", "system", built, c.cacheable))
    _mark_breakpoint(segments, start)

    start = len(segments)
    for c in history:
        built = _run(c, ctx, registry, problems)
        if built is not None:
            segments.append(_segment(counter, c.name, "L1", "tree", built, c.cacheable, ctx.sealed))
    _mark_breakpoint(segments, start)

    # The turn: its fixed blocks, with any L2-registered components slotted in by order.
    entries: list[tuple[int, int, str, str | TreeText | None]] = []
    for i, (name, order, build) in enumerate(turn.TURN_BLOCKS):
        block: str | None
        try:
            block = build(ctx.turn)
        except Exception as e:  # noqa: BLE001
            _report(name, e, problems, BUILTIN)
            block = None
        entries.append((order, i, name, block if block and block.strip() else None))
    for j, c in enumerate(registry.layer("L2")):
        entries.append((c.order, 100 + j, c.name, _run(c, ctx, registry, problems)))
    for _, _, name, entry in sorted(entries, key=lambda e: (e[0], e[1])):
        if entry is not None:
            segments.append(_segment(counter, name, "L2", "turn", entry, False))

    media = [a for a in ctx.turn.attachments if a.text is None and a.data is not None]
    return Context(
        tools=tool_schemas, segments=segments, problems=problems, encoding=counter.encoding_name, media=media
    )

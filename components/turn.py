"""The turn: what this call alone needs, sent last and never cached.

In order: ``<situation>`` (which function the model runs inside, its job, the call path,
its position in the program, what happens to its output, and the warning not to call
itself), the recalled memory, the input, and the output schema: fixed blocks at orders 10,
20, 30 and 40. Components registered in the third layer (L2) are allowed: they are part of
the turn, never cached, and slot in among these blocks by their order. Per-call text never
goes in the system part: it would sit in front of the cached history and invalidate it on
every call.
"""

from __future__ import annotations

import json
from typing import Any

from callctx.projection.view import TreeView

from .doctext import first_sentence
from .inputs import Turn
from .memory import RECALL_FAILED, fence_recall

CALL_PATH_MAX = 8
ARROW = " → "


# ---- output contracts (pass one as @agentic(output=...)) ---------------------------------------
def decision() -> str:
    """The caller parses the output into a decision."""
    return (
        "Your output will be parsed by the caller into a decision — emit exactly one JSON object "
        "matching the menu below."
    )


def artifact(name: str, consumer: str) -> str:
    """The output is a deliverable someone else consumes."""
    return f"Your output becomes `{name}`, the deliverable consumed by `{consumer}`."


def passed_to(function: str, param: str) -> str:
    """The output is the argument of the next function."""
    return f"Your output is passed to `{function}` as its `{param}`."


# ---- blocks -------------------------------------------------------------------------------------
def call_path(names: list[str], limit: int = CALL_PATH_MAX) -> str:
    """``root → … → current``, keeping both ends when the path is long."""
    if len(names) > limit:
        head = max(1, limit // 4)
        names = [*names[:head], "…", *names[len(names) - (limit - head - 1) :]]
    return ARROW.join(names)


def situation(turn: Turn) -> str | None:
    fn = turn.function
    if not fn:
        return None
    lines = [f"You are running INSIDE the agentic function `{fn}`."]
    job = first_sentence(turn.doc)
    if job:
        lines.append(f"Job: {job}")
    if turn.call_path:
        lines.append(f"Call path: {call_path(turn.call_path)}")
    if turn.position:
        lines.append(f"Position: {turn.position}")
    if turn.output_contract:
        c = turn.output_contract.strip()
        lines.append(c if c.lower().startswith("your output") else f"Your output: {c}")
    lines.append("")
    lines.append(
        f"The tool list may include `{fn}` itself — do NOT call it (re-entering causes infinite\n"
        "recursion). Use lower-level tools to do the work directly."
    )
    return "<situation>\n" + "\n".join(lines) + "\n</situation>"


def memory_prefetch(turn: Turn) -> str | None:
    if turn.prefetch_failed:
        return RECALL_FAILED
    return fence_recall(turn.prefetch) if turn.prefetch else None


def user_input(turn: Turn) -> str | None:
    parts = []
    if turn.user_input.strip():
        parts.append(turn.user_input.strip("\n"))
    for a in turn.attachments:
        if a.text is not None:
            parts.append(f'<attachment name="{a.name}" type="{a.mime}">\n{a.text.rstrip()}\n</attachment>')
    return "\n\n".join(parts) if parts else None


def output_schema(turn: Turn) -> str | None:
    if not turn.output_schema:
        return None
    schema = json.dumps(turn.output_schema, sort_keys=True, ensure_ascii=False)
    return f"<output_schema>\n{schema}\n</output_schema>"


# (name, order, build): the fixed blocks of the turn; components registered in L2 interleave by order.
TURN_BLOCKS = (
    ("situation", 10, situation),
    ("memory_prefetch", 20, memory_prefetch),
    ("input", 30, user_input),
    ("output_schema", 40, output_schema),
)


def for_view(view: TreeView, **inputs: Any) -> Turn:
    """The turn of the call a tree view belongs to: situation fields from its chain."""
    chain = view.chain
    if not chain:
        return Turn(**inputs)
    me = chain[-1]
    return Turn(
        function=me.function,
        doc=me.doc,
        call_path=[c.function for c in chain],
        position=me.position,
        output_contract=me.output_contract,
        **inputs,
    )

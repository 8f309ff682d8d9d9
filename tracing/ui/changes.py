"""What changed between two model calls, in words a person reads: "call 12 had a tools block,
call 13 has none", "call 13 adds 2 messages", "system text changed at character 40", "the call
tree changed at character 163".

Both requests are laid out as :class:`Block`\\ s in wire order (tools, system, messages): a
call callctx recorded by its context's segments (and the exchanges after them), another
instrumentation's call by the parts its span carries (:class:`~callctx.components.wire.parts.Parts`).
:func:`in_words` compares the two part by part. Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from callctx.components.cache import exchange_text
from callctx.components.cache_ledger import common_prefix
from callctx.components.context import Context
from callctx.components.wire.exchange import AssistantTurn, Exchange, ToolResults
from callctx.components.wire.parts import Parts

Part = Literal["tools", "system", "messages"]
BlockKind = Literal["segment", "exchange", "tool", "text", "message"]
_SAID_AT_MOST = 4  # changed blocks of the messages named one by one
_NOUNS: dict[BlockKind, str] = {
    "segment": "block", "exchange": "exchange", "tool": "tool", "text": "system text", "message": "message",
}  # fmt: skip


class Block(msgspec.Struct, frozen=True):
    """One piece of a request: its part, what a person calls it (a component, a tool's name,
    a message's role), its text, and what kind of piece it is."""

    part: Part
    name: str
    text: str
    kind: BlockKind


def of_context(context: Context, exchanges: Sequence[Exchange]) -> list[Block]:
    """The blocks of one of callctx's calls: its segments, then the exchanges after them."""
    out: list[Block] = []
    for sg in context.segments:
        part: Part = "tools" if sg.section == "tools" else "system" if sg.section == "system" else "messages"
        out.append(Block(part, sg.component, sg.text, "segment"))
    for e in exchanges:
        out.append(Block("messages", _exchange_name(e), exchange_text(e), "exchange"))
    return out


def of_parts(parts: Parts) -> list[Block]:
    """The blocks of a request as its parts give it (any call, any wire)."""
    names = list(parts.tool_names) + [f"tool {i}" for i in range(len(parts.tool_names), len(parts.tools))]
    return [
        *(Block("tools", n, t, "tool") for n, t in zip(names, parts.tools, strict=False)),
        *(Block("system", f"system text {i}", t, "text") for i, t in enumerate(parts.system)),
        *(Block("messages", *_role_and_text(m), "message") for m in parts.messages),
    ]


def _role_and_text(message: str) -> tuple[str, str]:
    """A message as :class:`Parts` keeps it (``role: text``), split."""
    role, _, text = message.partition(": ")
    return role, text


def in_words(
    before: Sequence[Block],
    after: Sequence[Block],
    was: int,
    now: int,
    models: tuple[str | None, str | None] = (None, None),
) -> list[str]:
    """What call ``now`` (``after``) sends differently from call ``was`` (``before``), one
    sentence per change, in wire order (``models``: the models each asked, when known, first);
    one sentence saying so when nothing differs."""
    old_model, new_model = models
    said = [
        *([f"call {now} asks {new_model}, call {was} asked {old_model}"] if old_model != new_model else []),
        *_tools(_of(before, "tools"), _of(after, "tools"), was, now),
        *_system(_of(before, "system"), _of(after, "system"), was, now),
        *_messages(_of(before, "messages"), _of(after, "messages"), was, now),
    ]
    return said or [f"nothing call {now} sends differs from call {was}"]


def _of(blocks: Sequence[Block], part: Part) -> list[Block]:
    return [b for b in blocks if b.part == part]


def _tools(a: list[Block], b: list[Block], was: int, now: int) -> list[str]:
    if a and not b:
        return [f"call {was} had a tools block, call {now} has none"]
    if b and not a:
        return [f"call {now} has a tools block, call {was} had none"]
    if [(x.name, x.text) for x in a] == [(x.name, x.text) for x in b]:
        return []
    if any(x.kind == "segment" for x in a + b):  # one block of every tool's definition: where it changed
        old, new = "".join(x.text for x in a), "".join(x.text for x in b)
        return [f"the tools block changed at character {common_prefix(old, new):,}"]
    old_by, new_by = {x.name: x.text for x in a}, {x.name: x.text for x in b}
    out = []
    added = [n for n in new_by if n not in old_by]
    removed = [n for n in old_by if n not in new_by]
    changed = [n for n in new_by if n in old_by and new_by[n] != old_by[n]]
    if added:
        out.append(f"call {now} adds {_count(len(added), 'tool')}: {', '.join(added)}")
    if removed:
        out.append(f"call {now} drops {_count(len(removed), 'tool')}: {', '.join(removed)}")
    out.extend(f"tool {n} changed" for n in changed)
    return out or ["the tools are sent in another order"]


def _system(a: list[Block], b: list[Block], was: int, now: int) -> list[str]:
    if a and not b:
        return [f"call {was} had system text, call {now} has none"]
    if b and not a:
        return [f"call {now} has system text, call {was} had none"]
    old, new = "".join(x.text for x in a), "".join(x.text for x in b)
    if old == new:
        return []
    at = common_prefix(old, new)
    where = ""
    pos = 0
    for x in b:  # the block of the later call the change falls in
        if pos + len(x.text) > at or x is b[-1]:
            where = f" ({x.name})" if x.kind == "segment" else ""
            break
        pos += len(x.text)
    return [f"system text changed at character {at:,}{where}"]


def _messages(a: list[Block], b: list[Block], was: int, now: int) -> list[str]:
    same = 0
    while same < min(len(a), len(b)) and (a[same].name, a[same].text) == (b[same].name, b[same].text):
        same += 1
    if same == len(a) == len(b):
        return []
    if same == len(a):
        return [f"call {now} adds {_listed(b[same:])}"]
    if same == len(b):
        return [f"call {now} has {_listed(a[same:], fewer=True)} than call {was}"]
    said = []
    differing = [i for i in range(same, min(len(a), len(b))) if (a[i].name, a[i].text) != (b[i].name, b[i].text)]
    for i in differing[:_SAID_AT_MOST]:
        old, new = a[i], b[i]
        if old.kind == "segment" and new.kind == "segment" and old.name != new.name:
            said.append(
                f"call {now} has the {_human(new.name)} block where call {was} had the {_human(old.name)} block"
            )
        elif old.kind == new.kind:
            said.append(f"{_what(new, i)} changed at character {common_prefix(old.text, new.text):,}")
        else:
            said.append(f"call {now} has {_what(new, i)} where call {was} had {_what(old, i)}")
    if len(differing) > _SAID_AT_MOST:
        said.append(f"{len(differing) - _SAID_AT_MOST:,} more changed")
    if len(b) > len(a):
        said.append(f"call {now} adds {_listed(b[len(a) :])}")
    elif len(b) < len(a):
        said.append(f"call {now} has {_listed(a[len(b) :], fewer=True)} than call {was}")
    return said


def _what(x: Block, i: int) -> str:
    if x.kind == "segment":
        return f"the {_human(x.name)}"
    if x.kind == "message":
        return f"message {i} ({x.name})"
    return f"the {x.name} exchange"


def _listed(blocks: Sequence[Block], *, fewer: bool = False) -> str:
    """``2 messages (assistant, tool)``: how many blocks, of which kind, and what they are."""
    kinds = {x.kind for x in blocks}
    noun = _NOUNS[blocks[0].kind] if len(kinds) == 1 else "block"
    names = ", ".join(_human(x.name) for x in blocks[:6]) + (", …" if len(blocks) > 6 else "")
    n = len(blocks)
    return f"{n:,}{' fewer' if fewer else ''} {noun}{'' if n == 1 else 's'} ({names})"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _human(name: str) -> str:
    """A component's name as words: ``call_tree`` → ``call tree``."""
    return name.replace("_", " ")


def _exchange_name(e: Exchange) -> str:
    if isinstance(e, AssistantTurn):
        return "assistant"
    if isinstance(e, ToolResults):
        return "tool results"
    return "note"


__all__ = ["Block", "in_words", "of_context", "of_parts"]

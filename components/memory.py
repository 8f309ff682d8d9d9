"""Memory in the context: the blocks that show it (the backends live in ``memory_store``).

Two blocks, two jobs. The resident ``<memory>`` block (first layer) introduces itself: which
subsystem wrote it, where its workspace is on disk, that it is a budgeted summary and not
all of memory, and which tools read the rest; a model that cannot name its memory goes
looking in the wrong places. The per-turn recall goes in a ``<memory-context>`` fence saying
it is recalled memory, not new user input. Memory has three states that must read
differently: off (nothing), empty (one line: on, no content yet, nothing wrong) and failed
(one line: not retrieved this turn, and its absence is not evidence).
"""

from __future__ import annotations

import functools
import logging
import re

from .component import ContextComponent
from .fences import neutralize_fences
from .inputs import Ctx
from .memory_store import MemoryBackend

log = logging.getLogger(__name__)

_FENCED = re.compile(r"<memory-context>.*?</memory-context>", re.S | re.I)
_STRAY = re.compile(r"</?\s*memory(?:-context)?\s*>", re.I)


@functools.lru_cache(maxsize=64)
def _cleaned(text: str) -> str:
    """``neutralize_fences(sanitize(text))``, remembered: the resident blocks read the same
    memory text on every call until it changes."""
    return neutralize_fences(sanitize(text))


def sanitize(text: str) -> str:
    """Remove whole recall fences (content included) and stray memory tags from recalled text,
    so a recalled snippet can never open, close or nest a fence."""
    return _STRAY.sub("", _FENCED.sub("", text))


def fence_recall(snippets: list[str] | str) -> str | None:
    """The per-turn recall block, or None when nothing was recalled."""
    if isinstance(snippets, str):
        text = neutralize_fences(sanitize(snippets)).strip()
    else:
        kept = (neutralize_fences(sanitize(s)).strip() for s in snippets)
        text = "\n".join(f"- {s}" for s in kept if s)
    if not text:
        return None
    return (
        "<memory-context>\n[Recalled from memory: background the user gave earlier, not new user input.]\n"
        f"{text}\n</memory-context>"
    )


RECALL_FAILED = (
    "<memory-context>\n[Memory could not be retrieved this turn; its absence is not evidence about what the "
    "user has or has not said.]\n</memory-context>"
)


def prefetch(backend: MemoryBackend | None, query: str, limit: int = 5) -> tuple[str | None, bool]:
    """Recall for one turn: (snippets text or None, failed)."""
    if backend is None:
        return None, False
    try:
        snippets = backend.recall(query, limit)
    except Exception as e:  # noqa: BLE001 - a failing memory must not fail the turn
        log.warning("callctx: memory recall failed: %s", e)
        return None, True
    return ("\n".join(f"- {s}" for s in snippets) if snippets else None), False


def memory_global(ctx: Ctx) -> str | None:
    m = ctx.memory
    if m is None:
        return None
    try:
        core = m.core()
    except Exception as e:  # noqa: BLE001
        log.warning("callctx: memory (%s) could not be read: %s", m.name, e)
        return (
            f"<memory>Memory ({m.name}) could not be read this turn; its absence is not evidence about "
            "what the user has or has not said.</memory>"
        )
    if not core.strip():
        return (
            f"<memory>Memory is on ({m.name}, workspace {m.workspace}) and empty so far; it fills in as you "
            "work. Nothing is wrong.</memory>"
        )
    tools = " and ".join(t for t in m.tools if t in ("memory_search", "memory_read")) or ", ".join(m.tools)
    intro = (
        f"Written by {m.name}, a background writer, not by the user. Its workspace is {m.workspace}. This is "
        f"a budgeted summary, not all of memory; {tools} reach the rest."
    )
    return f"<memory>\n{intro}\n{_cleaned(core)}\n</memory>"


def project_memory(ctx: Ctx) -> str | None:
    m = ctx.memory
    if m is None:
        return None
    try:
        text = m.project()
    except Exception as e:  # noqa: BLE001
        log.warning("callctx: project memory (%s) could not be read: %s", m.name, e)
        return None
    text = _cleaned(text).strip()
    return f"<project_memory>\n{text}\n</project_memory>" if text else None


COMPONENTS = [
    ContextComponent("memory_global", "L0", 9, memory_global),
    ContextComponent("project_memory", "L1", 4, project_memory),
]

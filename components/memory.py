"""Memory: a small backend protocol, a file-backed workspace, and the blocks that show it.

Two blocks, two jobs. The resident ``<memory>`` block (first layer) introduces itself: which
subsystem wrote it, where its workspace is on disk, that it is a budgeted summary and not
all of memory, and which tools read the rest; a model that cannot name its memory goes
looking in the wrong places. The per-turn recall goes in a ``<memory-context>`` fence saying
it is recalled memory, not new user input. Memory has three states that must read
differently: off (nothing), empty (one line: on, no content yet, nothing wrong) and failed
(one line: not retrieved this turn, and its absence is not evidence).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from .component import ContextComponent
from .ctx import Ctx
from .workspace import neutralize_fences

log = logging.getLogger("callctx.memory")

MEMORY_TOOLS = ("memory_search", "memory_read", "memory_list", "memory_write", "memory_edit", "memory_forget")


@runtime_checkable
class MemoryBackend(Protocol):
    """What the context needs from a memory system. ``core``/``project``/``recall`` may raise."""

    name: str
    workspace: Path
    tools: tuple[str, ...]

    def core(self) -> str:
        """The resident summary, already within its budget ("" when memory is empty)."""
        ...

    def project(self) -> str:
        """Notes scoped to the current project ("" when none)."""
        ...

    def recall(self, query: str, limit: int = 5) -> list[str]:
        """Snippets relevant to ``query``, best first."""
        ...


@dataclass
class FileMemory:
    """Memory kept as Markdown files: ``core.md`` (the resident summary), ``notes/*.md``
    (searchable notes) and, per project, ``projects/<name>.md``."""

    workspace: Path
    project_name: str | None = None
    budget_chars: int = 4000
    name: str = "callctx memory"
    tools: tuple[str, ...] = field(default=MEMORY_TOOLS)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).expanduser().resolve()

    def _read(self, path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def core(self) -> str:
        return _budget(self._read(self.workspace / "core.md").strip(), self.budget_chars)

    def project(self) -> str:
        if not self.project_name:
            return ""
        return _budget(self._read(self.workspace / "projects" / f"{self.project_name}.md").strip(), self.budget_chars)

    def recall(self, query: str, limit: int = 5) -> list[str]:
        words = {w for w in re.findall(r"\w{3,}", query.lower())}
        if not words:
            return []
        scored: list[tuple[int, str, str]] = []
        notes = self.workspace / "notes"
        if not notes.is_dir():
            return []
        for path in sorted(notes.glob("*.md")):
            for para in re.split(r"\n\s*\n", self._read(path)):
                para = para.strip()
                hits = len(words & set(re.findall(r"\w{3,}", para.lower())))
                if hits:
                    scored.append((-hits, path.name, para))
        scored.sort()
        return [f"({name}) {para}" for _, name, para in scored[:limit]]


def _budget(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[… summary cut at its budget]"


_FENCED = re.compile(r"<memory-context>.*?</memory-context>", re.S | re.I)
_STRAY = re.compile(r"</?\s*memory(?:-context)?\s*>", re.I)


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
    return f"<memory>\n{intro}\n{neutralize_fences(sanitize(core))}\n</memory>"


def project_memory(ctx: Ctx) -> str | None:
    m = ctx.memory
    if m is None:
        return None
    try:
        text = m.project()
    except Exception as e:  # noqa: BLE001
        log.warning("callctx: project memory (%s) could not be read: %s", m.name, e)
        return None
    text = neutralize_fences(sanitize(text)).strip()
    return f"<project_memory>\n{text}\n</project_memory>" if text else None


COMPONENTS = [
    ContextComponent("memory_global", "L0", 9, memory_global),
    ContextComponent("project_memory", "L1", 4, project_memory),
]

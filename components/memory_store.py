"""Where memory lives: the backend protocol the context blocks read, and ``FileMemory``, a
backend kept as Markdown files in one folder.

Threading: ``FileMemory`` reads files on every call and keeps no state besides its settings,
so one instance may serve several threads. Errors: ``core``/``project``/``recall`` may raise
``OSError``; the blocks that call them report a failed memory instead of failing the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

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

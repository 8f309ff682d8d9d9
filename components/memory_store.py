"""Where memory lives: the backend protocol the context blocks read, and ``FileMemory``, a
backend kept as Markdown files in one folder.

Threading: ``FileMemory`` reads files on every call and keeps no state besides its settings,
so one instance may serve several threads. Errors: ``core``/``project``/``recall`` may raise
``OSError``; the blocks that call them report a failed memory instead of failing the turn.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

log = logging.getLogger(__name__)

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


class MemoryAccessError(ValueError):
    """A memory file that resolves outside the memory folder, or is not a regular file."""


READ_LIMIT = 1 << 20  # bytes read from any one memory file
_PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass
class FileMemory:
    """Memory kept as Markdown files: ``core.md`` (the resident summary), ``notes/*.md``
    (searchable notes) and, per project, ``projects/<name>.md``.

    Only regular files inside the memory folder are read: a link that resolves outside it is
    refused (``MemoryAccessError``; a note is skipped with a warning), and ``project_name``
    must be a plain file name (letters, digits, ``.``, ``_``, ``-``; no separators, no
    ``..``). Each file is read up to ``READ_LIMIT`` bytes.
    """

    workspace: Path
    project_name: str | None = None
    budget_chars: int = 4000
    name: str = "callctx memory"
    tools: tuple[str, ...] = field(default=MEMORY_TOOLS)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).expanduser().resolve()
        name = self.project_name
        if name is not None and (not _PROJECT_NAME.fullmatch(name) or ".." in name):
            raise ValueError(
                f"project_name {name!r} is not a plain file name (letters, digits, '.', '_', '-'; "
                "no path separators or '..'): it would leave the memory folder"
            )

    def _path(self, relative: str) -> Path:
        """``relative`` inside the memory folder, links resolved; raises MemoryAccessError if
        it resolves outside."""
        path = self.workspace / relative
        real = Path(os.path.realpath(path))
        if real != self.workspace and self.workspace not in real.parents:
            raise MemoryAccessError(
                f"memory file {path} resolves to {real}, outside the memory folder {self.workspace}"
            )
        return real

    def _read(self, relative: str) -> str:
        real = self._path(relative)
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return ""
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise MemoryAccessError(f"memory file {real} is not a regular file")
            data = os.read(fd, READ_LIMIT)
        finally:
            os.close(fd)
        return data.decode("utf-8", errors="replace")

    def core(self) -> str:
        return _budget(self._read("core.md").strip(), self.budget_chars)

    def project(self) -> str:
        if not self.project_name:
            return ""
        return _budget(self._read(f"projects/{self.project_name}.md").strip(), self.budget_chars)

    def recall(self, query: str, limit: int = 5) -> list[str]:
        words = {w for w in re.findall(r"\w{3,}", query.lower())}
        if not words:
            return []
        scored: list[tuple[int, str, str]] = []
        notes = self.workspace / "notes"
        if not notes.is_dir():
            return []
        for path in sorted(notes.glob("*.md")):
            try:
                text = self._read(f"notes/{path.name}")
            except MemoryAccessError as e:
                log.warning("callctx: %s; skipped", e)
                continue
            for para in re.split(r"\n\s*\n", text):
                para = para.strip()
                hits = len(words & set(re.findall(r"\w{3,}", para.lower())))
                if hits:
                    scored.append((-hits, path.name, para))
        scored.sort()
        return [f"({name}) {para}" for _, name, para in scored[:limit]]


def _budget(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[… summary cut at its budget]"

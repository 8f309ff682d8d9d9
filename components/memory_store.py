"""Where memory lives: the backend protocol the context blocks read, and ``FileMemory``, a
backend kept as Markdown files in one folder.

Threading: ``FileMemory`` reads files on every call and keeps no state besides its settings
and a lock that serializes its writes (``write``/``edit``/``forget``), so one instance may
serve several threads. Errors: ``core``/``project``/``recall`` may raise ``OSError``; the
blocks that call them report a failed memory instead of failing the turn. The tool methods
(``list``/``read``/``search``/``write``/``edit``/``forget``, see ``MemoryTools``) raise
``MemoryAccessError`` (a path that is not a relative ``.md`` path inside the folder, or a
link leaving it), ``ValueError`` (too large, an ambiguous edit) or ``FileNotFoundError``.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import re
import stat
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from callctx.projection.errors import CallctxError

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


@runtime_checkable
class MemoryTools(MemoryBackend, Protocol):
    """A memory the model can browse and change through the six memory tools
    (``callctx.engine.memory_tools``). Paths are relative to the memory folder and end in ``.md``."""

    def list(self, prefix: str = "") -> builtins.list[str]:
        """Relative paths of the memory's ``.md`` files under ``prefix``, sorted."""
        ...

    def read(self, path: str) -> str:
        """One memory file's text."""
        ...

    def search(self, query: str, limit: int = 5) -> builtins.list[str]:
        """Paragraphs of any memory file matching ``query``, best first, each ``(path) text``."""
        ...

    def write(self, path: str, text: str) -> str:
        """Create or replace a file; returns a one-line confirmation."""
        ...

    def edit(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of ``old`` with ``new``; returns a one-line confirmation."""
        ...

    def forget(self, path: str) -> str:
        """Delete a file; returns a one-line confirmation."""
        ...


class MemoryAccessError(CallctxError, ValueError):
    """A memory path that is not a relative ``.md`` path inside the memory folder, a file
    that resolves outside the folder, or one that is not a regular file."""


READ_LIMIT = 1 << 20  # bytes read from any one memory file
MAX_NOTE_CHARS = 64_000  # characters in one file written or edited through the tools
MAX_PATH_CHARS = 200  # characters in a relative memory path
MAX_SEARCH_RESULTS = 50
MAX_SNIPPET_CHARS = 1_000  # characters of one search hit
FILE_MODE = 0o600
DIR_MODE = 0o700
CORE = "core.md"
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_AT_FUNCS = (os.open, os.mkdir, os.rename, os.unlink, os.stat)  # os.replace shares os.rename's
_HAS_DIR_FD = all(f in os.supports_dir_fd for f in _AT_FUNCS) and hasattr(os, "O_NOFOLLOW")
_PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


_texts: dict[tuple[str, int, int, int, int], str] = {}  # by (path, device, inode, size, mtime)


@dataclass
class FileMemory:
    """Memory kept as Markdown files: ``core.md`` (the resident summary), ``notes/*.md``
    (searchable notes) and, per project, ``projects/<name>.md``.

    Only regular files inside the memory folder are read: a link that resolves outside it is
    refused (``MemoryAccessError``; a note is skipped with a warning), and ``project_name``
    must be a plain file name (letters, digits, ``.``, ``_``, ``-``; no separators, no
    ``..``). Each file is read up to ``READ_LIMIT`` bytes.

    The tool methods (``MemoryTools``) take relative paths ending in ``.md`` (at most
    ``MAX_PATH_CHARS``; no ``..``, no absolute paths, no hidden names, no backslashes). A
    link that resolves outside the folder is refused with ``MemoryAccessError``; one that
    resolves inside acts on its target. ``write``/``edit`` keep each file within
    ``MAX_NOTE_CHARS`` characters (``ValueError`` beyond) and replace it atomically (a temp
    file in the same folder, fsync, ``os.replace``), creating files ``0600`` and folders
    ``0700`` as needed; where the platform allows, folders are walked without following
    links, so a link swapped in during a write cannot redirect it. ``forget`` deletes one
    file but refuses ``core.md`` (the resident summary: ``write`` it empty instead).
    """

    workspace: Path
    project_name: str | None = None
    budget_chars: int = 4000
    name: str = "callctx memory"
    tools: tuple[str, ...] = field(default=MEMORY_TOOLS)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

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
        root = str(self.workspace)
        found = os.path.realpath(os.path.join(root, relative))
        if found == root or found.startswith(root if root.endswith(os.sep) else root + os.sep):
            return Path(found)  # plainly inside (else the comparison of paths below decides)
        path = self.workspace / relative
        real = Path(found)
        if real != self.workspace and self.workspace not in real.parents:
            raise MemoryAccessError(
                f"memory file {path} resolves to {real}, outside the memory folder {self.workspace}"
            )
        return real

    def _read(self, relative: str) -> str:
        parts = relative.split(os.sep)
        if len(parts) <= 2 and all(p not in ("", ".", "..") for p in parts):
            # The usual case costs an lstat or two: a regular file (not a link) in the memory
            # folder (resolved when the memory was made), or in a real folder (not a link) of
            # it, is inside it; its text is the one read before while it is the same file,
            # unchanged.
            path = os.path.join(self.workspace, relative)
            try:
                folder_ok = len(parts) == 1 or stat.S_ISDIR(os.lstat(os.path.dirname(path)).st_mode)
                st = os.lstat(path) if folder_ok else None
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode):
                key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
                text = _texts.get(key)
                if text is None:
                    text = self._read_checked(relative)
                    if len(_texts) > 256:
                        _texts.clear()
                    _texts[key] = text
                return text
        return self._read_checked(relative)

    def _read_checked(self, relative: str) -> str:
        """Every check, links resolved: where the file really is, what it is, and its text."""
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

    # ---- the memory tools ------------------------------------------------------------------
    def list(self, prefix: str = "") -> builtins.list[str]:
        """Relative paths of the ``.md`` files under ``prefix`` (a folder or the start of a
        path), sorted; hidden names and links resolving outside the folder are left out."""
        prefix = _check_prefix(prefix)
        out: builtins.list[str] = []
        if not self.workspace.is_dir():
            return out
        for root, dirs, files in os.walk(self.workspace):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel_root = Path(root).relative_to(self.workspace)
            for name in files:
                if name.startswith(".") or not name.endswith(".md"):
                    continue
                rel = (rel_root / name).as_posix()
                if not rel.startswith(prefix):
                    continue
                try:
                    if stat.S_ISREG(os.stat(self._path(rel)).st_mode):
                        out.append(rel)
                except (MemoryAccessError, OSError):
                    continue
        return sorted(out)

    def read(self, path: str) -> str:
        """The text of one memory file (up to ``READ_LIMIT`` bytes); ``FileNotFoundError``
        when there is none."""
        rel = _check_path(path)
        real = self._path(rel)
        if not real.exists():
            raise FileNotFoundError(f"no memory file {rel!r}")
        return self._read(rel)

    def search(self, query: str, limit: int = 5) -> builtins.list[str]:
        """Paragraphs of every memory file sharing words (3+ letters) with ``query``, most
        shared first, each ``(path) text`` cut at ``MAX_SNIPPET_CHARS``."""
        words = set(re.findall(r"\w{3,}", query.lower()))
        limit = max(1, min(int(limit), MAX_SEARCH_RESULTS))
        if not words:
            return []
        scored: builtins.list[tuple[int, str, int, str]] = []
        for rel in self.list():
            try:
                text = self._read(rel)
            except (MemoryAccessError, OSError) as e:
                log.warning("callctx: %s; skipped", e)
                continue
            for i, para in enumerate(re.split(r"\n\s*\n", text)):
                para = para.strip()
                hits = len(words & set(re.findall(r"\w{3,}", para.lower())))
                if hits:
                    scored.append((-hits, rel, i, para))
        scored.sort()
        return [f"({rel}) {_cut(para, MAX_SNIPPET_CHARS)}" for _, rel, _, para in scored[:limit]]

    def write(self, path: str, text: str) -> str:
        """Create or replace one file with ``text`` (at most ``MAX_NOTE_CHARS``)."""
        rel = _check_path(path)
        _check_size(rel, text)
        with self._lock:
            existed = self._replace(rel, text)
        return f"{'replaced' if existed else 'created'} {rel} ({len(text)} characters)"

    def edit(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of ``old`` in a file with ``new``; ``ValueError`` when
        ``old`` is empty, absent or found more than once."""
        rel = _check_path(path)
        if not old:
            raise ValueError("edit: 'old' is empty; give the exact text to replace")
        with self._lock:
            text = self._whole(rel)
            count = text.count(old)
            if count == 0:
                raise ValueError(f"edit: the text to replace was not found in {rel}; nothing changed")
            if count > 1:
                raise ValueError(
                    f"edit: the text to replace occurs {count} times in {rel}; include more of the "
                    "surrounding text so it occurs once. Nothing changed"
                )
            result = text.replace(old, new, 1)
            _check_size(rel, result)
            self._replace(rel, result)
        return f"edited {rel}: replaced 1 occurrence ({len(old)} → {len(new)} characters)"

    def forget(self, path: str) -> str:
        """Delete one file (never ``core.md``)."""
        rel = _check_path(path)
        if rel == CORE:
            raise MemoryAccessError(f"forget refuses {CORE}, the resident summary: write it empty instead")
        with self._lock:
            real = self._path(rel)
            st = os.lstat(real) if os.path.lexists(real) else None
            if st is None:
                raise FileNotFoundError(f"no memory file {rel!r}")
            if not stat.S_ISREG(st.st_mode):
                raise MemoryAccessError(f"memory file {rel} is not a regular file")
            parts = self._parts(rel, real)
            if _HAS_DIR_FD:
                fd = self._open_dir(parts[:-1], create=False)
                try:
                    os.unlink(parts[-1], dir_fd=fd)
                finally:
                    os.close(fd)
            else:
                os.unlink(real)
        return f"forgot {rel}"

    def _whole(self, rel: str) -> str:
        """A file's full text for an edit: refused when it is too large to edit whole."""
        real = self._path(rel)
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise FileNotFoundError(f"no memory file {rel!r}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise MemoryAccessError(f"memory file {rel} is not a regular file")
            data = os.read(fd, 4 * MAX_NOTE_CHARS + 1)
        finally:
            os.close(fd)
        text = data.decode("utf-8", errors="replace")
        if len(data) > 4 * MAX_NOTE_CHARS or len(text) > MAX_NOTE_CHARS:
            raise ValueError(f"memory file {rel} is over {MAX_NOTE_CHARS} characters; too large to edit")
        return text

    def _replace(self, rel: str, text: str) -> bool:
        """Write ``text`` to ``rel`` atomically (callers hold the lock); True if it existed."""
        real = self._path(rel)  # refuses links resolving outside; a link inside acts on its target
        parts = self._parts(rel, real)
        data = text.encode("utf-8")
        tmp = f".{parts[-1]}.{uuid.uuid4().hex}.tmp"
        if not _HAS_DIR_FD:  # pragma: no cover - platforms without openat
            real.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            self._path(rel)  # the folders just made must still resolve inside
            existed = real.exists()
            tmp_path = real.parent / tmp
            fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            try:
                os.replace(tmp_path, real)
            except BaseException:
                tmp_path.unlink(missing_ok=True)
                raise
            return existed
        self.workspace.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        dfd = self._open_dir(parts[:-1], create=True)
        try:
            try:
                st = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise MemoryAccessError(f"memory file {rel} is not a regular file")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=dfd)
            try:
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dfd)
                raise
            with contextlib.suppress(OSError):
                os.fsync(dfd)  # the rename itself survives a crash
        finally:
            os.close(dfd)
        return st is not None

    def _parts(self, rel: str, real: Path) -> tuple[str, ...]:
        parts = real.relative_to(self.workspace).parts
        if not parts:
            raise MemoryAccessError(f"memory file {rel} resolves to the memory folder itself")
        return parts

    def _open_dir(self, parts: tuple[str, ...], *, create: bool) -> int:
        """A descriptor of the folder ``parts`` under the workspace, walked without following
        links (``create``: making missing folders ``0700``)."""
        fd = os.open(self.workspace, _DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, DIR_MODE, dir_fd=fd)
                try:
                    nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as e:
                    raise MemoryAccessError(
                        f"memory folder {part!r} changed or is not a plain folder inside {self.workspace}: {e.strerror}"
                    ) from None
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd


def _check_path(path: object) -> str:
    """A memory path as given, if it is a plain relative ``.md`` path; MemoryAccessError if not."""
    if not isinstance(path, str) or not path.strip():
        raise MemoryAccessError("a memory path is a non-empty relative path such as 'notes/tea.md'")
    if len(path) > MAX_PATH_CHARS:
        raise MemoryAccessError(f"memory path is over {MAX_PATH_CHARS} characters")
    if "\x00" in path or "\\" in path:
        raise MemoryAccessError(f"memory path {path!r} contains a NUL or a backslash; use '/' between folders")
    if path.startswith("/") or os.path.isabs(path) or re.match(r"[A-Za-z]:", path):
        raise MemoryAccessError(
            f"memory path {path!r} is absolute; memory paths are relative to the memory folder, e.g. 'notes/tea.md'"
        )
    parts = path.split("/")
    if ".." in parts:
        raise MemoryAccessError(f"memory path {path!r} contains '..': it would leave the memory folder")
    if any(p in ("", ".") or p.startswith(".") for p in parts):
        raise MemoryAccessError(f"memory path {path!r} has an empty, '.' or hidden part")
    if not path.endswith(".md") or parts[-1] == ".md":
        raise MemoryAccessError(f"memory path {path!r} does not name a Markdown file (ending in '.md')")
    return path


def _check_prefix(prefix: object) -> str:
    if prefix in (None, ""):
        return ""
    if not isinstance(prefix, str):
        raise MemoryAccessError("a list prefix is a relative folder such as 'notes/'")
    if prefix.startswith("/") or os.path.isabs(prefix) or ".." in prefix.split("/") or "\\" in prefix:
        raise MemoryAccessError(f"list prefix {prefix!r} is not a relative path inside the memory folder")
    return prefix.removeprefix("./")


def _check_size(rel: str, text: object) -> None:
    if not isinstance(text, str):
        raise ValueError("memory text must be a string")
    if len(text) > MAX_NOTE_CHARS:
        raise ValueError(
            f"{rel}: {len(text)} characters is over the limit of {MAX_NOTE_CHARS} per memory file; "
            "split it into several notes. Nothing was written"
        )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " […]"


def _budget(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[… summary cut at its budget]"

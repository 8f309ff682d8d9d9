"""The event log: an append-only file, one JSON record per line.

The log is the source of truth: the live projection is a cache of it, and any moment of any
run can be rebuilt by replaying it. Writes go straight to the file descriptor (no user-space
buffer), so a process killed at any point leaves every fully written record on disk; a record
torn by a crash mid-write is the only possible damage, and readers drop it with a warning.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from .events import LogHeader, Record, decode, decode_lines, encode

log = logging.getLogger("callctx.log")

FsyncPolicy = Literal["always", "never"] | float
"""``"always"``: fsync after every record (durable against power loss, slow); ``"never"``:
leave it to the OS and fsync on close (survives a process crash, not a power cut); a number:
fsync at most once per that many seconds."""

_CHUNK = 1 << 22


class LogError(Exception):
    """The log cannot be read (missing, unreadable, or corrupt in strict mode)."""


@dataclass(frozen=True)
class Damage:
    """A record that could not be read: where it was and why."""

    line: int
    offset: int
    reason: str
    torn: bool


class EventLog:
    """Appends records to a log file created with mode 0600.

    Thread-safe; safe to share a file between processes (``O_APPEND`` writes of whole lines).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: FsyncPolicy = "never") -> None:
        if not (fsync in ("always", "never") or isinstance(fsync, (int, float))):
            raise ValueError(f"fsync must be 'always', 'never' or a number of seconds, not {fsync!r}")
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._last_sync = time.monotonic()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _cut_torn_tail(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if os.fstat(self._fd).st_size == 0:
            self.append(LogHeader(created_ns=time.time_ns()))

    def append(self, record: Record) -> None:
        self.write(encode(record))

    def write(self, line: bytes) -> None:
        """Append one encoded record (must end with a newline)."""
        with self._lock:
            fd = self._fd
            if fd < 0:
                raise ValueError(f"event log {self.path} is closed")
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            if self.fsync == "never":
                return
            if self.fsync == "always":
                os.fsync(fd)
                return
            now = time.monotonic()
            if now - self._last_sync >= self.fsync:
                os.fsync(fd)
                self._last_sync = now

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                try:
                    os.fsync(self._fd)
                finally:
                    os.close(self._fd)
                    self._fd = -1

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    """Before appending to an existing log, drop a torn last record so new lines stay whole."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        keep = _last_newline(f, size)
        log.warning("event log %s: dropping a torn last record (%d bytes)", path, size - keep)
        f.truncate(keep)


def _last_newline(f, size: int) -> int:
    """Offset just past the last newline of the file (0 if there is none)."""
    pos = size
    while pos > 0:
        step = min(1 << 16, pos)
        pos -= step
        f.seek(pos)
        chunk = f.read(step)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos + i + 1
    return 0


_BLOB_LINE = re.compile(rb'^\{"e":"blob","hash":"([0-9a-f]{64})"', re.M)


def blob_hashes(path: str | os.PathLike[str]) -> set[str]:
    """The hashes of the texts a log already stores (a byte scan, no decoding)."""
    found: set[str] = set()
    try:
        with open(path, "rb") as f:
            tail = b""
            while chunk := f.read(_CHUNK):
                buf = tail + chunk
                cut = buf.rfind(b"\n") + 1
                found.update(h.decode() for h in _BLOB_LINE.findall(buf, 0, cut))
                tail = buf[cut:]
    except FileNotFoundError:
        pass
    return found


def read_log(
    path: str | os.PathLike[str], *, strict: bool = False, damage: list[Damage] | None = None
) -> Iterator[Record]:
    """Yield every readable record of a log, in order.

    A torn last record (no final newline) is dropped with a warning. A damaged record in the
    middle is skipped with a warning naming its line, or raises :class:`LogError` when
    ``strict``. Each problem is also appended to ``damage`` when given.
    """
    p = Path(path)
    try:
        f = open(p, "rb")  # noqa: SIM115 - closed by the with below; errors must be told apart
    except FileNotFoundError:
        raise LogError(f"no event log at {p}") from None
    except OSError as e:
        raise LogError(f"cannot read event log {p}: {e.strerror}") from None
    with f:
        line_no = 0
        offset = 0
        rest = b""
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            buf = rest + chunk
            end = buf.rfind(b"\n") + 1
            rest = buf[end:]
            if end:
                yield from _decode_block(buf[:end], p, line_no, offset, strict, damage)
                line_no += buf.count(b"\n", 0, end)
                offset += end
        if rest:
            problem = Damage(line_no + 1, offset, "torn last record (no final newline)", True)
            log.warning("event log %s: line %d: %s; dropped", p, problem.line, problem.reason)
            if damage is not None:
                damage.append(problem)


def _decode_block(
    block: bytes, path: Path, line_no: int, offset: int, strict: bool, damage: list[Damage] | None
) -> Iterator[Record]:
    try:
        yield from decode_lines(block)
        return
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    # Slow path: find the bad lines one by one.
    pos = 0
    for i, line in enumerate(block.split(b"\n")[:-1], start=line_no + 1):
        start = pos
        pos += len(line) + 1
        if not line.strip():
            continue
        try:
            yield decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            problem = Damage(i, offset + start, f"unreadable record: {e}", False)
            if strict:
                raise LogError(f"event log {path}: line {i}: {problem.reason}") from None
            log.warning("event log %s: line %d: %s; skipped", path, i, problem.reason)
            if damage is not None:
                damage.append(problem)

"""The spool of ``callctx serve --store``: the spans it has acknowledged and not yet written to
the table, on the local disk.

A request is answered once its spans are in the spool, as ``callctx serve --log`` answers once
they are in its log; the table's writer inserts what the spool holds in large batches and then
removes it. The spool is a folder of segments, one per batch the writer takes: the segment the
requests append to now, and any the writer has not yet written to the table.

Durability contract
-------------------
* :meth:`Segment.append` returns once the request's spans are in the file (in the kernel's page
  cache): one ``write(2)`` of one line on an ``O_APPEND`` descriptor. From then on a crash of
  the process (``SIGKILL``, the OOM killer) cannot lose them: the next receiver started with
  this spool writes every segment it finds to the table before it serves, skipping the spans
  the table holds already (a crash between the insert and the segment's removal writes nothing
  twice). A power cut can lose what the OS had not flushed to the disk yet.
* An append that fails (a full disk: ``ENOSPC``, ``EDQUOT``; ``EIO``) raises ``OSError``: the
  request is answered 503 and its sender sends it again. An append cut short (a kill in the
  middle of the write, a full disk) leaves at most one torn last line in its segment: that
  request was never answered, and reading the segment skips the line with a warning.
* A segment is removed only after every span in it is in the table. The folder is made
  ``0700`` and each segment ``0600`` (they hold the spans' full texts); a folder that is a
  symbolic link, or a segment name that already exists, is refused.
* One receiver at a time: :func:`lock` takes an exclusive ``flock`` on the folder's ``lock``
  file for as long as the receiver runs (the kernel lets go when its process dies, however it
  dies). A second receiver given the same spool is refused with a clear error: it would
  otherwise write the first one's live segments to the table a second time.

Format: a first line ``{"callctx_spool": 1}``, then one JSON array of spans
(:class:`~callctx.projection.batch.Received`) per request.

Threading: one :class:`Segment` is appended to by one thread at a time (the receiver's lock);
:func:`leftover` and :func:`read` at start, before any segment is open.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
from pathlib import Path
from typing import Final

import msgspec

from callctx.projection.batch import Received
from callctx.projection.errors import BadInput

log = logging.getLogger(__name__)

HEADER: Final = b'{"callctx_spool":1}\n'
SUFFIX: Final = ".spool"

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(list[Received]).decode


def folder(path: str | os.PathLike[str]) -> Path:
    """The spool folder ``path``, made ``0700`` when missing (:class:`BadInput` when it is a
    symbolic link or not a folder)."""
    p = Path(path)
    with contextlib.suppress(FileExistsError):
        os.mkdir(p, 0o700)
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"the spool {p} is not a folder (a symbolic link is refused)")
    return p


class SpoolBusy(BadInput):
    """Another receiver holds the spool."""


def lock(spool: Path) -> int:
    """Hold the spool for this process (see the module docstring); the descriptor to
    :func:`unlock`. :class:`SpoolBusy` when another receiver holds it."""
    fd = os.open(spool / "lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SpoolBusy(
            f"the spool {spool} is in use by another `callctx serve --store`; give each receiver a --spool of its own"
        ) from None
    return fd


def unlock(fd: int) -> None:
    os.close(fd)  # closing the descriptor lets the lock go


def leftover(spool: Path) -> list[Path]:
    """The segments in ``spool``, oldest first."""
    return sorted(p for p in spool.iterdir() if p.name.endswith(SUFFIX) and p.is_file() and not p.is_symlink())


def read(path: Path) -> tuple[list[Received], int]:
    """The spans of a segment, and how many of its lines could not be read (a torn last line)."""
    spans: list[Received] = []
    torn = 0
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            if n == 0 and line == HEADER:
                continue
            if not line.strip():
                continue
            try:
                spans.extend(_decode(line))
            except (msgspec.ValidationError, msgspec.DecodeError):
                torn += 1
    if torn:
        log.warning("callctx: %d unreadable lines in the spool segment %s skipped (requests never answered)",
                    torn, path)  # fmt: skip
    return spans, torn


def line(spans: list[Received]) -> bytes:
    """One request's spans as a segment's line."""
    return _encode(spans) + b"\n"


class Segment:
    """One segment, open for appending (see the module docstring)."""

    def __init__(self, spool: Path, seq: int) -> None:
        self.path = spool / f"{seq:016d}{SUFFIX}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        self._fd: int | None = os.open(self.path, flags, 0o600)
        self.append(HEADER)

    def append(self, data: bytes) -> None:
        """Write ``data`` whole (``OSError`` when it cannot be)."""
        if self._fd is None:
            raise OSError(f"the spool segment {self.path} is closed")
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """Close the segment and delete it: its spans are in the table."""
        self.close()
        self.path.unlink(missing_ok=True)


def next_seq(spool: Path) -> int:
    """A sequence number after every segment's in ``spool``."""
    seqs = [int(p.name[: -len(SUFFIX)]) for p in leftover(spool) if p.name[: -len(SUFFIX)].isdigit()]
    return max(seqs, default=0) + 1


__all__ = ["Segment", "SpoolBusy", "folder", "leftover", "line", "lock", "next_seq", "read", "unlock"]

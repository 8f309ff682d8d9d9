"""The event log: an append-only file, one JSON record per line.

The log is the source of truth: the live projection is a cache of it, and any moment of any
run can be rebuilt by replaying it. Records reach the file by ``write(2)`` on an ``O_APPEND``
descriptor: one per record, or, with a buffer, one per batch of whole records.

Durability contract
-------------------
* Without a buffer (``buffer_bytes=0``), ``EventLog.write`` returns ``True`` once the whole record
  is in the file (in the kernel's page cache). From then on a crash of the process (an exception,
  ``os._exit``, ``SIGKILL``, the OOM killer) cannot lose it.
* With a buffer (``buffer_bytes > 0``; the runtime's default), records wait in this process's
  memory and are written together, in order, in one ``write(2)``. Records given as values
  (:meth:`EventLog.append`) wait as values and are encoded together when the batch is written
  (they are immutable: frozen structs of strings, numbers and containers nobody changes). They
  are written when ``buffer_bytes`` wait (a value counts as the average record of the last
  batch), when the oldest waiting record is ``buffer_seconds`` old (checked as records arrive, and by a
  background thread twice per ``buffer_seconds``), on :meth:`EventLog.flush` (the runtime flushes
  when a model call starts, before its request is sent, so a request on the wire always has its
  records, and everything before them, in the file; and when it ends), and at
  :meth:`EventLog.close`. A crash of the process loses what waits: the records since the last
  of those, at most about ``1.5 × buffer_seconds`` of them. ``write`` returns ``True`` when the
  record is waiting or written. A forked child starts with an empty buffer (its parent writes
  what waited).
* A power cut or a kernel crash can still lose what the OS had not flushed to the disk yet:
  with ``fsync="never"`` that is whatever was written since the OS last wrote back (on Linux
  typically up to ~30 s); with a number of seconds, the records written
  since the last fsync (one is made by the first write at least that many seconds after the
  previous one, so a log that goes quiet keeps its last records unsynced until the next write,
  the OS's own write-back, or ``close``); with ``"always"``, nothing ``write`` returned ``True``
  for. ``close`` always fsyncs.
* ``write`` returns ``False`` when the record could not be written (a full disk: ``ENOSPC``,
  ``EDQUOT``; ``EIO``...). It never raises for that: the record is kept in memory, in a bounded
  backlog (100,000 records or 256 MiB, whichever comes first; past that, further records are
  dropped and counted), and retried, in order, before the next record and at ``close``. Until
  then it exists only in this process: a ``SIGKILL`` loses the backlog, as does a disk that is
  still full at ``close``. The user sees one warning when the log starts failing, one info line
  when it writes again, and, only if records were lost, one error at ``close``
  ("N records could not be written to PATH").
* A write cut short (a full disk, a process killed in the middle of a large record) leaves at
  most one fragment: a line start without its end. It costs only that fragment. A writer that
  cut its own record short overwrites the fragment with spaces (a blank line) when it can, and
  always starts its next record on a fresh line; a writer that opens a log whose last line is
  unfinished does the same. Readers skip whatever fragments remain with a warning (reported as
  ``Damage(torn=True)``), including a fragment that another process's record was appended to
  (that record is read).
* The file is never truncated or rewritten: opening a log changes nothing in it, and the only
  bytes ever overwritten are a writer's own fragment.
* A writer holds a shared ``flock`` on the file from open to :meth:`EventLog.close` (the kernel
  drops it when the process dies, however it dies). Readers ask :func:`writers_alive`: a log
  nobody holds is finished, and its spans that never ended read as ``interrupted``; while a
  writer holds it they read as ``running``.
* Several writers, threads or processes, each with its own ``EventLog``, may append to one file
  at the same time: records are whole ``O_APPEND`` writes, so they never interleave within a
  record (on local filesystems; not on NFS). Each writer's records keep their order. When
  several writers create the file at once it may get more than one header; readers yield the
  first and skip the others.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from .errors import CallctxError
from .events import LogHeader, Record, encode

log = logging.getLogger(__name__)

_BUFFERED: weakref.WeakSet[EventLog] = weakref.WeakSet()  # logs that have buffered records


def _forget_in_child() -> None:
    for event_log in list(_BUFFERED):
        event_log._forget_waiting()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)

FsyncPolicy = Literal["always", "never"] | float
"""``"always"``: fsync after every record (durable against power loss, slow); ``"never"``:
leave it to the OS and fsync on close (survives a process crash, not a power cut); a number:
fsync at most once per that many seconds."""

BACKLOG_RECORDS = 100_000
"""At most this many records wait in memory for a log that cannot be written..."""
BACKLOG_BYTES = 256 << 20
"""...and at most this many bytes of them; further records are dropped (and counted)."""

_CHUNK = 1 << 22
_encode_lines = msgspec.json.Encoder().encode_lines  # what events.encode writes, one record per line
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError)


class LogError(CallctxError):
    """The log cannot be read (missing, unreadable, or corrupt in strict mode), or written (a
    path that is a symbolic link)."""


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def hold(fd: int, path: Path) -> None:
    """Take the writer's shared lock on an open log (see the durability contract). A reader's
    probe holds the exclusive lock for microseconds, so a refusal is retried briefly; a file
    someone else keeps locked is written all the same, and readers then take it as finished."""
    for attempt in range(200):
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(0.0005 * (attempt + 1) / 20)
        except OSError as e:  # a filesystem without flock
            log.debug("event log %s: no writer's lock (%s)", path, e)
            return
    log.warning("event log %s is locked by another program; readers may take it as finished", path)


def writers_alive(path: str | os.PathLike[str]) -> bool:
    """Does a writer (an open :class:`EventLog`, in any process) hold the log at ``path``?
    ``True`` too when that cannot be told (the file cannot be opened, or has no locks)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | _NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def open_private(path: Path, flags: int = 0) -> int:
    """Open (creating it) a file only its owner may read, never through a symbolic link: a link
    planted at ``path`` (a shell's rc file, say) raises :class:`LogError` instead of being
    written through. A file that exists with a wider mode, and is ours, is made 0600. Read and
    write when it may be read, else write only; ``flags`` are added (``O_APPEND``...)."""
    base = os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | flags
    try:
        try:  # readable too, to look at the last byte of the file
            fd = os.open(path, os.O_RDWR | base, 0o600)
        except PermissionError:
            fd = os.open(path, os.O_WRONLY | base, 0o600)
    except OSError as e:
        if e.errno == errno.ELOOP or os.path.islink(path):
            raise LogError(f"{path} is a symbolic link; callctx writes through none (give the file itself)") from None
        raise
    st = os.fstat(fd)
    if st.st_mode & 0o077 and st.st_uid == os.geteuid():
        os.fchmod(fd, 0o600)
    return fd


@dataclass(frozen=True)
class Damage:
    """A record that could not be read: where it was and why.

    ``torn``: the start of a record whose end was never written (a crash or a full disk in the
    middle of a write); expected after one, and never an error, even in strict mode. Otherwise
    the bytes are corrupt.
    """

    line: int
    offset: int
    reason: str
    torn: bool


class EventLog:
    """Appends records to a log file created with mode 0600 (and a :class:`LogHeader` first).

    Thread-safe (one lock); any number of ``EventLog`` objects, in any processes, may append to
    the same file. ``write`` never raises for a failing disk: see the module's durability
    contract.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncPolicy = "never",
        backlog_records: int = BACKLOG_RECORDS,
        backlog_bytes: int = BACKLOG_BYTES,
        buffer_bytes: int = 0,
        buffer_seconds: float = 1.0,
    ) -> None:
        if not (fsync in ("always", "never") or isinstance(fsync, (int, float))):
            raise ValueError(f"fsync must be 'always', 'never' or a number of seconds, not {fsync!r}")
        if buffer_bytes < 0 or not buffer_seconds >= 0:
            raise ValueError("buffer_bytes and buffer_seconds must not be negative")
        self.buffer_bytes = buffer_bytes
        self.buffer_seconds = buffer_seconds
        self._waiting: list[bytes | Record] = []  # buffered records, in order: encoded, or values
        self._waiting_size = 0  # bytes of the encoded ones, plus an estimate for the values
        self._per_value = 512  # bytes a record given as a value took, on average, in the last batch
        self._waiting_since = 0.0  # monotonic time of the oldest waiting record
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._last_sync = time.monotonic()
        self._backlog: deque[bytes] = deque()
        self._backlog_size = 0  # bytes in the backlog
        self._max_records = backlog_records
        self._max_bytes = backlog_bytes
        self._dropped = 0  # records refused because the backlog was full
        self._failing = False  # between a failed write and the next write that empties the backlog
        self._sync_failing = False
        self._flusher: threading.Thread | None = None  # started with the first buffered record
        self._stop = threading.Event()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = open_private(self.path, os.O_APPEND)
        hold(self._fd, self.path)
        # Does the file end on a line boundary? False: start the next record with a newline;
        # None: not known (after a failed write), look before writing.
        self._at_line_start: bool | None = self._ends_with_newline()
        if os.fstat(self._fd).st_size == 0:
            self.append(LogHeader(created_ns=time.time_ns()))

    # ---- writing ---------------------------------------------------------------------------
    def append(self, record: Record) -> bool:
        """Append one record; see :meth:`write`. With a buffer it waits as a value, encoded with
        the rest of its batch when the batch is written (the caller must not change it)."""
        if not self.buffer_bytes:
            return self.write(encode(record))
        with self._lock:
            if self._fd < 0:
                raise ValueError(f"event log {self.path} is closed")
            now = time.monotonic()
            waiting = self._waiting
            if not waiting:
                self._waiting_since = now
                if self._flusher is None:
                    self._start_flusher()
            waiting.append(record)
            self._waiting_size += self._per_value
            if self._waiting_size < self.buffer_bytes and now - self._waiting_since < self.buffer_seconds:
                return True
            return self._flush()

    def write(self, line: bytes) -> bool:
        """Append one encoded record, or several whole ones in one ``write(2)`` (a newline is
        added if the last lacks one).

        ``True``: the record is in the file. ``False``: the file cannot be written (disk full...);
        the record is kept in memory and retried before the next one and at :meth:`close`.
        Raises ``ValueError`` only when the log is closed.
        """
        if not line.endswith(b"\n"):
            line = bytes(line) + b"\n"
        with self._lock:
            if self._fd < 0:
                raise ValueError(f"event log {self.path} is closed")
            if self.buffer_bytes:
                now = time.monotonic()
                if not self._waiting:
                    self._waiting_since = now
                    if self._flusher is None:
                        self._start_flusher()
                self._waiting.append(line)
                self._waiting_size += len(line)
                if self._waiting_size < self.buffer_bytes and now - self._waiting_since < self.buffer_seconds:
                    return True
                return self._flush()
            self._waiting.append(line)  # unbuffered: written at once, as a batch of one
            return self._flush()

    def flush(self) -> bool:
        """Write the records waiting in the buffer, in one ``write(2)``. ``True``: nothing waits
        (in the buffer or, after a failed write, in the backlog)."""
        with self._lock:
            if self._fd < 0:
                return not self._backlog
            return self._flush()

    def _flush(self) -> bool:
        waiting = self._waiting
        if not waiting:
            return not self._backlog or self._drain()
        self._waiting = []
        self._waiting_size = 0
        lines = self._encoded(waiting)
        batch = lines[0] if len(lines) == 1 else b"".join(lines)
        if (self._backlog and not self._drain()) or not self._put(batch):
            for chunk in lines:  # whatever part reached the file was blanked: retry them all
                self._keep_all(chunk)
            return False
        self._sync()
        if self._failing:
            self._recovered()
        return True

    def _encoded(self, waiting: list[bytes | Record]) -> list[bytes]:
        """The waiting records as lines: each run of values encoded in one call."""
        values = 0
        for item in waiting:
            if type(item) is not bytes:
                values += 1
        if not values:
            return waiting  # type: ignore[return-value]  # all bytes
        out: list[bytes] = []
        run: list[Record] = []
        size = 0
        for item in waiting:
            if type(item) is bytes:
                if run:
                    size += self._encode_run(run, out)
                    run = []
                out.append(item)
            else:
                run.append(item)  # type: ignore[arg-type]
        if run:
            size += self._encode_run(run, out)
        self._per_value = max(size // values, 64)
        return out

    def _encode_run(self, run: list[Record], out: list[bytes]) -> int:
        """Append ``run`` encoded to ``out``; its size. A record that cannot be encoded (a value
        of a type JSON has no form for) is left out, counted and said, never the batch."""
        try:
            chunk = _encode_lines(run)
        except (TypeError, ValueError, OverflowError):
            size = 0
            for record in run:
                try:
                    line = encode(record)
                except (TypeError, ValueError, OverflowError) as e:
                    self._dropped += 1
                    log.error("event log %s: a %s record could not be encoded (%s); left out",
                              self.path, type(record).__name__, e)  # fmt: skip
                    continue
                out.append(line)
                size += len(line)
            return size
        out.append(chunk)
        return len(chunk)

    def _forget_waiting(self) -> None:
        """In a forked child: the parent writes what waited; a flusher starts again on need."""
        self._waiting = []
        self._waiting_size = 0
        self._flusher = None

    def _start_flusher(self) -> None:
        """The thread that writes records waiting longer than ``buffer_seconds`` when no new
        record comes to push them out (it checks twice per ``buffer_seconds``; stops at close)."""
        _BUFFERED.add(self)
        ref = weakref.ref(self)
        period = max(self.buffer_seconds / 2, 0.01)
        stop = self._stop

        def run() -> None:
            while not stop.wait(period):
                event_log = ref()
                if event_log is None:
                    return
                with event_log._lock:
                    age = time.monotonic() - event_log._waiting_since
                    if event_log._waiting and age >= event_log.buffer_seconds and event_log._fd >= 0:
                        event_log._flush()
                del event_log

        self._flusher = threading.Thread(target=run, name="callctx-log-flush", daemon=True)
        self._flusher.start()

    def _put(self, line: bytes) -> bool:
        """One ``write(2)`` of one record, on a fresh line. False when it did not all get there."""
        fd = self._fd
        if self._at_line_start is None:
            self._at_line_start = self._ends_with_newline()
        data = line if self._at_line_start else b"\n" + line
        try:
            n = os.write(fd, data)
        except OSError as e:
            self._failed(str(e))
            self._at_line_start = None  # whatever happened, look before the next write
            return False
        if n == len(data):
            self._at_line_start = True
            return True
        if n == len(data) - 1:  # all but the newline: the record is whole, the next one ends the line
            self._at_line_start = False
            return True
        self._failed(f"a write was cut short ({n} of {len(data)} bytes)")
        if n:
            self._blank(data, n)
        self._at_line_start = False
        return False

    def _ends_with_newline(self) -> bool:
        """Is the file empty or its last byte a newline? (False when it cannot be read: a fresh
        line then costs at most a blank line.)"""
        try:
            size = os.fstat(self._fd).st_size
            return size == 0 or os.pread(self._fd, 1, size - 1) == b"\n"
        except OSError:
            return False

    def _blank(self, data: bytes, n: int) -> None:
        """Overwrite with spaces the first ``n`` bytes of ``data``, just appended by a short write.

        An ``O_APPEND`` write leaves the descriptor's offset at the end of what it wrote, so the
        fragment's place is known exactly (another process may have appended after it, never into
        it). The bytes are checked before they are overwritten; on any doubt the fragment stays,
        and readers skip it as torn.
        """
        try:
            start = os.lseek(self._fd, 0, os.SEEK_CUR) - n
            if start < 0:
                return
            fd = os.open(self.path, os.O_RDWR | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))  # no O_APPEND: pwrite in place
        except OSError:
            return
        try:
            ours, there = os.fstat(self._fd), os.fstat(fd)
            if (ours.st_dev, ours.st_ino) != (there.st_dev, there.st_ino):
                return
            if os.pread(fd, n, start) == data[:n]:
                os.pwrite(fd, b" " * n, start)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _keep_all(self, chunk: bytes) -> None:
        """Keep each record of ``chunk`` (whole lines) in the backlog."""
        if chunk.count(b"\n") <= 1:
            self._keep(chunk)
            return
        for line in chunk.split(b"\n"):
            if line:
                self._keep(line + b"\n")

    def _keep(self, line: bytes) -> None:
        if len(self._backlog) >= self._max_records or self._backlog_size + len(line) > self._max_bytes:
            self._dropped += 1
            return
        self._backlog.append(line)
        self._backlog_size += len(line)

    def _drain(self) -> bool:
        """Write the backlog, oldest first; True when it is empty."""
        backlog = self._backlog
        while backlog:
            if not self._put(backlog[0]):
                return False
            self._backlog_size -= len(backlog.popleft())
        return True

    def _failed(self, reason: str) -> None:
        if not self._failing:
            self._failing = True
            log.warning(
                "event log %s: cannot append (%s); keeping records in memory and retrying",
                self.path,
                reason,
            )

    def _recovered(self) -> None:
        self._failing = False
        dropped = f"; {self._dropped} records lost so far" if self._dropped else ""
        log.info("event log %s: appending again, records kept in memory written%s", self.path, dropped)

    def _sync(self) -> None:
        """fsync after a record, as the policy asks."""
        policy = self.fsync
        if policy == "never":
            return
        if policy != "always":
            now = time.monotonic()
            if now - self._last_sync < policy:
                return
            self._last_sync = now
        self._fsync()

    def _fsync(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as e:
            if not self._sync_failing:
                self._sync_failing = True
                log.warning("event log %s: fsync failed (%s); records may not survive a power cut", self.path, e)
        else:
            self._sync_failing = False

    # ---- closing ---------------------------------------------------------------------------
    def close(self) -> None:
        """Write what waits in memory, fsync and close (again: nothing)."""
        with self._lock:
            if self._fd < 0:
                return
            lost = 0
            try:
                self._flush()
                if self._drain() and self._failing:
                    self._recovered()
                lost = len(self._backlog) + self._dropped
                self._fsync()
            finally:
                self._stop.set()
                os.close(self._fd)
                self._fd = -1
                self._backlog.clear()
                self._backlog_size = 0
                if lost:
                    log.error("event log %s: %d records could not be written to %s", self.path, lost, self.path)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

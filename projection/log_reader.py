"""Reading the event log: the whole of it, byte ranges of it, or what was appended since the
last read. The one reader of the log; every other reader (the replay, the stores' indexes, the
page) goes through it.

Reading contract
----------------
* Only whole lines are read. Bytes after the last newline are a record still being written
  (:class:`LogTail` leaves them for its next read) or, at the end of a finished log, a torn
  record (:func:`read_log` reports it ``Damage(torn=True)`` and drops it).
* A damaged line costs only itself: a torn record (a write cut short), a fragment with a whole
  record appended to it by another writer (the record is read), or corrupt bytes. Each is
  logged with a warning naming its line and listed in ``damage`` when given; in ``strict``
  mode a corrupt (not torn) line raises :class:`LogError` after the records before it.
* :func:`read_log` yields only the first :class:`LogHeader` (writers creating a file together
  may each write one); :func:`read_blocks` and the located readers keep every record.
* Memory: the file is read ``_CHUNK`` bytes at a time into one reused buffer (no larger than
  the bytes asked for, for a byte range or a bounded step of a tail); a block's records are
  decoded (and the block forgotten) before the buffer is refilled, so a reader holds one block
  of the file, whatever its size.
* Errors: a missing or unreadable file raises :class:`LogError` (``read_log``,
  ``read_blocks``, ``read_ranges``); :class:`LogTail` reads a missing file as empty. A log
  that shrank, or whose first line changed (another file put in its place), is reported by
  :attr:`LogTail.replaced`, and the tail starts again from its first byte.

Records this process wrote itself need not be decoded again: a writer hands them to the
tail's :class:`Known` with their lines, and a line found byte for byte in the log is taken from
there (any other line, another writer's included, is decoded as usual).

Threading: the functions share nothing; a :class:`LogTail` is used by one thread at a time; a
:class:`Known` is added to from any thread.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from .events import LogHeader, Record, decode, decode_lines
from .log import _CHUNK, _DECODE_ERRORS, Damage, LogError, log

_BLOB_LINE = re.compile(rb'^\s*\{"e":"blob","hash":"([0-9a-f]{64})"', re.M)
_HEADER = b'{"e":"log"'  # how every header starts (msgspec writes the tag first)
_RECORD_START = b'{"e":"'  # ...and every record: quotes inside strings are escaped, so never there
_SALVAGE_TRIES = 64


class Located(NamedTuple):
    """A record and where it is in the log: its first byte and its length (newline included)."""

    record: Record
    offset: int
    length: int


# ---- the one pass over whole lines ---------------------------------------------------------
class _Lines:
    """The whole lines of an open log from ``start`` up to ``end`` (None: the end of the file),
    a block at a time: ``(a view of the block, its offset, its first line's number - 1)``.
    A view is valid only until the next block is read. After the last block, ``rest`` holds
    the bytes after the last newline, ``end_offset`` where they start and ``lines`` the
    number of whole lines read."""

    def __init__(self, f: io.BufferedReader, start: int = 0, end: int | None = None, line_no: int = 0) -> None:
        self._f = f
        self._start = start
        self._end = end
        self.rest = b""
        self.end_offset = start
        self.lines = line_no

    def __iter__(self) -> Iterator[tuple[memoryview, int, int]]:
        f = self._f
        f.seek(self._start)
        left = None if self._end is None else self._end - self._start
        # a bounded read (a byte range, a tail) needs no more room than its bytes
        buf = bytearray(2 * _CHUNK if left is None else max(min(2 * _CHUNK, left), 0))
        view = memoryview(buf)
        kept = 0  # bytes at the start of buf: a line whose end is not read yet
        offset = self._start
        try:
            while left is None or left > 0:
                want = _CHUNK if left is None else min(_CHUNK, left)
                if kept + want > len(buf):  # a line longer than a chunk: make room for more of it
                    room = max(2 * len(buf), kept + 2 * _CHUNK)
                    bigger = bytearray(room if left is None else min(room, kept + left))
                    bigger[:kept] = view[:kept]
                    view.release()
                    buf, view = bigger, memoryview(bigger)
                got = f.readinto(view[kept : kept + want])
                if not got:
                    break
                if left is not None:
                    left -= got
                size = kept + got
                end = buf.rfind(b"\n", 0, size) + 1
                if not end:
                    kept = size
                    continue
                first = self.lines
                self.lines += buf.count(b"\n", 0, end)
                yield view[:end], offset, first
                offset += end
                kept = size - end
                if kept:
                    view[:kept] = buf[end:size]
            self.rest = bytes(view[:kept])
            self.end_offset = offset
        finally:
            view.release()


def _find(view: memoryview, needle: bytes) -> bool:
    """Does the block seen by ``view`` (a slice of a reader's buffer, from its start) hold
    ``needle``? Searched in place, without a copy."""
    buf = view.obj
    assert isinstance(buf, bytearray)
    return buf.find(needle, 0, len(view)) >= 0


def _open(path: str | os.PathLike[str]) -> io.BufferedReader:
    p = Path(path)
    try:
        return open(p, "rb")
    except FileNotFoundError:
        raise LogError(f"no event log at {p}") from None
    except OSError as e:
        raise LogError(f"cannot read event log {p}: {e.strerror}") from None


# ---- whole logs ----------------------------------------------------------------------------
def read_log(
    path: str | os.PathLike[str], *, strict: bool = False, damage: list[Damage] | None = None
) -> Iterator[Record]:
    """Yield every readable record of a log, in order (see the module's reading contract)."""
    header_seen = False
    for records, headers in _blocks(path, strict, damage, True):
        if not headers:
            yield from records
        else:  # rare: only the blocks holding a header pay for this loop
            for rec in records:
                if type(rec) is LogHeader:
                    if header_seen:
                        continue
                    header_seen = True
                yield rec
        del records  # freed before the next block is decoded (fewer live objects, warmer memory)


def read_blocks(
    path: str | os.PathLike[str], *, strict: bool = False, damage: list[Damage] | None = None
) -> Iterator[list[Record]]:
    """The records :func:`read_log` yields, a list per block of the file (the replay's fast
    path: no generator step per record), except that every :class:`LogHeader` is kept."""
    for records, _ in _blocks(path, strict, damage, False):
        yield records
        del records  # freed before the next block is decoded


def _blocks(
    path: str | os.PathLike[str], strict: bool, damage: list[Damage] | None, headers: bool
) -> Iterator[tuple[list[Record], bool]]:
    """(the readable records of the next block of whole lines, whether the block may hold a
    header (always False unless ``headers``)), to the end of the file."""
    p = Path(path)
    with _open(p) as f:
        lines = _Lines(f)
        for view, offset, line_no in lines:
            records, error = _decode_lines(view, p, line_no, offset, strict, damage)
            found = headers and _find(view, _HEADER)
            if records:
                yield records, found
            del records  # freed (the consumer is done with it) before the next block is decoded
            if error is not None:
                raise error
    rest = lines.rest
    if rest.strip():
        try:  # a whole record whose writer has not ended the line yet
            last = decode(rest)
        except _DECODE_ERRORS:
            _report(Damage(lines.lines + 1, lines.end_offset, "torn last record (no final newline)", True), p, damage)
        else:
            yield [last], headers and type(last) is LogHeader


def blob_hashes(path: str | os.PathLike[str]) -> set[str]:
    """The hashes of the texts a log already stores (a byte scan, no decoding; an absent log
    stores none)."""
    found: set[str] = set()
    try:
        f = _open(path)
    except LogError:
        return found
    with f:
        for view, _, _ in _Lines(f):
            found.update(h.decode() for h in _BLOB_LINE.findall(view))
    return found


# ---- byte ranges ---------------------------------------------------------------------------
def read_ranges(
    path: str | os.PathLike[str], ranges: Iterable[tuple[int, int]], *, damage: list[Damage] | None = None
) -> Iterator[Record]:
    """The records within byte ranges of a log, ``(first byte, end)`` each, in the order given.
    A range should hold whole records (as :class:`Located` gives them); a partial line at
    either edge is not read. Ranges that overlap or touch should be merged first
    (:func:`merge_ranges`), or their records are read twice."""
    p = Path(path)
    with _open(p) as f:
        for start, end in ranges:
            if end <= start:
                continue
            for view, offset, line_no in _Lines(f, start, end):
                records, _ = _decode_lines(view, p, line_no, offset, False, damage)
                yield from records


def merge_ranges(ranges: Iterable[tuple[int, int]], gap: int = 0) -> list[tuple[int, int]]:
    """Byte ranges sorted, with those that overlap or lie less than ``gap`` bytes apart merged
    (reading a short gap costs less than another read; its records are read too, so the caller
    filters)."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start - out[-1][1] <= gap:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


# ---- a growing log --------------------------------------------------------------------------
KNOWN_BYTES = 64 << 20
"""At most this many bytes of lines wait in a :class:`Known` (the oldest are let go first)."""


class Known:
    """Records a writer in this process encoded for the log, by their line: a :class:`LogTail`
    takes from here each line it finds byte for byte (the same bytes are the same record), and
    decodes only the others. Nothing else changes: where a record is, and whether it is read at
    all, is the log's say alone; a line never written is let go once ``max_bytes`` of newer
    ones wait.

    Threading: :meth:`add` from any thread, costing the adder an append under a lock (the lines
    are split and hashed by the tail's thread); :meth:`take` from one thread at a time (the
    tail's)."""

    def __init__(self, max_bytes: int = KNOWN_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()  # guards the two below
        self._added: deque[tuple[bytes, Sequence[Record]]] = deque()
        self._waiting = 0  # bytes of the lines in ``_added``
        self._lines: OrderedDict[bytes, Record | None] = OrderedDict()  # the taker's; never None
        self._size = 0  # bytes of the lines in ``_lines``

    def add(self, data: bytes, records: Sequence[Record]) -> None:
        """``data`` is how ``records`` are written: one line each, in order, each ended by a
        newline. Call before ``data`` is written."""
        with self._lock:
            self._added.append((data, records))
            self._waiting += len(data)
            while self._waiting > self.max_bytes and len(self._added) > 1:  # nobody takes: let the oldest go
                self._waiting -= len(self._added.popleft()[0])

    def __bool__(self) -> bool:
        return bool(self._added or self._lines)

    def take(self, lines: Sequence[bytes]) -> list[Record | None]:
        """The record of each line (without its newline) when it is known, else None; a line
        taken is forgotten (the same line again is decoded)."""
        with self._lock:
            added = list(self._added)
            self._added.clear()
            self._waiting = 0
        known = self._lines
        for data, records in added:
            got = data.split(b"\n")
            got.pop()
            if len(got) != len(records):  # not lines of these records: nothing to take
                continue
            for line, rec in zip(got, records, strict=True):
                if line not in known:  # the same line twice: the first is taken, the second decoded
                    known[line] = rec
                    self._size += len(line) + 1
        while self._size > self.max_bytes and known:
            line, _ = known.popitem(last=False)
            self._size -= len(line) + 1
        out: list[Record | None] = []
        for line in lines:
            found = known.pop(line, None)
            if found is not None:
                self._size -= len(line) + 1
            out.append(found)
        return out


class LogTail:
    """Follows one log as it grows: each :meth:`read` gives the records appended since the
    last one, located (:class:`Located`), a block at a time, whole lines only.

    ``offset``, ``line`` and ``identity`` say where it stands, so a reader that keeps them (an
    index on disk) can start again where it stopped, in another process. The identity is a
    digest of the log's first line (its header names when the log was created), so a log put
    in place of another, even at the same path and inode, is told apart."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        offset: int = 0,
        line: int = 0,
        identity: str | None = None,
        known: Known | None = None,
    ) -> None:
        self.path = Path(path)
        self.known = known if known is not None else Known()  # records a writer here already has
        self.offset = offset
        self.line = line
        self.identity = identity
        self.replaced = False  # set by a read that found another log (or a shorter one) in its place
        self.damage: list[Damage] = []  # what reads found damaged, the first ``DAMAGE_KEPT`` of it
        self.damaged = 0

    DAMAGE_KEPT = 100

    def size(self) -> int:
        """The log's size now (0 when it does not exist)."""
        try:
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0

    def read(self, limit: int | None = None) -> Iterator[list[Located]]:
        """The records appended since the last read, a list per block; with ``limit``, those of
        about that many bytes at most (whole lines, and at least one: :attr:`more` then says
        whether the log holds more past them). After a read that set :attr:`replaced`, the
        records are those of the new log from its first byte: a caller keeping anything derived
        from the old one drops it first."""
        self.replaced = False
        self.more = False
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            first = f.readline(1 << 16)
            identity = hashlib.sha256(first).hexdigest()[:32] if first.endswith(b"\n") else None
            other = identity is not None and identity != self.identity
            if self.identity is not None and (size < self.offset or other):
                log.info("event log %s was replaced or truncated; reading it again", self.path)
                self.replaced = True
                self.offset = self.line = 0
            if identity is not None:
                self.identity = identity
            if size <= self.offset:
                return
            start = self.offset
            end = size if limit is None else min(size, start + limit)
            yield from self._blocks(f, end)
            while self.offset == start and end < size:  # a line longer than the limit: read it whole
                end = min(size, start + 2 * (end - start))
                yield from self._blocks(f, end)
            self.more = end < size

    more = False  # the last read stopped at its limit, before the end of the log

    def _blocks(self, f: io.BufferedReader, end: int) -> Iterator[list[Located]]:
        lines = _Lines(f, self.offset, end, self.line)
        known = self.known
        for view, offset, line_no in lines:
            damage: list[Damage] = []
            if known:
                located = _locate_known(view, self.path, line_no, offset, damage, known)
            else:
                located = _locate(view, self.path, line_no, offset, damage)
            self.damaged += len(damage)
            room = self.DAMAGE_KEPT - len(self.damage)
            if room > 0:
                self.damage.extend(damage[:room])
            self.offset = offset + len(view)
            self.line = lines.lines
            if located:
                yield located


def _locate(block: memoryview, path: Path, line_no: int, offset: int, damage: list[Damage]) -> list[Located]:
    """The readable records of ``block`` (whole lines at byte ``offset``), each with its place."""
    try:
        records = decode_lines(block)
    except _DECODE_ERRORS:
        records = None
    raw = bytes(block)
    if records is not None:
        out: list[Located] = []
        pos = 0
        i = 0
        n = len(records)
        size = len(raw)
        while pos < size:
            nl = raw.find(b"\n", pos)
            if nl < 0:
                break
            if raw[pos : pos + 1] == b"{" and i < n:
                out.append(Located(records[i], offset + pos, nl + 1 - pos))
                i += 1
            pos = nl + 1
        if i == n:
            return out
    return _decode_slowly(raw, path, line_no, offset, False, damage)[0]


def _locate_known(
    block: memoryview, path: Path, line_no: int, offset: int, damage: list[Damage], known: Known
) -> list[Located]:
    """:func:`_locate`, taking each line's record from ``known`` when it is there; runs of
    other lines are decoded together."""
    raw = bytes(block)
    lines = raw.split(b"\n")
    lines.pop()  # a block ends with a newline: nothing after it
    found = known.take(lines)
    new = tuple.__new__  # a Located, without the keyword handling of its constructor
    out: list[Located] = []
    pos = 0
    run = -1  # where the run of lines not known starts (-1: none), and its first line's index
    run_line = 0
    for i, (line, rec) in enumerate(zip(lines, found, strict=True)):
        if rec is None:
            if run < 0:
                run, run_line = pos, i
        else:
            if run >= 0:
                out += _locate(memoryview(raw)[run:pos], path, line_no + run_line, offset + run, damage)
                run = -1
            out.append(new(Located, (rec, offset + pos, len(line) + 1)))
        pos += len(line) + 1
    if run >= 0:
        out += _locate(memoryview(raw)[run:pos], path, line_no + run_line, offset + run, damage)
    return out


# ---- decoding a block ----------------------------------------------------------------------
def decode_block(
    block: bytes, path: Path, line_no: int = 0, offset: int = 0, damage: list[Damage] | None = None
) -> list[Record]:
    """The readable records of ``block``, whole newline-ended lines of the log at ``path``
    starting at line ``line_no + 1`` and byte ``offset``; damaged lines are skipped and
    reported as :func:`read_log` reports them."""
    return _decode_lines(block, path, line_no, offset, False, damage)[0]


def _decode_lines(
    block: bytes | memoryview, path: Path, line_no: int, offset: int, strict: bool, damage: list[Damage] | None
) -> tuple[list[Record], LogError | None]:
    """(the readable records of ``block``, the :class:`LogError` to raise after them when
    ``strict`` and a line is unreadable, else None). ``block`` is only read during the call."""
    try:
        return decode_lines(block), None
    except _DECODE_ERRORS:
        pass
    located, error = _decode_slowly(bytes(block), path, line_no, offset, strict, damage)
    return [loc.record for loc in located], error


def _decode_slowly(
    block: bytes, path: Path, line_no: int, offset: int, strict: bool, damage: list[Damage] | None
) -> tuple[list[Located], LogError | None]:
    """The readable records of a block that holds a bad line, found one by one, each with its
    place (a record appended to another writer's fragment starts where the fragment ends)."""
    out: list[Located] = []
    pos = 0
    for i, line in enumerate(block.split(b"\n")[:-1], start=line_no + 1):
        start = pos
        pos += len(line) + 1
        if not line.strip():
            continue
        try:
            out.append(Located(decode(line), offset + start, len(line) + 1))
            continue
        except _DECODE_ERRORS as e:
            error: Exception | None = e
        cut, rec = _salvage(line)
        head = line[:cut] if rec is not None else line
        if rec is not None:  # a fragment, then a whole record appended to it
            error = _decode_error(head)
        if error is not None:
            problem = _damage(error, i, offset + start, len(head))
            if strict and not problem.torn:
                return out, LogError(f"event log {path}: line {i}: {problem.reason}")
            _report(problem, path, damage)
        if rec is not None:
            out.append(Located(rec, offset + start + cut, len(line) - cut + 1))
    return out, None


def _damage(error: Exception, line: int, offset: int, size: int) -> Damage:
    if _is_torn(error):
        return Damage(line, offset, f"torn record ({size} bytes, its write was cut short)", True)
    return Damage(line, offset, f"unreadable record: {error}", False)


def _salvage(line: bytes) -> tuple[int, Record | None]:
    """An unreadable line may be a fragment with a whole record appended to it (by another
    writer, before the fragment's own writer could end the line): (where the record starts,
    the record), else (-1, None)."""
    cut = line.find(_RECORD_START, 1)
    for _ in range(_SALVAGE_TRIES):
        if cut < 0:
            break
        try:
            return cut, decode(line[cut:])
        except _DECODE_ERRORS:
            cut = line.find(_RECORD_START, cut + 1)
    return -1, None


def _decode_error(fragment: bytes) -> Exception | None:
    """Why a fragment does not decode (None when it is blank)."""
    if not fragment.strip():
        return None
    try:
        decode(fragment)
    except _DECODE_ERRORS as e:
        return e
    # Two whole records on one line cannot come from a writer (each ends its own); say so.
    return ValueError("a whole record with another one glued to it")


def _is_torn(error: Exception) -> bool:
    """Is this the error of a record cut short (a valid start of JSON that just stops)?"""
    return isinstance(error, msgspec.DecodeError) and "truncated" in str(error)


def _report(problem: Damage, path: Path, damage: list[Damage] | None) -> None:
    log.warning("event log %s: line %d: %s; skipped", path, problem.line, problem.reason)
    if damage is not None:
        damage.append(problem)


__all__ = [
    "Located",
    "LogTail",
    "blob_hashes",
    "decode_block",
    "merge_ranges",
    "read_blocks",
    "read_log",
    "read_ranges",
]

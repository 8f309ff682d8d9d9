"""Reading an OTLP/HTTP request body: its length checked, chunked transfer and gzip / deflate
decoded (every member of a multi-member gzip body), and nothing over the size limit read or
inflated (gzip bombs included, across members).

The socket's time limits are the server's business (see ``http_server``): a read that runs out
of time raises ``TimeoutError`` through here."""

from __future__ import annotations

import io
import zlib
from email.message import Message

from callctx.projection.errors import BadInput


class BodyError(BadInput):
    """A body refused before decoding, with the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_body(rfile: io.BufferedIOBase, headers: Message, limit: int) -> bytes:
    """The request body, decompressed, refusing anything over ``limit`` bytes."""
    length = headers.get("Content-Length")
    if headers.get("Transfer-Encoding", "").lower() == "chunked":
        raw = _read_chunked(rfile, limit)
    elif length is None:
        raise BodyError(411, "Content-Length is required")
    else:
        try:
            n = int(length)
        except ValueError:
            raise BodyError(400, "bad Content-Length") from None
        if n < 0:
            raise BodyError(400, "bad Content-Length")
        if n > limit:
            raise BodyError(413, f"body of {n} bytes exceeds the {limit}-byte limit")
        raw = rfile.read(n)
        if len(raw) < n:
            raise BodyError(400, "body shorter than its Content-Length")
    encoding = headers.get("Content-Encoding", "identity").lower().strip()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "deflate"):
        return _inflate(raw, limit, gzip_header=encoding == "gzip")
    raise BodyError(415, f"unsupported Content-Encoding {encoding!r}")


def _read_chunked(rfile: io.BufferedIOBase, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(1024)
        try:
            size = int(line.split(b";")[0].strip() or b"0", 16)
        except ValueError:
            raise BodyError(400, "bad chunked encoding") from None
        if size == 0:
            rfile.readline(1024)
            return b"".join(parts)
        total += size
        if total > limit:
            raise BodyError(413, f"body exceeds the {limit}-byte limit")
        parts.append(rfile.read(size))
        rfile.readline(1024)


def _inflate(raw: bytes, limit: int, *, gzip_header: bool) -> bytes:
    """Inflate a whole body: every member of a multi-member gzip stream (concatenated members
    are valid gzip; at most :data:`MAX_MEMBERS`), with ``limit`` counted across all of them. A
    stream cut short, or bytes after it that do not start another member, are refused (400):
    nothing is dropped silently.

    Input is fed in pieces that start small and double, so the bytes zlib copies past the end
    of each member stay in proportion to the member (a body of many tiny members is linear)."""
    wbits = 16 + zlib.MAX_WBITS if gzip_header else zlib.MAX_WBITS
    view = memoryview(raw)
    parts: list[bytes] = []
    total = pos = 0
    for _ in range(MAX_MEMBERS):
        d = zlib.decompressobj(wbits)
        step = _FIRST_PIECE
        while True:  # one piece of it
            piece = view[pos : pos + step]
            try:
                out = d.decompress(piece, limit - total + 1)
            except zlib.error as e:
                raise BodyError(400, f"bad compressed body: {e}") from None
            total += len(out)
            if total > limit or d.unconsumed_tail:  # output stopped at the limit: more was to come
                raise BodyError(413, f"decompressed body exceeds the {limit}-byte limit")
            parts.append(out)
            if d.eof:
                pos += len(piece) - len(d.unused_data)
                break
            pos += len(piece)
            if pos >= len(raw):
                raise BodyError(400, "bad compressed body: the stream is cut short")
            step = min(step * 2, _LAST_PIECE)
        if pos >= len(raw):
            return b"".join(parts)
        if not gzip_header:
            raise BodyError(400, "bad compressed body: bytes after the end of the deflate stream")
        if view[pos : pos + 2] != _GZIP_MAGIC:
            if not raw[pos:].strip(b"\0"):  # zero padding after the last member, as gzip(1) accepts
                return b"".join(parts)
            raise BodyError(400, "bad compressed body: bytes after a gzip member that start no other member")
    raise BodyError(400, f"compressed body of more than {MAX_MEMBERS} gzip members")


MAX_MEMBERS = 4096  # a body of more gzip members than this is refused (400): none but a hostile sender makes one
_GZIP_MAGIC = b"\x1f\x8b"
_FIRST_PIECE = 256
_LAST_PIECE = 1 << 20

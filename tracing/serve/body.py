"""Reading an OTLP/HTTP request body: its length checked, chunked transfer and gzip / deflate
decoded, and nothing over the size limit read or inflated (gzip bombs included)."""

from __future__ import annotations

import zlib
from typing import Any


class BodyError(ValueError):
    """A body refused before decoding, with the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_body(rfile: Any, headers: Any, limit: int) -> bytes:
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


def _read_chunked(rfile: Any, limit: int) -> bytes:
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
    d = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip_header else zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, limit + 1)
    except zlib.error as e:
        raise BodyError(400, f"bad compressed body: {e}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise BodyError(413, f"decompressed body exceeds the {limit}-byte limit")
    return out

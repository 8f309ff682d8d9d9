"""An exporter that writes the trace as an OTLP/JSON file, for backends that load files
(Jaeger's UI, ``callctx import``, the Collector's file receiver)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from callctx.projection.errors import CallctxError
from callctx.projection.otlpjson import ids_to_hex


class LinkRefused(CallctxError, FileExistsError):
    """A file to write is a symbolic link, and replacing it was not asked for."""


def refuse_link(path: Path, *, force: bool = False) -> None:
    """Before writing ``path``: a symbolic link there is refused (:class:`LinkRefused`), or with
    ``force`` removed (the file written replaces it); a link is never written through."""
    if path.is_symlink():
        if not force:
            raise LinkRefused(f"{path} is a symbolic link; not writing through it (--force replaces the link)")
        path.unlink()


def write_private(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path``, readable by its owner only (mode 0600, also when it existed);
    a symbolic link at ``path`` is refused, or replaced with ``force`` (:func:`refuse_link`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_link(path, force=force)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


class OtlpJsonFile(SpanExporter):
    """Collects spans and writes them as one OTLP/JSON trace request at shutdown (or flush)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._spans: list[ReadableSpan] = []
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self._spans.extend(spans)
        return SpanExportResult.SUCCESS

    def write(self) -> Path:
        with self._lock:
            spans = sorted(self._spans, key=lambda s: (s.start_time or 0, s.context.span_id))
        message = ids_to_hex(MessageToDict(encode_spans(spans), use_integers_for_enums=True))
        write_private(self.path, json.dumps(message, ensure_ascii=False) + "\n")
        return self.path

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.write()
        return True

    def shutdown(self) -> None:
        self.write()

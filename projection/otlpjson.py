"""OTLP/JSON as the spec writes it: protobuf's JSON mapping, except that trace and span ids
are hex strings (protobuf would write base64) and enums are integers."""

from __future__ import annotations

import base64
from typing import Any

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def ids_to_hex(message: dict[str, Any]) -> dict[str, Any]:
    """Rewrite, in place, the base64 ids of a ``MessageToDict`` trace request as hex."""
    for rs in message.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                _fix(span)
                for link in span.get("links", ()):
                    _fix(link)
    return message


def _fix(obj: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        value = obj.get(key)
        if value:
            obj[key] = base64.b64decode(value).hex()

"""The debugger page's routes, independent of the HTTP server that carries them: a GET path
and its query in, a :class:`Response` out.

* ``/ui``, ``/ui/traces/{id}``, ``/ui/calls/{n}``, ``/ui/spans/{id}``: the page (its script
  reads the path);
* ``/ui/static/{name}``: the page's files, shipped in the package (no CDN, no build step);
* ``/ui/api/...``: the JSON the page reads (see ``views``), shaped by the caller's ``shape``
  (secrets redacted) before it leaves the process.

Errors: a missing thing is a 404 and a bad parameter a 400, each as ``{"error": ...}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from callctx.projection.errors import BadInput, NotFound
from callctx.store import params

from .views import Views

STATIC = Path(__file__).parent / "static"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}  # fmt: skip
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
JSON = "application/json"


class Response(NamedTuple):
    status: int
    content_type: str
    body: bytes


def is_page(parts: list[str]) -> bool:
    """Is this path (split on ``/``) one of the page's?"""
    return bool(parts) and parts[0] == "ui"


def respond(views: Views, parts: list[str], query: Mapping[str, str], shape: Callable[[str], str] | None) -> Response:
    """Answer GET ``/`` + ``"/".join(parts)``; ``parts[0]`` is ``ui``."""
    rest = parts[1:]
    try:
        if not rest or (rest[0] in ("traces", "calls", "spans") and len(rest) == 2):
            return _file("index.html")
        if rest[0] == "static" and len(rest) == 2:
            return _file(rest[1])
        if rest[0] == "api":
            text = json.dumps(_api(views, rest[1:], query), ensure_ascii=False)
            return Response(200, JSON, (shape(text) if shape else text).encode())
        raise NotFound(f"no page /{'/'.join(parts)}")
    except NotFound as e:
        return _error(404, str(e))
    except BadInput as e:
        return _error(400, str(e))


def _api(views: Views, parts: list[str], q: Mapping[str, str]) -> Any:
    offset, limit = params.page(q)
    page = {"offset": offset, "limit": limit}
    match parts:
        case ["state"]:
            return views.state()
        case ["facets"]:
            return views.facets()
        case ["trees"]:
            return views.trees(service=q.get("service") or None, function=q.get("function") or None,
                               status=q.get("status") or None, **page)  # fmt: skip
        case ["trees", key, "nodes"]:
            return views.nodes(key, q.get("parent") or None, **page)
        case ["trees", key, "chart"]:
            return views.chart(key, q.get("provider") or None)
        case ["calls"]:
            return views.calls(q.get("tree") or None, **page)
        case ["calls", n]:
            return views.call(params.call_number(n), q.get("provider") or None)
        case ["calls", n, "request"]:
            return views.request(params.call_number(n), q.get("wire") or None)
        case ["spans", span_id]:
            return views.span(span_id)
    raise NotFound(f"no route /ui/api/{'/'.join(parts)}")


def _file(name: str) -> Response:
    path = STATIC / name
    if not _NAME.fullmatch(name) or not path.is_file():
        raise NotFound(f"no file {name}")
    return Response(200, _TYPES.get(path.suffix, "application/octet-stream"), path.read_bytes())


def _error(status: int, message: str) -> Response:
    return Response(status, JSON, json.dumps({"error": message}).encode())

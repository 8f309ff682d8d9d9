"""The debugger page's own server (``callctx ui LOG``): the page and its API over one store, on
the bounded server of :mod:`callctx.serve.http_server`, under its access rules (the ``Host``
check, an optional token, the security headers on every answer)."""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from callctx.serve.http_server import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_READ_TIMEOUT,
    Access,
    Handler,
    path_parts,
    start,
)

from . import routes
from .views import Views


def make_page_handler(
    views: Views, shape: Callable[[str], str] | None, access: Access, read_timeout: float = DEFAULT_READ_TIMEOUT
) -> type[BaseHTTPRequestHandler]:
    """A handler that serves only the debugger page (``callctx ui LOG``)."""

    wait = read_timeout
    allowed = access

    class PageHandler(Handler):
        timeout = read_timeout = wait
        access = allowed

        def do_GET(self) -> None:
            url = urlparse(self.path)
            parts = path_parts(url.path)
            if not parts:
                self._redirect("/ui/")
                return
            if parts[0] != "ui":
                self._json(404, {"error": f"no route {url.path}; the page is at /ui/"})
                return
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if self._page_allowed(url.path, q):
                resp = routes.respond(views, parts, q, shape)
                self._send(resp.status, resp.body, resp.content_type)

    return PageHandler


def serve_page(
    views: Views,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    shape: Callable[[str], str] | None = None,
    access: Access | None = None,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """Serve the debugger page over ``views`` in a background thread; ``shape`` redacts what
    the page's API answers (None: sent as the log holds it); ``access``: the token and the
    names it answers for (default: none, and this machine's)."""
    handler = make_page_handler(views, shape, access or Access.of(None, served=host), read_timeout)
    return start(handler, host, port, read_timeout, max_connections, "callctx-ui-accept")

"""Small HTTP servers the tests run on loopback: :func:`reply` answers a request, and
:class:`FakeStore` is a trace store's HTTP API (each GET answered by a function of its path,
the paths asked for kept in order)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[str], tuple[int, bytes]]  # path (with its query) -> (status, JSON body)


def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class _Served:
    """A :class:`ThreadingHTTPServer` on a loopback port, serving in a thread until :meth:`close`."""

    server: ThreadingHTTPServer
    url: str

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeStore(_Served):
    def __init__(self, answer: Answer) -> None:
        self.seen: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                fake.seen.append(self.path)
                reply(self, *answer(self.path))

        self._serve(Handler)


class Replier(_Served):
    """A model server that answers POSTs from a script of replies (status, raw body, content
    type; the last one repeats), counting the requests it received."""

    def __init__(self, *replies: tuple[int, bytes, str]) -> None:
        self.requests = 0
        script = list(replies)
        fake = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    answer = script[min(fake.requests, len(script) - 1)]
                    fake.requests += 1
                reply(self, *answer)

        self._serve(Handler)

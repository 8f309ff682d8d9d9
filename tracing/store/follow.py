"""The background thread that keeps a store's listings and cache ledger up to date, and the
:class:`Traffic` of requests it gives way to.

Threading: :meth:`Follower.start` and :meth:`Follower.stop` from the store's owner (start once;
a second start does nothing); :class:`Traffic` from any thread. Errors: a round that raises is
logged with the store it follows and the next round runs as usual; nothing reaches the caller.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)


class Follower:
    """Runs ``step`` every ``every`` seconds in a daemon thread named ``name``, until :meth:`stop`."""

    def __init__(self, step: Callable[[], object], *, name: str, what: Callable[[], str]) -> None:
        self._step = step
        self._name = name
        self._what = what  # what is followed, for the log (read when a round fails)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, every: float) -> None:
        if self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(every):
                try:
                    self._step()
                except Exception:
                    log.exception("callctx: following %s failed", self._what())

        self._thread = threading.Thread(target=loop, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for its round in progress."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class Traffic:
    """The requests a server is handling now, for background work that gives way to them: a
    request holds :meth:`request` while it runs; the background thread asks :meth:`quiet`
    before each step of its work. Python runs one thread at a time: a step taken while a
    request runs takes turns with it, and the request answers that much later."""

    def __init__(self) -> None:
        self._active = 0
        self._idle = threading.Condition(threading.Lock())
        self._last = 0.0  # monotonic time the last request ended

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        with self._idle:
            self._active += 1
        try:
            yield
        finally:
            with self._idle:
                self._active -= 1
                self._last = time.monotonic()
                if not self._active:
                    self._idle.notify_all()

    def idle(self, seconds: float) -> bool:
        """Has no request run for ``seconds``?"""
        with self._idle:
            return not self._active and time.monotonic() - self._last >= seconds

    def quiet(self, timeout: float = 0.0) -> bool:
        """Is no request running? Waits up to ``timeout`` seconds for that."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._active, max(timeout, 0.0))


__all__ = ["Follower", "Traffic"]

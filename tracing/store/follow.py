"""The background thread that keeps a store's listings and cache ledger up to date.

Threading: :meth:`Follower.start` and :meth:`Follower.stop` from the store's owner (start once;
a second start does nothing). Errors: a round that raises is logged with the store it follows
and the next round runs as usual; nothing reaches the caller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

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


__all__ = ["Follower"]

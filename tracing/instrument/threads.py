"""Carrying the current call into another thread.

asyncio tasks inherit the current call on their own (each task copies the context when it is
created, and ``asyncio.to_thread`` carries it too). Threads started by hand and executor
pools do not: wrap the function with :func:`carry` where it is submitted.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context

P = ParamSpec("P")
R = TypeVar("R")
log = logging.getLogger(__name__)
_warned = False  # the warning below is given once per process


def check_uncarried(name: str, context: Context | None, running: int) -> None:
    """Warn, once per process, when a call starts with no call around it in a thread other
    than the main one while ``running`` other spans are open: most likely a thread started
    without :func:`carry`, whose calls become trees of their own. Never raises."""
    global _warned
    if _warned or not running or threading.current_thread() is threading.main_thread():
        return
    try:
        if trace.get_current_span(context).get_span_context().is_valid:
            return
        _warned = True
        log.warning(
            "callctx: %r started in thread %r with no call around it while other calls run, so it "
            "is the root of a tree of its own; to nest it under the call that started the thread, "
            "submit the thread's function through callctx.carry(fn) (said once)",
            name, threading.current_thread().name,
        )  # fmt: skip
    except Exception:  # a warning must not cost the call
        log.debug("callctx: could not check the thread's context", exc_info=True)


def carry(fn: Callable[P, R]) -> Callable[P, R]:
    """Bind ``fn`` to the current context, so calls it makes nest under the current call.

    ``pool.submit(carry(work), x)`` or ``threading.Thread(target=carry(work))``. Each call of
    the returned function runs in its own copy of the context captured here, so several
    threads running it at once do not disturb each other.
    """
    ctx = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return ctx.copy().run(fn, *args, **kwargs)

    return run

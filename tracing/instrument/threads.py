"""Carrying the current call into another thread.

asyncio tasks inherit the current call on their own (each task copies the context when it is
created, and ``asyncio.to_thread`` carries it too). Threads started by hand and executor
pools do not: wrap the function with :func:`carry` where it is submitted.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


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

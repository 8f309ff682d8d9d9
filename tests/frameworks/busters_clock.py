"""What the cache-buster scripts share (``*_busters.py``, run in the extra environments with this
folder on their path): span clocks that run ahead by the pauses, and the caching fake's admin
calls."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import timedelta


def post(url: str, body: dict) -> dict:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


class Clock:
    """How far this process's span clocks are ahead of real time (``shift``), moved by a pause."""

    def __init__(self) -> None:
        self.shift = timedelta(0)

    def time_ns(self) -> int:
        """``time.time_ns()``, ``shift`` ahead (what the OpenTelemetry SDK stamps spans with)."""
        return time.time_ns() + (self.shift // timedelta(microseconds=1)) * 1000

    def pause(self, advance_url: str, seconds: float) -> None:
        """Time passing, ``seconds`` of it, at once: on the provider's clock and on the span clocks."""
        post(advance_url, {"seconds": seconds})
        self.shift += timedelta(seconds=seconds)

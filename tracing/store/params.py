"""Read parameters as a URL's query gives them (``callctx serve``'s read API, the page), checked
once: a filter, a page, a time, a call number. Every bad value is a :class:`BadInput` naming
the parameter (the servers answer 400 with the reason), never an exception from deeper down.

Times are nanoseconds since the epoch or ISO 8601 (a ``Z`` suffix is UTC; a time without an
offset is UTC too), within years 1970 to 9999 of the 64-bit range the stores hold; numbers are
whole, at least 0, and at most ``MAX_NUMBER``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from callctx.projection.errors import BadInput
from callctx.projection.render import VIEWS, View

from .model import MAX_LIMIT, Filter, check_status

MAX_NUMBER = (1 << 63) - 1  # what a store's 64-bit integers hold
MAX_NS = MAX_NUMBER


def number(q: Mapping[str, str], name: str, default: int) -> int:
    """A whole number from the query (``default`` when absent or empty)."""
    value = q.get(name)
    if value is None or value == "":
        return default
    return whole(value, name)


def whole(text: str, name: str) -> int:
    """``text`` as a whole number from 0 to ``MAX_NUMBER``."""
    if not text.isascii() or not text.isdigit():
        raise BadInput(f"{name} must be a whole number, not {text[:40]!r}")
    if len(text) > 19 or int(text) > MAX_NUMBER:
        raise BadInput(f"{name} must be at most {MAX_NUMBER}")
    return int(text)


def call_number(text: str) -> int:
    """A call number in a path: a whole number from 1."""
    n = whole(text, "a call number")
    if n < 1:
        raise BadInput("a call number is a whole number from 1")
    return n


def page(q: Mapping[str, str], default_limit: int = 100) -> tuple[int, int]:
    """(offset, limit) from the query; the limit capped at ``MAX_LIMIT``."""
    return number(q, "offset", 0), min(number(q, "limit", default_limit), MAX_LIMIT)


def when(text: str | None, name: str) -> int | None:
    """A time from the query, in ns since the epoch (ns as given, or ISO 8601)."""
    if text is None or text == "":
        return None
    if text.isascii() and text.isdigit():
        return whole(text, name)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{name} must be ns since the epoch or an ISO 8601 time, not {text[:40]!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    ns = int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
    if not 0 <= ns <= MAX_NS:
        raise BadInput(f"{name} must be between 1970 and {datetime.fromtimestamp(MAX_NS // 10**9, UTC):%Y-%m-%d}")
    return ns


def filter_of(q: Mapping[str, str]) -> Filter:
    """The listing filter a query asks for."""
    return Filter(
        service=q.get("service") or None,
        session=q.get("session") or None,
        tree=q.get("tree") or None,
        since_ns=when(q.get("since"), "since"),
        until_ns=when(q.get("until"), "until"),
        function=q.get("function") or None,
        model=q.get("model") or None,
        status=check_status(q.get("status")),
    )


def view(q: Mapping[str, str]) -> View:
    """``?view=``: which tree (``model``, the default, or ``all``)."""
    value = q.get("view", "model")
    for v in VIEWS:
        if v == value:
            return v
    raise BadInput(f"view is one of {', '.join(VIEWS)}, not {value!r}")


def flag(q: Mapping[str, str], name: str) -> bool:
    return q.get(name) in ("1", "true", "yes")

"""The first words of a span's input, on one line: what tells the calls of one function apart
where they are listed side by side (``research_city`` three times: ``city: Paris, days: 2``,
``city: Rome, days: 2``, ``city: Berlin, days: 3``).

A JSON input reads as ``key: value`` pairs (strings unquoted, nested values in braces and
brackets), any other input as its text; whitespace, line breaks included, becomes one space.

An excerpt is cut between words, never inside one: a secret is a word (or a word after its
label) and is either in the excerpt whole, where the shaping of every answer that leaves the
process finds and redacts it as it does in any other text, or not in it at all. A first word
longer than the whole excerpt is left out. Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

EXCERPT_CHARS: Final = 60  # an excerpt's length at most, the ellipsis included
DECODED_AT_MOST: Final = 4_096  # characters of a JSON input decoded; past that its start is read as text
_BUDGET: Final = 4 * EXCERPT_CHARS  # characters produced before the words are picked
_JSON_PUNCTUATION = str.maketrans({"{": " ", "}": " ", "[": " ", "]": " ", '"': None})


def excerpt(text: str | None, mime: str | None = None, limit: int = EXCERPT_CHARS) -> str | None:
    """The first words of ``text`` (a span's input, of type ``mime``) within ``limit``
    characters, ``…`` at the end when there was more; None for no input."""
    if text is None:
        return None
    flat = "".join(_pieces(_value(text, mime), _BUDGET)) if _jsonish(text, mime) else text[: _BUDGET + 1]
    words = flat[:_BUDGET].split()
    cut = len(flat) > _BUDGET
    if cut and words:
        words.pop()  # it may end inside a word: never shown
    if not words:
        return "…" if cut else None
    out: list[str] = []
    size = -1
    for i, word in enumerate(words):
        last = i + 1 == len(words) and not cut
        if size + 1 + len(word) > limit - (0 if last else 2):  # room for " …" unless it is the last word
            break
        size += 1 + len(word)
        out.append(word)
    else:
        if not cut:
            return " ".join(out)
    return " ".join([*out, "…"])


def _jsonish(text: str, mime: str | None) -> bool:
    if mime is not None and "json" not in mime:
        return False
    start = text.lstrip()[:1]
    return start in ("{", "[", '"')


def _value(text: str, mime: str | None) -> Any:
    """The decoded JSON value, or, for a long or broken one, its start as text without the
    JSON punctuation."""
    if len(text) <= DECODED_AT_MOST:
        try:
            return msgspec.json.decode(text)
        except msgspec.DecodeError:
            pass
    return text[:_BUDGET].translate(_JSON_PUNCTUATION)


def _pieces(value: Any, budget: int, top: bool = True) -> Iterator[str]:
    """``value`` as text, a piece at a time, until about ``budget`` characters were given."""
    spent = 0

    def give(piece: str) -> Iterator[str]:
        nonlocal spent
        spent += len(piece)
        yield piece

    if isinstance(value, str):
        yield from give(value)
    elif isinstance(value, dict):
        if not top:
            yield from give("{")
        for i, (k, v) in enumerate(value.items()):
            if spent > budget:
                return
            yield from give(f"{', ' if i else ''}{k}: ")
            for piece in _pieces(v, budget - spent, top=False):
                yield from give(piece)
        if not top:
            yield from give("}")
    elif isinstance(value, list):
        if not top:
            yield from give("[")
        for i, v in enumerate(value):
            if spent > budget:
                return
            if i:
                yield from give(", ")
            for piece in _pieces(v, budget - spent, top=False):
                yield from give(piece)
        if not top:
            yield from give("]")
    elif value is None:
        yield from give("null")
    elif isinstance(value, bool):
        yield from give("true" if value else "false")
    else:
        yield from give(str(value))


__all__ = ["EXCERPT_CHARS", "excerpt"]

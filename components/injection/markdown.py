"""How the scanner reads Markdown: which parts of a text are live prose, code (fenced blocks and
`code spans`), quotes (blockquotes, and text in quotation marks) and hidden parts (HTML
comments, ``[//]: #`` comments, elements styled invisible), and whether the live prose is about
security (then quotes in it are examples, not orders).

Offsets are those of the lower-cased, normalised text the rules read; a region is one byte per
character of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .matching import Regex

# Regions of a text: the value, for each character, in the mask ``regions`` returns.
LIVE, CODE, QUOTE, HIDDEN = 0, 1, 2, 3

COMMENT = Regex(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_MD_COMMENT = Regex(r"\n\[(?://|comment|_|#)\]:[ \t]*(?:#|<>)[ \t]*(?:\(.*\)|\".*\"|'.*')[ \t]*$", re.MULTILINE)
_HIDDEN_OPEN = Regex(
    r"<(\w+)\b[^>]{0,400}?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|em|pt)?\s*[;\"']|"
    r"opacity\s*:\s*0(?:\.0+)?\s*[;\"']|\shidden(?:\s|>|=))[^>]{0,400}>"
)

_FENCE = Regex(r"\n[ \t]{0,3}(`{3,}|~{3,})[^\n]*")
_SPAN = Regex(r"``(?:[^`]|`(?!`)){1,2000}?``|`[^`\n]{1,2000}`")
_BLOCKQUOTE = Regex(r"\n[ \t]{0,3}>[^\n]*")
_QUOTATION = Regex(
    r"\"(?:[^\"\n]|\n(?![ \t]*\n)){3,400}?\"|“[^”]{3,400}?”|«[^»]{3,400}?»|„[^“”]{3,400}?[“”]|"
    r"「[^」]{1,400}?」|『[^』]{1,400}?』"
)


def _mark(mask: bytearray, a: int, b: int, region: int) -> None:
    mask[a:b] = bytes([region]) * (b - a)


def _hidden_elements(low: str) -> Iterator[tuple[int, int]]:
    """Spans of HTML elements styled invisible (an unclosed one: its next 2,000 characters)."""
    close_after: dict[str, int] = {}  # tag -> first closing tag found after some earlier opening
    for m in _HIDDEN_OPEN.finditer(low):
        tag = m.group(1)
        c = close_after.get(tag, -2)
        if c != -1 and c < m.end():
            c = close_after[tag] = low.find(f"</{tag}", m.end())
        yield m.start(), (min(len(low), m.end() + 2000) if c < 0 else c + len(tag) + 2)


def regions(low: str) -> tuple[bytearray, list[tuple[int, int, str]]]:
    """Live prose, code, quotes and hidden parts of a markdown text (offsets of ``low``), and the
    hidden parts: (start, end, finding name)."""
    mask = bytearray(len(low))
    hidden: list[tuple[int, int, str]] = []
    text = "\n" + low  # so that the first line starts after a newline too; offsets are one off
    pos = 0
    while m := _FENCE.search(text, pos):
        mark = m.group(1)
        close = re.compile(rf"\n[ \t]{{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*(?=\n|$)")
        c = close.search(text, m.end())
        end = c.end() if c else len(text)
        _mark(mask, m.start(), end - 1, CODE)  # from the fence's line start (text offset - 1 + 1)
        pos = end
    parts = [(m.start(), m.end(), "hidden HTML comment") for m in COMMENT.finditer(low)]
    parts += [(m.start(), m.end() - 1, "hidden HTML comment") for m in _MD_COMMENT.finditer(text)]
    parts += [(a, b, "hidden HTML element") for a, b in _hidden_elements(low)]
    for a, b, name in sorted(parts):
        if mask[a] == LIVE:
            _mark(mask, a, b, HIDDEN)
            hidden.append((a, b, name))
    for m in _SPAN.finditer(low):
        if mask[m.start()] == LIVE:
            _mark(mask, m.start(), m.end(), CODE)
    for m in _BLOCKQUOTE.finditer(text):
        if mask[m.start()] == LIVE:
            _mark(mask, m.start(), m.end() - 1, QUOTE)
    return mask, hidden


def mark_quotations(low: str, mask: bytearray) -> None:
    """Text in quotation marks; only needed (so only looked for) in documents about security."""
    for m in _QUOTATION.finditer(low):
        if mask[m.start()] == LIVE and mask[m.end() - 1] == LIVE:
            _mark(mask, m.start(), m.end(), QUOTE)


def about_security(mask: bytearray, strong: list[re.Match[str]], weak: list[re.Match[str]]) -> bool:
    """Whether the live prose is about security, so that quotes in it are examples: one of the
    ``strong`` words or two different ``weak`` ones (matches of ``cues.SECURITY_STRONG`` and
    ``cues.SECURITY_WEAK``) in live prose."""
    score, seen = 0, set()
    for matches, weight in ((strong, 2), (weak, 1)):
        for m in matches:
            word = m.group()
            if mask[m.start()] == LIVE and word not in seen:
                seen.add(word)
                score += weight
                if score >= 2:
                    return True
    return False

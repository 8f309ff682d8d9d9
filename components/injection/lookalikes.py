"""Look-alike letters undone: letters spaced out ("i g n o r e"), leetspeak ("1gn0r3"), Cyrillic
or Greek letters inside Latin words ("ignоre" with a Cyrillic o).

:func:`deobfuscated` gives the lines of a lower-cased text that read differently once
rewritten, for the scanner to read again; it is pure and raises nothing.
"""

from __future__ import annotations

import re

from .document import line_end, line_start
from .matching import Regex

# Each look-alike is looked for from a cheap seed; the lines holding a seed are read again, rewritten.
_SPACED_SEED = Regex(r"[ .*_-][a-z][ .*_-]{1,3}[a-z][ .*_-]{1,3}[a-z][ .*_-]{1,3}[a-z](?![a-z])")
_SPACED = Regex(r"(?<![a-z])[a-z](?:[ .*_-]{1,3}[a-z](?![a-z])){4,}")  # run on single lines only
_LEET_SEED = Regex(r"[013457@$](?<=[a-z].)(?=[a-z])")  # a digit inside a word: "1gn0r3"
_TOKEN_RUN = Regex(r"[a-z0-9@$]+")
_LEET = str.maketrans("013457@$", "oieastas")
_MIXED_SEED = Regex(r"[\u0370-\u03ff\u0400-\u04ff](?:(?<=[a-z].)|(?=[a-z]))")
_MIXED_WORD = Regex(r"\w*(?:[a-z]\w*[\u0370-\u04ff]|[\u0370-\u04ff]\w*[a-z])\w*")
_SEEDS = Regex("|".join(rx.source for rx in (_SPACED_SEED, _LEET_SEED, _MIXED_SEED)))
_CONFUSABLE = str.maketrans("аеорсухіјѕԁһԛԝνοαερτικχ", "aeopcyxijsdhqwvoaeptikx")


def _unspace(m: re.Match[str]) -> str:
    if m.start() and m.string[m.start() - 1].isalpha():
        return m.group()
    return " ".join(re.sub(r"[ .*_-]", "", w) for w in re.split(r"[ .*_-]{2,}", m.group()))


def _rewrite_line(line: str) -> str | None:
    """The line with look-alikes undone, or None when nothing worth reading again changed."""
    new = _SPACED.sub(_unspace, line)
    changed = new != line
    leet = 0

    def unleet(m: re.Match[str]) -> str:
        nonlocal leet
        w = m.group()
        t = w.translate(_LEET)
        if t != w and t.isalpha() and len(t) >= 3 and not w.isdigit():
            leet += 1
            return t
        return w

    new = _TOKEN_RUN.sub(unleet, new)
    if re.search(r"[\u0370-\u04ff]", new):
        mixed = _MIXED_WORD.sub(lambda m: m.group().translate(_CONFUSABLE), new)
        changed = changed or mixed != new
        new = mixed
    return new if changed or leet >= 2 else None


def deobfuscated(low: str) -> str | None:
    """The lines (at most 600 characters around each seed) that read differently with look-alikes
    undone."""
    seeds = [m.start() for m in _SEEDS.finditer(low)]
    windows: list[list[int]] = []
    for pos in seeds:
        a, b = line_start(low, pos, 300), line_end(low, pos, 300)
        if windows and a <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], b)
        else:
            windows.append([a, b])
    out = [new for a, b in windows if (new := _rewrite_line(low[a:b]))]
    return "\n".join(out) or None

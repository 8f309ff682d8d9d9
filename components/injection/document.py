"""A document being scanned (:class:`Doc`), what is found in it (:class:`Hit`), and positions in
it: line starts and ends, the sentence around a match.

A ``Doc`` belongs to one scan (one thread); it caches what its checks compute (sorted match
starts, the findings of decoded payloads) as they go.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .findings import Severity
from .markdown import CODE, QUOTE
from .matching import Rule


def is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass(slots=True)
class Hit:
    """A finding while the scan runs (``scan_findings`` turns the first of each kind into a ``Finding``)."""

    name: str
    pos: int  # in the normalised text; -1 for what was found outside it
    excerpt: str  # raw; shown by scan_findings
    severity: Severity = "high"
    via: str = "text"


@dataclass(slots=True)
class Doc:
    """A text being scanned: its normalised and lower-cased forms, the region of each character,
    the matches of the whole-document rules, its hidden parts."""

    norm: str  # NFKC, invisibles dropped
    low: str  # lower-cased, same length as norm
    mask: bytearray  # region of each character
    found: dict[Rule, list[re.Match[str]]]  # matches of the whole-document rules
    hidden: list[tuple[int, int, str]] = field(default_factory=list)  # hidden parts: start, end, name
    framed: bool = False  # live prose is about security
    # id of a rule -> its match starts, sorted, and the matches in that order, for ``within``
    starts: dict[int, tuple[list[int], list[re.Match[str]]]] = field(default_factory=dict)
    # (decoded text, depth) -> its findings, shared by a scan and the scans of what it decodes to
    decoded: dict[tuple[str, int], list[Hit]] = field(default_factory=dict)

    def matches(self, rule: Rule) -> list[re.Match[str]]:
        return self.found.get(rule, [])

    def within(self, rule: Rule, a: int, b: int) -> re.Match[str] | None:
        """A match of whole-document ``rule`` starting in ``[a, b)``."""
        key = id(rule)
        starts = self.starts.get(key)
        if starts is None:
            ms = sorted(self.matches(rule), key=lambda m: m.start())
            starts = self.starts[key] = ([m.start() for m in ms], ms)
        i = bisect.bisect_left(starts[0], a)
        return starts[1][i] if i < len(starts[0]) and starts[0][i] < b else None

    def severity(self, pos: int) -> Severity:
        """ "quoted" for what sits in code or a quote of a document about security, else "high"."""
        if pos < 0 or not self.framed:
            return "high"
        return "quoted" if self.mask[pos] in (CODE, QUOTE) else "high"

    def hit(self, name: str, start: int, end: int) -> Hit:
        return Hit(name, start, self.norm[start : min(end, start + 200)], self.severity(start))


def line_start(low: str, pos: int, limit: int = 1000) -> int:
    """Start of the line holding ``pos``, looking back at most ``limit`` characters."""
    lo = max(0, pos - limit)
    return max(low.rfind("\n", lo, pos) + 1, lo)


def line_end(low: str, pos: int, limit: int = 1000) -> int:
    """End of the line holding ``pos``, looking ahead at most ``limit`` characters."""
    hi = min(len(low), pos + limit)
    i = low.find("\n", pos, hi)
    return hi if i < 0 else i


def sentence(doc: Doc, start: int, end: int) -> tuple[int, int]:
    """The sentence around ``low[start:end]``: cut at line ends, at ". ", "! ", "? " and "。", and at
    most 300 characters either side."""
    low = doc.low
    lo = line_start(low, start, 300)
    hi = line_end(low, end, 300)
    for sep in (". ", "! ", "? ", "。"):
        i = low.rfind(sep, lo, start)
        if i >= 0:
            lo = i + len(sep)
        j = low.find(sep, end, hi)
        if j >= 0:
            hi = j + 1
    return lo, hi


def any_in(sorted_positions: list[int], a: int, b: int) -> bool:
    """Whether one of ``sorted_positions`` is in ``[a, b)``."""
    i = bisect.bisect_left(sorted_positions, a)
    return i < len(sorted_positions) and sorted_positions[i] < b

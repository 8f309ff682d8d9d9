"""The literal prefilter: where many literals occur in a text, found in a few regex passes, so that
the patterns they start are tried only there.

Searching a text for a regex that starts with a literal is fast: the regex engine jumps from one
occurrence of the literal's first character to the next (about a tenth of a millisecond per
256 KiB, as long as the scan rarely stops). Searching for many patterns one by one, or trying
them at every position, is not. So a :class:`Prefilter` is given the literal starts of the
patterns, each a :class:`Needle` (a literal, a regex that must match right after it, whether
case is ignored), and finds all their occurrences together; its owner then tries each pattern
only where one of its needles was found.

How: the number of scans and of stops is what counts. The needles are found by a few regexes
("gates"), each starting with a literal where the scan stops: a rarer character shared by many
needles (``-`` for ``sk-``, ``glpat-``, ``xoxb-``...; ``k`` for ``token``, ``key``,
``cookie``), told apart by look-behind and look-ahead after a one-character check; for a needle
with no such character (``secret``, a Cyrillic or CJK word), its first three characters. The
needles of scripts with many letters and none of them rare (Cyrillic, CJK) are found in one
pass per script, skipped when the text holds none of their first characters. A needle's
``follow`` is part of its gate, so that a literal that is not followed as it must be does not
even count as found.

Users: the secret redactor (``callctx.export.redact``), whose needles are the triggers of its
patterns, searched on an ASCII copy of the text; the prompt-injection scanner
(``callctx.components.injection.matching``), whose needles are the first characters of its
rules' alternatives, in seven languages.

Thread safety: a :class:`Prefilter` is immutable after construction (compiled regexes in
tuples, no caches), so one instance can be shared by every thread. Building one raises
``re.error`` for a ``follow`` that is not a regex; searching raises nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["Needle", "Prefilter", "lower_keeping_offsets"]

# Characters rare enough in text for a scan to stop at; rarer first.
_RARE = "-_.:=/@?&#%+~!$*^|JQXZKVBYWGPFMUCLDHRSNIOATEjqxz0123456789kvbywgpfmuld"


class Needle(NamedTuple):
    """A literal to find: ``text`` (not empty; lower case when ``lower``), where ``follow`` (a regex,
    "" for none) matches right after it; with ``lower``, in the lower-cased text."""

    text: str
    follow: str = ""
    lower: bool = False


class _Branch(NamedTuple):
    needle: Needle
    offset: int  # of the gate's literal in the needle
    # the other needles of the gate that may occur at the same place (the gate's regex reports
    # one), each with its offset and a regex to check it
    others: tuple[tuple[Needle, int, re.Pattern[str]], ...]


class _Gate(NamedTuple):
    lower: bool
    rx: re.Pattern[str]
    # by the index of its group in rx, the needle each group stands for (a needle's follow may
    # hold groups of its own: a branch's group is the last to match, so it is ``lastindex``)
    branches: dict[int, _Branch]
    script: re.Pattern[str] | None  # for a pass over one script: whether the text holds its first characters


def lower_keeping_offsets(s: str) -> str:
    """``s`` lower-cased, each character in its place (a character whose lower case is longer,
    such as "İ", is kept as it is)."""
    low = s.lower()
    if len(low) == len(s):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in s)


def _ascii(text: str) -> str:
    """``text`` with each non-ASCII character as ``?``."""
    return text if text.isascii() else text.encode("ascii", "replace").decode("ascii")


def _rank(c: str) -> int:
    i = _RARE.find(c)
    return len(_RARE) if i < 0 else i


def _script(literal: str) -> str | None:
    """The script whose literals share one pass, for a literal with no rare character."""
    c = literal[0]
    return "cyrillic" if "\u0400" <= c <= "\u052f" else "cjk" if c >= "\u2e80" else None


def _pivots(needles: Iterable[Needle]) -> dict[Needle, tuple[str, int]]:
    """Each needle's literal for a gate, and its offset in the needle: greedily the rare
    character shared by most needles not yet placed; else the needle's first three characters."""
    out: dict[Needle, tuple[str, int]] = {}
    for lower in (False, True):
        left = {n for n in needles if n.lower == lower}
        while left:
            counts: dict[str, int] = {}
            for n in left:
                for c in set(n.text):
                    if _rank(c) < len(_RARE):
                        counts[c] = counts.get(c, 0) + 1
            if not counts:
                for n in left:
                    out[n] = (n.text[:3], 0)
                break
            best = max(counts, key=lambda c: (counts[c], -_rank(c)))
            for n in [n for n in left if best in n.text]:
                out[n] = (best, n.text.index(best))
                left.discard(n)
    return out


def _consistent(a: str, i: int, b: str, j: int) -> bool:
    """Can ``a`` (gate literal at i) and ``b`` (at j) both occur around the same literal?"""
    return all(a[i + k] == b[j + k] for k in range(max(-i, -j), min(len(a) - i, len(b) - j)))


def _checker(n: Needle) -> re.Pattern[str]:
    return re.compile(re.escape(n.text) + (f"(?:{n.follow})" if n.follow else ""))


def _class(chars: set[str]) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


def _gate(literal: str, members: list[tuple[Needle, int]], base: int) -> tuple[str, list[tuple[Needle, int]]]:
    """The regex of a gate, and its needles in the order of their groups (named ``_needle<base>``,
    ``_needle<base + 1>``...). The needles are tried after a first check of one character (the one
    before the literal, or the one after), so that the scan does not try each needle at every stop."""
    size = len(literal)
    by_prev: dict[str, list[tuple[Needle, int]]] = {}
    for n, i in members:
        if i:
            by_prev.setdefault(n.text[i - 1], []).append((n, i))
    first = [(n, i) for n, i in members if not i]
    order = [m for group in by_prev.values() for m in group] + first
    group = {n: f"_needle{base + k}" for k, (n, _) in enumerate(order)}

    def branch(n: Needle, i: int) -> str:
        behind = f"(?<={re.escape(n.text[: i + size])})" if i else ""
        ahead = re.escape(n.text[i + size :]) + (f"(?:{n.follow})" if n.follow else "")
        return behind + (f"(?={ahead})" if ahead else "") + f"(?P<{group[n]}>)"

    parts = []
    if by_prev:
        lit = re.escape(literal)
        inner = [
            f"(?<={re.escape(c)}{lit})(?:" + "|".join(branch(n, i) for n, i in same) + ")"
            for c, same in by_prev.items()
        ]
        parts.append(f"(?<={_class(set(by_prev))}{lit})(?:" + "|".join(inner) + ")")
    if first:
        nexts = {n.text[size] for n, _ in first if len(n.text) > size}
        check = f"(?={_class(nexts)})" if all(len(n.text) > size for n, _ in first) else ""
        parts.append(check + "(?:" + "|".join(branch(n, i) for n, i in first) + ")")
    return re.escape(literal) + "(?:" + "|".join(parts) + ")", order


def _gates(needles: Iterable[Needle]) -> tuple[_Gate, ...]:
    """The gates, in the order of their first needle. A gate has one literal, or, for a script's
    pass, the literals of that script (one alternative each)."""
    needles = list(dict.fromkeys(needles))
    pivot = _pivots(needles)
    passes: dict[tuple[bool, str], dict[str, list[tuple[Needle, int]]]] = {}
    for n in needles:
        literal, i = pivot[n]
        passes.setdefault((n.lower, _script(literal) or literal), {}).setdefault(literal, []).append((n, i))
    gates = []
    for (lower, _), literals in passes.items():
        regexes, branches = [], []
        for literal, members in literals.items():
            regex, order = _gate(literal, members, len(branches))
            regexes.append(regex)
            branches += [
                _Branch(
                    n,
                    i,
                    tuple((m, j, _checker(m)) for m, j in members if m != n and _consistent(n.text, i, m.text, j)),
                )
                for n, i in order
            ]
        rx = re.compile("|".join(regexes))
        script = re.compile(_class({lit[0] for lit in literals})) if _script(next(iter(literals))) else None
        by_group = {rx.groupindex[f"_needle{k}"]: b for k, b in enumerate(branches)}
        gates.append(_Gate(lower, rx, by_group, script))
    return tuple(gates)


class Prefilter:
    """Finds the occurrences of ``needles`` in a text. ``ascii``: search an ASCII copy of the text,
    in which every other character is ``?`` (the same positions, and a one-byte string, which the
    regex engine scans several times faster), for ASCII needles whose follows may see ``?`` in
    place of any non-ASCII character."""

    __slots__ = ("_ascii", "_gates", "_lower")  # _lower: some gate reads lower case

    def __init__(self, needles: Iterable[Needle], *, ascii: bool = False) -> None:
        gates = _gates(needles)
        object.__setattr__(self, "_gates", gates)
        object.__setattr__(self, "_lower", any(g.lower for g in gates))
        object.__setattr__(self, "_ascii", ascii)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Prefilter is immutable")

    def finditer(self, text: str) -> Iterator[tuple[Needle, int]]:
        """(needle, start) of each occurrence: gate by gate, in the order of their first needles,
        and in text order within a gate."""
        if not self._gates:
            return
        hay = _ascii(text) if self._ascii else text
        low = lower_keeping_offsets(hay) if self._lower else hay
        for gate in self._gates:
            h = low if gate.lower else hay
            if gate.script is not None and not gate.script.search(h):
                continue
            branches = gate.branches
            for m in gate.rx.finditer(h):
                b = branches[m.lastindex]  # type: ignore[index]
                p = m.start()
                yield b.needle, p - b.offset
                for other, j, check in b.others:
                    if p >= j and check.match(h, p - j):
                        yield other, p - j

    def find(self, text: str) -> dict[Needle, list[int]]:
        """The starts of each needle found in ``text``, in increasing order."""
        at: dict[Needle, list[int]] = {}
        for needle, start in self.finditer(text):
            at.setdefault(needle, []).append(start)
        return at

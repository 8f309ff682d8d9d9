"""The matching engine of the injection scanner: regexes compiled on first use, rules made of
alternative patterns, and the locator that runs the rules over a whole document.

* :class:`Regex` stands in for ``re.compile``: the pattern is compiled the first time it is
  used, so that importing the scanner stays cheap.
* :class:`Rule`: alternative patterns, matched against lower-cased text. Over a sentence or a
  comment, its combined pattern is searched for; over a whole document, it is run with the other
  rules by a :class:`Locator`, which needs every alternative to start with a literal character.
* :class:`Locator`: the rules over a whole document in a few passes of the literal prefilter
  (``callctx.components.literal_prefilter``), whose needles are the alternatives' first
  characters; the alternatives are read from the patterns' source (a top-level or outer
  ``(?:...)`` alternation is split into alternatives; a leading ``\\b`` is checked in Python).

Errors: a rule with an alternative that does not start with a literal raises ``ValueError``
when the first locator is built (a mistake in a rule table, which the first scan meets).
Threads: what is compiled on first use is cached without a lock; two threads may both compile
one pattern, and either result serves.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator

from ..literal_prefilter import Needle, Prefilter


class Regex:
    """A regex compiled on first use, with the methods of ``re.Pattern`` that the scanner uses."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str) -> str:
        return self.compiled.sub(repl, string)


class Rule:
    """Alternative patterns, matched against lower-cased text (so no IGNORECASE), compiled on first use.

    ``finditer`` and ``search`` run the combined pattern, which is fine on a sentence or a comment.
    On a whole document the rules are run together by ``Locator``, which needs every alternative
    to start with a literal character (a leading ``\\b`` is checked in Python instead).
    """

    __slots__ = ("_alternatives", "_parts", "_pattern")

    def __init__(self, *parts: str) -> None:
        self._parts = parts
        self._pattern: re.Pattern[str] | None = None
        self._alternatives: list[tuple[str, str, bool, str]] | None = None

    @property
    def alternatives(self) -> list[tuple[str, str, bool, str]]:
        """(first character, the rest, whether ``\\b`` must precede, source) of each alternative."""
        if self._alternatives is None:
            self._alternatives = []
            for p in self._parts:
                for alt, wb in _literal_led(p):
                    head = alt[:2] if alt.startswith("\\") else alt[:1]
                    if (
                        not head
                        or (len(head) == 1 and head in "()[].^$*+?{|")
                        or (len(head) == 2 and head[1].isalnum())
                        or alt[len(head) : len(head) + 1] in ("?", "*", "{")
                    ):
                        raise ValueError(f"alternative does not start with a literal: {alt!r}")
                    self._alternatives.append((head[-1], alt[len(head) :], wb, alt))
        return self._alternatives

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile("|".join(f"(?:{p})" for p in self._parts))
        return self._pattern

    def finditer(self, s: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(s, pos, len(s) if endpos is None else endpos)

    def search(self, s: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        return self.pattern.search(s, pos, len(s) if endpos is None else endpos)


class Locator:
    """All the rules over a whole document, in a few passes.

    The regex engine tries every alternative of an alternation at every position, but jumps
    straight from one occurrence of a literal to the next (about a millisecond per 2 MB). So
    the alternatives of all the rules are grouped by their first character, and the literal
    prefilter finds where each character starts the literal start of some alternative (one pass
    per character, one per script for Cyrillic and CJK; ``whole``: where some alternative
    matches), then the alternatives that start that way are tried there, each compiled the first
    time it is needed. The ``whole`` locator takes a while to compile but skips more on long texts.
    """

    def __init__(self, rules: tuple[Rule, ...], whole: bool) -> None:
        by_char: dict[str, list[tuple[Rule, str, bool, str]]] = {}
        for rule in rules:
            for first, rest, wb, source in rule.alternatives:
                by_char.setdefault(first, []).append((rule, rest, wb, source))
        # per first character: the candidates by their literal start (up to 4 characters), so a
        # spot tries only those that fit, and the lengths of those starts
        self.candidates: dict[Needle, tuple[dict[str, list[tuple[Rule, bool, str]]], list[int]]] = {}
        for c, alternatives in by_char.items():
            cands: dict[str, list[tuple[Rule, bool, str]]] = {}
            for rule, rest, wb, source in alternatives:
                start = c + "".join(t[-1] for t in _prefix_tokens(rest, 3, spaces=False))
                cands.setdefault(start, []).append((rule, wb, source))
            needle = Needle(c, _trie([rest for _, rest, _, _ in alternatives], whole))
            self.candidates[needle] = (cands, sorted({len(k) for k in cands}))
        self.prefilter = Prefilter(self.candidates.keys())
        self.compiled: dict[str, re.Pattern[str]] = {}

    def run(self, low: str) -> dict[Rule, list[re.Match[str]]]:
        found: dict[Rule, list[re.Match[str]]] = {}
        compiled, candidates = self.compiled, self.candidates
        for needle, p in self.prefilter.finditer(low):
            cands, lengths = candidates[needle]
            after_word = p > 0 and (low[p - 1].isalnum() or low[p - 1] == "_")
            for k in lengths:
                for rule, wb, source in cands.get(low[p : p + k], ()):
                    if wb and after_word:
                        continue
                    alt = compiled.get(source) or compiled.setdefault(source, re.compile(source))
                    if mm := alt.match(low, p):
                        found.setdefault(rule, []).append(mm)
        return found


def _prefix_tokens(p: str, limit: int, spaces: bool = True) -> list[str]:
    """The source tokens of the literal characters (and, with ``spaces``, ``\\s+``/``\\s*``/``\\s``)
    that ``p`` starts with, at most ``limit`` of them."""
    out: list[str] = []
    i = 0
    while i < len(p) and len(out) < limit:
        tok = p[i : i + 2] if p[i] == "\\" else p[i]
        if spaces and tok == "\\s":
            tok = p[i : i + 3] if p[i + 2 : i + 3] in ("+", "*") else tok
        elif (
            (tok[0] == "\\" and (len(tok) < 2 or tok[1].isalnum()))
            or (len(tok) == 1 and tok in "()[].^$*+?{|")
            or p[i + len(tok) : i + len(tok) + 1] in ("?", "*", "+", "{")
        ):
            break
        out.append(tok)
        i += len(tok)
    return out


def _trie(rests: list[str], whole: bool) -> str:
    """A pattern for alternatives ``rests`` that shares their common literal starts, so that the
    engine reads each character once: the whole alternatives, or their starts (10 tokens)."""
    tree: dict = {}
    for rest in dict.fromkeys(rests):
        node, i = tree, 0
        for tok in _prefix_tokens(rest, 10):
            node = node.setdefault(tok, {})
            i += len(tok)
        node.setdefault("", []).append(rest[i:] if whole else "")

    def emit(node: dict) -> str:
        ends = node.get("", [])
        if "" in ends:
            return ""  # an alternative ends here: whatever follows fits
        alts = [tok + emit(child) for tok, child in node.items() if tok] + [f"(?:{r})" for r in ends]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(tree)


def _structure(p: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth before it) of each character of pattern ``p`` that shapes it:
    those outside escapes and character classes."""
    depth, in_class, i = 0, False, 0
    while i < len(p):
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        else:
            yield i, c, depth
            depth += (c == "(") - (c == ")")
        i += 1


def _split_top(p: str) -> list[str]:
    """The top-level alternatives of pattern ``p``."""
    out, start = [], 0
    for i, c, depth in _structure(p):
        if c == "|" and depth == 0:
            out.append(p[start:i])
            start = i + 1
    out.append(p[start:])
    return out


def _group_end(p: str) -> int:
    """Index of the parenthesis closing the group that opens ``p``."""
    for i, c, depth in _structure(p):
        if c == ")" and depth == 1:
            return i
    raise ValueError(f"unbalanced pattern: {p!r}")


def _literal_led(p: str) -> list[tuple[str, bool]]:
    """``p`` as alternatives that each start with a literal, with whether a word boundary must precede."""
    out: list[tuple[str, bool]] = []
    for alt in _split_top(p):
        wb = alt.startswith(r"\b")
        body = alt[2:] if wb else alt
        if body.startswith("(?:"):
            end = _group_end(body)
            if end + 1 == len(body) or body[end + 1] not in "?*+{":
                for inner in _split_top(body[3:end]):
                    out += [(a, wb or w) for a, w in _literal_led(inner + body[end + 1 :])]
                continue
        out.append((body, wb))
    return out

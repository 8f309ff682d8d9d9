"""Prompt-injection findings in files the agent did not write (AGENTS.md, USER.md, ...).

``scan(text)`` returns the names of what was found, in the fixed order of ``NAMES`` ([] when
clean); ``scan_findings(text)`` returns ``Finding`` records (name, excerpt, severity, via).
A finding is not proof of an attack: by default the file is kept and a warning naming the
findings is put in front of it; a setting blocks the file instead (components/workspace.py).

How the text is read
  * Invisible characters are looked for in the raw text: Unicode tag characters (U+E0000
    block) and bidi embeddings/overrides/isolates are always reported, except the tag
    sequences of emoji subdivision flags (black flag + tag letters + cancel tag); zero-width
    and other invisible characters are reported unless they do a visible job: a ZWJ between
    emoji (family, profession and flag sequences), a ZWJ/ZWNJ between letters of a script that
    needs them (Arabic, Persian, Indic, ...), a ZWSP between letters of a script written without
    spaces (Thai, Khmer, ...), a byte-order mark at the very start. Smuggled text (tag
    characters, runs of variation selectors) is decoded and scanned like the rest.
  * Then the text is NFKC-normalised (full-width and compatibility look-alikes become plain
    letters), the invisible characters are dropped (so "ig<ZWSP>nore" reads "ignore"), and it
    is matched case-insensitively against multilingual rules (English, Chinese, Spanish,
    French, German, Russian, Japanese). Lines with letters spaced out, leetspeak or
    Cyrillic/Greek look-alikes inside Latin words are also read de-obfuscated.
  * Encoded runs of plausible length (base64, base32, hex, %-escapes, HTML entities, \\u
    escapes, and lines that read as instructions once ROT13'd or reversed) are decoded and
    scanned again; what they hide is reported with the name "encoded instruction" as well as
    its own. Asking to decode something and follow it is itself an "encoded instruction".

Quoted examples (the rule)
  Markdown is parsed into live prose, code (fenced blocks and `code spans`), quotes
  (blockquotes and text in quotation marks) and hidden parts (HTML comments, ``[//]: #``
  comments, elements styled invisible).
  * Structural markers (chat-template tokens such as <|im_start|> or [INST], role labels such as
    "System:" or "### System", tool-call markup, HTML comments) mean nothing inside code: there
    they document the syntax and are not reported (tool-call markup in code only when what it
    calls is destructive). Outside code they count only when used as structure: a template
    token at the start of a line, right before a role name or right next to another token; a
    role label at the start of a line followed by orders to the model; a comment that speaks to
    the model, asks for secrecy or holds an instruction.
  * Instructions (override attempts, persona switches, exfiltration, destructive tool calls,
    decoded payloads) count wherever they are. When one sits inside code or a quote AND the
    live prose of the document is about security (one of "prompt injection", "jailbreak",
    "red team", "exfiltration", "threat model", or two words such as "attack", "malicious",
    "security", "payload", in any of the languages above), it is a quoted example: reported
    with severity "quoted" by ``scan_findings`` and left out of ``scan``. The same sentence in
    live prose, in a hidden part, or in a document that is not about security is reported.
  * Invisible characters and hidden parts are never quoted examples: a reader cannot see them.

Speed
  The rules that run over whole documents are run together by ``_Locator``: one pass of the
  regex engine per leading character, then only the alternatives that fit are tried. A 2 MB
  file takes a fraction of a second; everything is compiled on first use, not on import.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import codecs
import functools
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import msgspec

Severity = Literal["high", "quoted"]


class Finding(msgspec.Struct, frozen=True):
    """One thing found: its name (one of ``NAMES``), a short excerpt, how serious, where from."""

    name: str
    excerpt: str
    severity: Severity = "high"  # "quoted": an example quoted in a document about security
    via: str = "text"  # "text", or how it was hidden: "base64", "tag characters", "HTML comment", ...


# Every finding name, in the order ``scan`` reports them.
NAMES: tuple[str, ...] = (
    "invisible Unicode",
    "Unicode tag characters",
    "bidi control",
    "ignore previous instructions",
    "forget everything",
    "you are now",
    "new instructions",
    "override",
    "system prompt",
    "fake role turn",
    "<|im_start|>",
    "[INST]",
    "<<SYS>>",
    "</s>",
    "chat template token",
    "hidden HTML comment",
    "hidden HTML element",
    "conceal from user",
    "tool-call bait",
    "exfiltration",
    "encoded instruction",
)
_ORDER = {n: i for i, n in enumerate(NAMES)}

# Regions of the normalised text.
_LIVE, _CODE, _QUOTE, _HIDDEN = 0, 1, 2, 3
_MAX_DEPTH = 2  # decoded text is scanned again, and what it decodes to, no further


class _re:  # stands in for re.compile
    """A regex compiled on first use: importing this module should stay cheap."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def __getattr__(self, name: str):  # finditer, search, match, sub, fullmatch, pattern
        return getattr(self.compiled, name)


class _Rule:
    """Alternative patterns, matched against lower-cased text (so no IGNORECASE), compiled on first use.

    ``finditer`` and ``search`` run the combined pattern, which is fine on a sentence or a comment.
    On a whole document the rules are run together by ``_Locator``, which needs every alternative
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


class _Locator:
    """All the rules over a whole document, in a few passes.

    The regex engine tries every alternative of an alternation at every position, but jumps
    straight from one occurrence of a literal to the next (about a millisecond per 2 MB). So
    the alternatives of all the rules are grouped by their first character: one pass per
    character (one per script for Cyrillic and CJK, whose characters are told apart by a set)
    finds where the literal start of some alternative occurs (``whole``: where some alternative
    matches), then the alternatives that start that way are tried there, each compiled the first
    time it is needed. The ``whole`` locator takes a while to compile but skips more on long texts.
    """

    def __init__(self, rules: tuple[_Rule, ...], whole: bool) -> None:
        by_char: dict[str, list[tuple[_Rule, str, bool, str]]] = {}
        for rule in rules:
            for first, rest, wb, source in rule.alternatives:
                by_char.setdefault(first, []).append((rule, rest, wb, source))
        scripts: dict[str, list[str]] = {}
        for c in by_char:
            key = "cyrillic" if "\u0400" <= c <= "\u052f" else "cjk" if c >= "\u2e80" else c
            scripts.setdefault(key, []).append(c)
        # (script gate, locating pattern, candidates by literal start, lengths of those starts)
        self.passes: list[tuple[re.Pattern[str] | None, re.Pattern[str], dict[str, list], list[int]]] = []
        for key, chars in scripts.items():
            branches = [f"{re.escape(c)}(?={_trie([rest for _, rest, _, _ in by_char[c]], whole)})" for c in chars]
            gate = {"cyrillic": "[\u0400-\u052f]", "cjk": "[\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef]"}.get(key)
            # candidates by their literal start (up to 4 characters), so a spot tries only those that fit
            cands: dict[str, list[tuple[_Rule, bool, str]]] = {}
            for c in chars:
                for rule, rest, wb, source in by_char[c]:
                    start = c + "".join(t[-1] for t in _prefix_tokens(rest, 3, spaces=False))
                    cands.setdefault(start, []).append((rule, wb, source))
            lengths = sorted({len(k) for k in cands})
            self.passes.append((re.compile(gate) if gate else None, re.compile("|".join(branches)), cands, lengths))
        self.compiled: dict[str, re.Pattern[str]] = {}

    def run(self, low: str) -> dict[_Rule, list[re.Match[str]]]:
        found: dict[_Rule, list[re.Match[str]]] = {}
        compiled = self.compiled
        for gate, rx, cands, lengths in self.passes:
            if gate is not None and not gate.search(low):
                continue
            for m in rx.finditer(low):
                p = m.start()
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


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


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


_rx = _Rule


# ------------------------------------------------------------------------------------------
# Phrase rules: name -> pattern over lower-cased, NFKC-normalised text without invisibles.

_EN_QUAL = (
    r"(?:previous|prior|above|earlier|preceding|former|original|initial|old|system|developer'?s?|safety|"
    r"security|openai'?s?|anthropic'?s?)"
)
_EN_NOUN = (
    r"(?:instructions?|rules|directions|directives|prompts?|guidelines|guidance|commands|orders|constraints|"
    r"restrictions|guardrails|policies|programming|system\s+prompt|messages|context)"
)
_IGNORE = _rx(
    # English: verb + (all/the/...) + your/previous/... + noun
    r"\b(?:ignore|disregard|forget|skip|bypass|discard|drop|abandon|neglect|set\s+aside|throw\s+out|"
    r"stop\s+(?:following|obeying)|do\s+not\s+follow|don't\s+follow|no\s+longer\s+follow)\s+"
    r"(?:(?:all|any|of|the|these|those|everything)\s+)*"
    rf"(?:(?:your|my)\s+(?:{_EN_QUAL}\s+)?|{_EN_QUAL}\s+)(?:[\w-]+\s+)?{_EN_NOUN}\b",
    r"\b(?:ignore|disregard)\s+(?:(?:all|everything|anything)\s+)?(?:(?:written|said|stated)\s+)?"
    r"(?:the\s+)?above\b",
    # English: the previous instructions are void / were a test / are superseded
    rf"\b(?:your|the|any|all)\s+(?:{_EN_QUAL}\s+)*(?:instructions|rules|guidelines|guidance|system\s+prompt|"
    r"directives|programming)\s+(?:you\s+(?:received|got|were\s+given|have)\s+(?:[\w-]+\s+){0,4}?)?"
    r"(?:(?:above\s+)?(?:[\w-]+\s+){0,8}?)(?:are|is|were|was)\s+(?:now\s+|all\s+|hereby\s+)?"
    r"(?:outdated|void|invalid|revoked|superseded|cancell?ed|obsolete|wrong|fake|a\s+test|"
    r"no\s+longer\s+(?:valid|apply|applies|applicable|in\s+effect|relevant))",
    # Chinese
    r"(?:忽略|无视|忽视|不要理会|不用理会|别管|忘记|忘掉|抛开|放弃|跳过|不再遵守|不要遵守|停止遵守|绕过)(?:掉)?"
    r"[^。\n]{0,10}?(?:之前|以前|先前|上面|上述|此前|前面|原来|原有|原始|所有|全部|一切|系统|开发者)"
    r"[^。\n]{0,10}?(?:指令|指示|规则|提示词?|设定|要求|限制|约束|命令)",
    r"(?:以上|上面|之前)的?(?:内容|指令|指示|规则)?(?:全部|都|均|一律)?(?:作废|无效|失效)",
    # Spanish
    r"\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|descarta|descarte|omite|omita|"
    r"haz\s+caso\s+omiso|hagas\s+caso|no\s+sigas|deja\s+de\s+seguir|pasa\s+por\s+alto|anula)\s+"
    r"(?:(?:de|a|todas|todos|las|los)\s+)*(?:(?:tus|sus|mis)\s+(?:instrucciones|reglas|indicaciones|órdenes|"
    r"directrices|normas|restricciones|pautas)|(?:instrucciones|reglas|indicaciones|órdenes|directrices|normas|"
    r"restricciones|pautas)\s+(?:anteriores|previas|previos|de\s+arriba|originales|iniciales|del\s+sistema|"
    r"de\s+seguridad))",
    # French
    r"\b(?:ignore|ignorez|ignorer|oublie|oubliez|oublier|ne\s+tiens\s+pas\s+compte|ne\s+tenez\s+pas\s+compte|"
    r"fais\s+abstraction|faites\s+abstraction|néglige|arrête\s+de\s+suivre|ne\s+suis\s+plus)\s+"
    r"(?:(?:de|des|d'|toutes|tous|les)\s*)*(?:(?:tes|vos|mes)\s+(?:instructions|consignes|règles|directives|"
    r"indications|ordres|restrictions)|(?:instructions|consignes|règles|directives|indications|ordres|"
    r"restrictions)\s+(?:précédentes|antérieures|ci-dessus|d'avant|initiales|d'origine|originales|"
    r"du\s+système|système|de\s+sécurité))",
    r"\b(?:tes|vos)\s+(?:consignes|instructions|règles)\s+(?:initiales|précédentes|d'origine\s+)?\s*"
    r"ne\s+s'appliquent\s+plus",
    # German
    r"\b(?:ignoriere|ignorier|ignoriert|missachte|vergiss|vergesst|verwirf|übergehe|befolge\s+nicht\s+mehr)\s+"
    r"(?:ich\s+)?(?:alle\s+)?(?:(?:deine|ihre|meine|seine)\s+(?:\w+\s+)?|(?:die\s+)?(?:vorherigen|vorigen|"
    r"bisherigen|früheren|obigen|vorangegangenen|ursprünglichen|alten)\s+)(?:system)?(?:anweisungen|"
    r"instruktionen|regeln|befehle|vorgaben|richtlinien|prompts?)",
    r"\b(?:vorherigen|vorigen|bisherigen|früheren|obigen|ursprünglichen)\s+(?:system)?(?:anweisungen|"
    r"instruktionen|regeln|vorgaben|richtlinien)\s+(?:zu\s+)?(?:ignorieren|vergessen|missachten|übergehen)",
    # Russian
    r"(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|проигнорирую|игнорирую|игнорировать|забудь|забудьте|"
    r"не\s+обращай\s+внимания\s+на|не\s+обращайте\s+внимания\s+на|отбрось|пренебреги|не\s+следуй|"
    r"перестань\s+следовать|не\s+выполняй)\s+(?:вс[еёя]\s+)?(?:(?:свои|твои|ваши|мои)\s+(?:\w+\s+)?|"
    r"(?:предыдущ\w+|прежн\w+|ранее\s+\w+|вышеуказанн\w+|вышеизложенн\w+|исходн\w+|изначальн\w+|"
    r"системн\w+|первоначальн\w+)\s+)(?:инструкци\w*|указани\w*|правил\w*|команд\w*|установк\w*|"
    r"ограничени\w*|промпт\w*)",
    # Japanese
    r"(?:以前|前|上記|これまで|今まで|先|過去|元|最初|システム|開発者)(?:の|に与えられた|に受けた)?"
    r"(?:すべての|全ての|全部の)?(?:指示|命令|ルール|指令|プロンプト|設定|制約|規則|ガイドライン)"
    r"(?:を|は)?(?:すべて|全て|全部)?(?:無視|忘れ|破棄|捨て)",
)

# Statements that the rules the model was given (by its developers, upstream, before) do not
# apply: same finding as asking to ignore them.
_AUTHORITY = r"(?:openai|anthropic|google|developers?|creators?|makers|operators?|upstream|vendor|provider)"
_REVOKED = _rx(
    rf"\b(?:rules|instructions|guidelines|policies|restrictions|configuration|guardrails|safeguards)\b[^.\n]{{0,60}}?"
    rf"\b{_AUTHORITY}\b[^.\n]{{0,40}}?\b(?:(?:are|is)\s+(?:now\s+)?(?:void|invalid|null|suspended|cancell?ed|revoked|"
    r"not\s+(?:valid|binding|in\s+effect|applicable))|(?:don't|do\s+not|no\s+longer)\s+(?:apply|matter|count))",
    rf"\b{_AUTHORITY}'?s?\s+(?:rules|instructions|guidelines|policies|restrictions|configuration|guardrails)\b"
    r"[^.\n]{0,40}?\b(?:(?:are|is)\s+(?:now\s+)?(?:void|invalid|null|suspended|revoked|not\s+(?:valid|binding|in\s+effect))|"
    r"(?:don't|do\s+not|no\s+longer)\s+(?:apply|matter|count))",
    r"\b(?:whatever|everything|anything)\s+you\s+(?:were|have\s+been|got)\s+(?:configured|told|instructed|given|"
    r"programmed|set\s+up)\b[^.\n]{0,40}?\b(?:no\s+longer\s+(?:matters?|appl(?:y|ies)|counts?)|(?:doesn't|does\s+not)\s+"
    r"(?:matter|apply|count)|is\s+(?:void|irrelevant|obsolete))",
    r"\b(?:i'm|i\s+am|we're|we\s+are|this\s+(?:file|note|readme|document))\s+(?:now\s+)?(?:overriding|overrides|"
    r"superseding|supersedes|replacing|replaces)\s+(?:the\s+|your\s+|any\s+)?(?:earlier|previous|prior|original|"
    r"existing|current|upstream|default)\s+(?:configuration|config|setup|settings|instructions|rules|prompt|guidance)",
    r"(?:之前|以前|原来|原先)(?:给你|对你)?的?(?:设定|指令|规则|指示|要求)(?:都|全部|一律)?(?:不算数|无效|作废|失效|"
    r"不再有效|不适用)",
    r"(?:开发者|开发人员|官方|系统)(?:的|制定的|设定的)?(?:规则|限制|指令)[^。\n]{0,10}(?:不算数|无效|作废|失效|不适用)",
    r"\bno\s+(?:tienes|necesitas|debes)\s+(?:que\s+|por\s+qué\s+)?seguir\s+(?:las\s+|tus\s+)?(?:reglas|instrucciones|"
    r"normas|directrices|indicaciones)",
    r"\b(?:reglas|instrucciones|normas)\s+(?:de\s+(?:tus|los)\s+(?:desarrolladores|creadores)|del\s+sistema)[^.\n]{0,30}?"
    r"\b(?:no\s+(?:aplican|cuentan|valen|rigen)|ya\s+no\s+(?:aplican|cuentan|valen)|son\s+nulas)",
    r"\b(?:règles|consignes|instructions|restrictions)\b[^.\n]{0,40}?\b(?:tes|vos)\s+(?:créateurs|développeurs|"
    r"concepteurs)\b[^.\n]{0,20}?\bne\s+(?:comptent|s'appliquent|valent)\s+plus",
    r"\b(?:vorgaben|regeln|anweisungen|richtlinien|einschränkungen)\s+(?:deiner|ihrer|der)\s+(?:entwickler|hersteller|"
    r"macher|betreiber)\b[^.\n]{0,30}?\bgelten\b[^.\n]{0,30}?\bnicht",
    r"(?:правила|инструкции|ограничения|указания)[^.\n]{0,40}?(?:разработчик|создател)\w*[^.\n]{0,30}?"
    r"(?:не\s+действуют|недействительн|больше\s+не\s+(?:действуют|важны))",
    r"(?:開発元|開発者|運営|システム)(?:が|の)(?:決めた|定めた|設定した)?(?:ルール|規則|制限|指示)は[^。\n]{0,20}?"
    r"(?:無効|適用されません|関係ありません)",
)

# Orders never to refuse, or to obey nothing but this file: same finding as overriding the
# safety rules.
_NO_REFUSAL = _rx(
    r"\b(?:never|don't|do\s+not)\s+refuse\b|\bwithout\s+(?:ever\s+)?refusing\b|\bno\s+refusals?\b",
    r"\b(?:drop|disable|remove|turn\s+off|suppress|skip)\s+(?:any|all|your)\s+refusal",
    r"\b(?:even|including)\s+(?:the\s+)?(?:ones|those|requests|questions)\s+(?:that\s+)?you\s+(?:would\s+)?"
    r"(?:normally\s+|usually\s+|otherwise\s+)?(?:decline|refuse|reject)",
    r"\b(?:obey|follow|listen\s+to)\s+only\s+(?:this\s+(?:file|readme|document|note)|me\b|what\s+(?:i|this\s+file)\s+says?)",
    r"\bonly\s+(?:obey|follow|listen\s+to)\s+(?:this\s+(?:file|readme|document)|me\b|what\s+(?:i|this\s+file)\s+says?)",
    r"\btreat\s+this\s+(?:file|readme|document|note)\s+as\s+your\s+(?:highest[\s-]priority|primary|only|real|new)\s+"
    r"(?:instructions?|instruction\s+set|system\s+prompt|rules)",
    r"不要拒绝(?:任何|我的)?(?:请求|要求|问题)|不得拒绝|永远不要拒绝|只(?:听|服从|遵守|遵循)(?:这个|本)文件",
    r"\bnunca\s+(?:te\s+)?(?:niegues|rechaces)\b|\bsin\s+negarte\b|\bsolo\s+(?:obedeces|obedece|sigues)\s+"
    r"(?:a\s+)?(?:lo\s+que\s+dice\s+)?(?:este\s+archivo|mí)",
    r"\bne\s+refuse\s+(?:jamais|rien)\b|\bsans\s+(?:jamais\s+)?refuser\b|\bmême\s+celles\s+que\s+tu\s+refuserais|"
    r"\bn'obéis\s+qu'à\b|\bobéi(?:s|ssez)\s+uniquement\s+à\b",
    r"\b(?:lehne|verweigere)\s+(?:nie|niemals|nichts)\b|\bohne\s+(?:zu\s+)?(?:verweigern|ablehnen)\b|"
    r"\bbeantworte\s+jede\s+(?:anfrage|frage)\b[^.\n]{0,40}?\bohne\b|\b(?:gehorche|folge|befolge)\s+nur\s+(?:noch\s+)?"
    r"(?:dieser\s+datei|mir)\b",
    r"без\s+отказ\w*|никогда\s+не\s+отказывай|(?:подчиняйся|следуй|слушайся)\s+только\s+(?:этому\s+файлу|мне)|"
    r"выполняй\s+(?:всё|все),?\s+что\s+написано\s+в\s+этом\s+файле",
    r"断らずに|拒否せずに|決して断ら|このファイルの(?:指示|ルール)(?:だけ|のみ)に従",
)

_FORGET = _rx(
    r"\bforget\s+(?:about\s+)?(?:everything|all)\s*,?\s+(?:(?:that\s+)?you\s+(?:were|have\s+been|'ve\s+been|got)\s+"
    r"(?:told|given|taught)|(?:that\s+)?(?:came|was\s+said|was\s+written)\s+before|above|before\s+this|prior|"
    r"previous|so\s+far|until\s+now)",
    r"\bforget\s+everything\b(?=\s*[.!]|\s*$)",
    r"忘(?:记|掉|了)(?:你)?(?:之前|以前|此前|上面|前面)?(?:收到|听到|被告知)?的?(?:一切|所有|全部)",
    r"\bolvida(?:te\s+de)?\s+todo\s+(?:lo\s+anterior|lo\s+que\s+te\s+(?:dijeron|han\s+dicho|dije|indicaron)|"
    r"lo\s+de\s+arriba)",
    r"\boubli(?:e|ez)\s+tout\s+(?:ce\s+qu['e]\s*(?:on\s+)?(?:t'|vous\s+)(?:a\s+)?(?:dit|appris|indiqué|demandé)|"
    r"ce\s+qui\s+précède)",
    r"\bvergiss\s+alles,?\s+(?:was\s+(?:dir|ihnen|euch)\s+(?:bisher\s+|zuvor\s+|vorher\s+)?(?:gesagt|mitgeteilt|"
    r"aufgetragen)|bisherige|vorherige|obige|davor|zuvor)",
    r"забудь(?:те)?\s+(?:вс[её]|обо\s+вс[её]м)[,\s]+(?:что\s+(?:тебе|вам)\s+(?:говорили|сказали|было\s+сказано)|"
    r"предыдущ|сказанное|выше|ранее|до\s+этого)",
    r"(?:これまで|今まで|以前|前|上記)(?:に|の)?[^。\n]{0,12}?(?:こと|内容|指示)(?:は|を)(?:すべて|全て|全部)?忘れ",
)

_PERSONA_EN = (
    r"(?:ai|assistant|model|bot|chatbot|agent|persona|character|administrator|admin|root|superuser|hacker|"
    r"dan|jailbroken|unrestricted|unfiltered|uncensored|evil|free\b|in\s+[\w-]+\s+mode|operating\s+without|"
    r"no\s+longer|able\s+to\s+(?:ignore|bypass))"
)
_YOU_ARE_NOW = _rx(
    rf"\byou\s+are\s+now\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+){{0,3}}?{_PERSONA_EN}",
    r"\byou\s+are\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|bound|restricted|required|limited|claude|chatgpt|"
    r"gpt|gemini|llama|subject|governed)",
    r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+(?:be|act|respond\s+as)|must\s+act)\s+(?:as\s+)?(?:an?\s+)?"
    r"(?:[\w-]+\s+){0,3}?(?:ai|assistant|model|dan|persona|character|unrestricted|unfiltered|uncensored)",
    r"\b(?:pretend|imagine)\s+(?:that\s+)?(?:you\s+are|to\s+be|you're)\s+(?:an?\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:ai|assistant|model|dan|persona|unrestricted|unfiltered|uncensored|evil)\b",
    r"\bact\s+as\s+(?:an?\s+)?(?:dan|unrestricted|unfiltered|uncensored|jailbroken|evil)\b",
    r"\b(?:ai|assistant|model|chatbot|llm|persona)\s+(?:with\s+no|without\s+(?:any\s+)?)"
    r"(?:content\s+)?(?:restrictions|rules|limits|limitations|filters|guidelines|censorship)",
    r"\b(?:do\s+anything\s+now|dan\s+mode|jailbreak\s+mode|god\s+mode)\b",
    r"\b(?:enable|enabled|activate|activated|enter|entering|switch\s+to)\s+developer\s+mode\b[^.\n]{0,80}?"
    r"\b(?:polic|filter|restrict|rules|answer|respond|without|ignore|you\b)",
    r"\bdeveloper\s+mode\s+(?:is\s+)?(?:enabled|activated|on)\b[^\n]{0,100}?\b(?:polic|filter|restrict|rules|"
    r"ignore|you\b)",
    # Chinese
    r"(?:你现在是|现在你是|从现在(?:开始|起)[,\s]*你(?:是|就是|将是|要扮演)|你现在的身份是|你的新身份是|你不再是|"
    r"扮演)[^。\n]{0,30}?(?:ai|助手|模型|管理员|机器人|角色|身份|没有|不受|无限制|越狱|dan)",
    r"(?:没有任何限制|不受(?:任何)?(?:约束|限制))的\s*(?:ai|助手|模型)",
    r"(?:进入|开启|切换到|处于)开发者模式[^。\n]{0,40}(?:限制|过滤|规则|安全)",
    # Spanish
    r"\b(?:ahora\s+eres|a\s+partir\s+de\s+ahora\s+eres|desde\s+ahora\s+eres|ya\s+no\s+eres|"
    r"finge\s+(?:que\s+eres|ser)|act[uú]a\s+como)[^.\n]{0,40}?(?:\bia\b|asistente|modelo|administrador|root|"
    r"sin\s+(?:restricciones|censura|filtros|l[ií]mites)|\bdan\b)",
    r"\bmodo\s+desarrollador[^.\n]{0,60}(?:filtro|restricci|regla|seguridad)",
    # French
    r"\b(?:tu\s+es\s+(?:maintenant|désormais|dorénavant)|vous\s+êtes\s+(?:maintenant|désormais|dorénavant)|"
    r"désormais,?\s+(?:tu\s+es|vous\s+êtes)|tu\s+n'es\s+plus|fais\s+semblant\s+d'être|agis\s+comme)"
    r"[^.\n]{0,40}?(?:\bia\b|assistant|modèle|administrateur|root|sans\s+(?:aucune\s+)?(?:restriction|filtre|"
    r"limite|censure)|\bdan\b)",
    r"\bmode\s+développeur[^.\n]{0,60}(?:filtre|restriction|limite|règle|sécurité)",
    # German
    r"\b(?:du\s+bist\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt)|ab\s+(?:sofort|jetzt)\s+bist\s+du|"
    r"du\s+bist\s+nicht\s+mehr|tu\s+so,?\s+als\s+wärst\s+du|agiere\s+als)[^.\n]{0,40}?(?:\bki\b|assistent|"
    r"modell|administrator|admin|root|ohne\s+(?:jede\s+)?(?:einschränkung|filter|grenzen|zensur)|\bdan\b)",
    r"\bentwicklermodus[^.\n]{0,60}(?:filter|einschränk|regel|sicherheit)",
    # Russian
    r"(?:теперь\s+ты|ты\s+теперь|отныне\s+ты|с\s+этого\s+момента\s+ты|ты\s+больше\s+не|притворись|"
    r"представь,?\s+что\s+ты|веди\s+себя\s+как)[^.\n]{0,40}?(?:\bии\b|ассистент|помощник|модел|администратор|"
    r"root|без\s+(?:каких-либо\s+)?(?:ограничений|фильтров|цензуры)|связан|\bdan\b)",
    r"режим\w*\s+разработчика[^.\n]{0,60}(?:фильтр|ограничен|правил|безопасност)",
    # Japanese
    r"あなたは(?:もう|今から|これから)?[^。\n]{0,30}?(?:制限のない|制約のない|無制限の|フィルターのない|"
    r"(?:規則|ルール|制限)に縛られ(?:ていません|ない))",
    r"開発者モード[^。\n]{0,40}(?:フィルター|制限|安全|ルール)",
)
# After "you are now": a name given to the model ("DAN,", "Root.", "\"Root\""), read case-sensitively.
_NAME_AFTER = _re(r"\s+(?:[\"“'][^\"”'\n]{1,30}[\"”']|[A-Z]{2,}\b|[A-Z][a-z]+(?=[,.!:;]))")
_YOU_ARE_NOW_BARE = _rx(r"\byou\s+are\s+now\b")

_NEW_INSTRUCTIONS = _rx(
    r"\b(?:new|updated|revised|real|actual|true)\s+(?:instructions|rules|system\s+prompt|directives?|orders)"
    r"(?:\s+(?:from|by)\s+[\w\s'-]{1,40}?)?\s*:",
    r"\b(?:your|the)\s+(?:new|real|true|actual|updated)\s+(?:instructions|task|rules|role|objective|goal|"
    r"mission|purpose)\s*(?:is|are|:)",
    r"\bupdated\s+(?:directive|policy|instructions?)\s+from\s+(?:the\s+)?(?:operator|developer|admin|system)",
    r"新的?(?:指令|指示|任务|规则)\s*:",
    r"\bnuevas\s+(?:instrucciones|órdenes|reglas)\s*:|\btu\s+nueva\s+(?:tarea|función|misión)\s*:",
    r"\bnouvelles\s+(?:instructions|consignes|règles)\s*:|\bta\s+nouvelle\s+(?:tâche|mission)\s*:",
    r"\bneue\s+(?:anweisungen|instruktionen|regeln|befehle)\s*:|\bdeine\s+neue\s+(?:aufgabe|rolle)\s*:",
    r"нов(?:ые|ая)\s+(?:инструкци\w*|указани\w*|правила|задача)\s*:",
    r"新しい(?:指示|命令|ルール|タスク)\s*:",
)

_OVERRIDE = _rx(
    r"\b(?:overrid(?:e|es|ing)|bypass(?:es|ing)?|circumvent(?:s|ing)?|disable|turn\s+off|deactivate|"
    r"get\s+around|lift)\s+(?:all\s+|any\s+|the\s+)?(?:(?:your|its)\s+(?:[\w-]+\s+)?|(?:safety|security|content|"
    r"ethical|moderation)\s+)(?:guidelines|filters?|restrictions|guardrails|safeguards|policies|policy|"
    r"protocols|rules|limitations|constraints|system\s+prompt|programming|instructions|training)",
    r"\b(?:overrid(?:e|es|ing)|bypass(?:es|ing)?|circumvent|disable)\s+(?:all\s+|any\s+|the\s+)?"
    r"(?:previous|prior|system|developer'?s?)\s+(?:instructions|prompt|rules|guidelines)",
    r"\b(?:bypass|circumvent|remove|lift)\s+all\s+(?:restrictions|filters|guardrails|limits)",
    r"(?:绕过|解除|取消|关闭|突破|无视)(?:所有|一切|全部)?的?(?:安全)?(?:限制|过滤|审查|约束|防护)",
    r"\b(?:desactiva|elimina|evita|elude|salta(?:te)?)\s+(?:tus|los|las|todos\s+los|todas\s+las)\s*"
    r"(?:filtros|restricciones|directrices|normas|reglas|políticas)(?:\s+de\s+(?:seguridad|contenido))?",
    r"\b(?:contourne|contournez|contourner|désactive|désactivez|supprime)\s+(?:les|tes|vos|toutes\s+les)\s+"
    r"(?:restrictions|filtres|règles|garde-fous)(?:\s+de\s+sécurité)?",
    r"\b(?:umgehe|umgehen|deaktiviere|deaktivieren|hebe)\s+(?:die|deine|alle)\s+(?:sicherheits\w*|"
    r"einschränkungen|filter|richtlinien|schutzmaßnahmen)",
    r"\b(?:sicherheits\w+|einschränkungen|filter)\s+(?:zu\s+)?(?:umgehen|deaktivieren|aufheben|außer\s+kraft)",
    r"(?:обойди|обойти|отключи|отключить|сними|снять)\s+(?:все\s+)?(?:ограничени\w*|фильтр\w*|защит\w*)",
    r"(?:制限|フィルター|ルール|制約|ガードレール)を(?:回避|解除|無効|迂回)",
)

_SYSTEM_PROMPT = _rx(
    r"\b(?:include|paste|put|copy|post|append|add|insert|quote)\s+(?:the\s+)?(?:full\s+|entire\s+|complete\s+)?"
    r"(?:text\s+of\s+)?(?:your|the)\s+(?:system\s+prompt|system\s+instructions|hidden\s+instructions|"
    r"initial\s+instructions|developer\s+message)",
    r"\b(?:reveal|print|show|output|repeat|display|leak|disclose|dump|tell\s+me|give\s+me|write\s+out|"
    r"return|share|expose)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|complete\s+|initial\s+|original\s+|"
    r"hidden\s+|secret\s+|exact\s+|whole\s+)*(?:system\s+prompt|system\s+instructions|system\s+message|"
    r"hidden\s+instructions|initial\s+instructions|developer\s+message|instructions\s+above|"
    r"(?:original\s+)?prompt\s+verbatim)",
    r"(?:输出|显示|打印|泄露|透露|告诉我|给出|展示)[^。\n]{0,10}?(?:系统提示|系统指令|初始指令|隐藏指令|系统设定)",
    r"\b(?:revela|revelar|muestra|mostrar|imprime|imprimir|repite)\s+(?:tu|el|tus|las)\s+(?:prompt\s+del\s+sistema|"
    r"instrucciones\s+(?:ocultas|del\s+sistema|iniciales))",
    r"\b(?:révèle|révéler|révélez|affiche|afficher|affichez|montre|montrez|répète)\s+(?:ton|le|votre|tes|vos)\s+"
    r"(?:prompt\s+système|instructions\s+(?:système|cachées|initiales)|consignes\s+(?:cachées|initiales))",
    r"\b(?:gib|zeige|zeig|wiederhole|verrate)\s+(?:mir\s+)?(?:deinen|den|deine|die)\s+(?:system-?prompt|"
    r"systemanweisungen|versteckten\s+anweisungen)|\b(?:system-?prompt|systemanweisungen)\s+(?:vollständig\s+)?"
    r"(?:aus(?:geben|zugeben)?|preis)",
    r"(?:раскрой|раскрыть|выведи|вывести|покажи|показать|повтори)\s+(?:\w+\s+)?(?:свой\s+|твой\s+)?"
    r"(?:системн\w+\s+(?:промпт|инструкци\w*|подсказк\w*)|скрыт\w+\s+инструкци\w*)",
    r"(?:システムプロンプト|隠された指示|初期指示)を(?:全文)?(?:表示|出力|教え|見せ|開示)",
)

_CONCEAL = _rx(
    r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|notify|alert|warn|let)\s+(?:the\s+)?(?:user|human|"
    r"developer|operator|maintainers?)\b",
    r"\bwithout\s+(?:telling|informing|notifying|alerting|warning)\s+(?:the\s+)?(?:user|human)\b",
    r"\b(?:do\s+not|don't|never)\s+mention\s+(?:this|it|these\s+instructions|this\s+(?:note|comment|file))\b",
    r"\bkeep\s+this\s+(?:secret|hidden|confidential)\s+from\b",
    r"不要(?:告诉|通知|让)(?:用户|使用者)|别告诉用户|瞒着用户|不要向用户(?:透露|提及)",
    r"\bno\s+(?:se\s+lo\s+)?(?:digas|diga|menciones|informes|avises)\s+(?:nada\s+)?(?:al\s+usuario|esto)|"
    r"\bsin\s+(?:avisar|decir(?:le)?|informar)\s+al\s+usuario|\bno\s+lo\s+menciones",
    r"\bne\s+(?:le\s+)?(?:dis|dites)\s+(?:rien|pas)\b[^.\n]{0,20}l'utilisateur|\bsans\s+(?:le\s+dire|prévenir|"
    r"informer|avertir)\s+(?:à\s+)?l'utilisateur|\bn'en\s+parle\s+pas",
    r"\bsag(?:e)?\s+dem\s+(?:nutzer|benutzer|anwender)\s+nichts|\bohne\s+den\s+(?:nutzer|benutzer|anwender)\s+zu\s+"
    r"(?:informieren|benachrichtigen)|\berwähne\s+(?:es|das|dies)\s+nicht",
    r"не\s+(?:говори|сообщай|рассказывай)\s+(?:об\s+этом\s+)?пользовател\w*|ничего\s+не\s+говори\s+пользовател\w*|"
    r"без\s+ведома\s+пользовател\w*",
    r"ユーザー(?:に|には)(?:言わ|知らせ|伝え|教え)(?:ないで|ずに)",
)

# Weak signs that a passage gives orders to the model: enough after a role label, not alone.
_DIRECTIVE_WEAK = _rx(
    r"\byou\s+(?:must|shall|will\s+now|are\s+now|have\s+been|no\s+longer|should\s+now|need\s+to|are\s+"
    r"(?:permitted|allowed|authori[sz]ed|required|free))\b",
    r"\b(?:do\s+not|don't|never)\s+(?:ask|refuse|tell|mention|reveal|inform|warn|question)\b",
    r"\b(?:reveal|disclose|leak|print|output|dump|show)\b[^.\n]{0,40}\b(?:secrets?|keys?|passwords?|credentials?|"
    r"tokens?|prompt|instructions|everything)\b",
    r"\b(?:comply|obey)\b",
    r"\b(?:disabled|revoked|lifted|suspended|permitted\s+to|allowed\s+to|authori[sz]ed\s+to)\b",
    r"\bwithout\s+(?:any\s+)?(?:restrictions|limits|filter\w*|refus\w*|confirmation)\b",
    r"\bno\s+(?:restrictions|rules|limits|filters)\b",
    r"必须|务必|不得|不要(?:告诉|询问|拒绝)|泄露|无需确认|服从",
    r"\b(?:debes|deberás|tienes\s+que|debe)\b|\bno\s+(?:pidas|preguntes|digas|rechaces)\b|\brevela|\bobedece|"
    r"\bsin\s+(?:restricciones|confirmación)",
    r"\b(?:tu\s+dois|vous\s+devez|doit\s+désormais)\b|\bne\s+(?:demande|dis|refuse)\b|\brévèle|\bobéis|"
    r"\bsans\s+(?:restriction|confirmation)",
    r"\b(?:du\s+musst|muss\s+ab\s+jetzt|frage\s+nie|sag\s+nichts|gehorche)\b|\bohne\s+(?:einschränkung|bestätigung)",
    r"(?:должен|обязан)|никогда\s+не\s+спрашивай|не\s+говори|раскрой|выведи|подчиняйся|без\s+(?:ограничений|"
    r"подтверждения)",
    r"しなければなりません|してはいけません|従って|確認を求め|表示しなさい",
    r"\babgeschaltet\b|\bdeaktiviert\b|\bohne\s+nachfrage\b|\bdesactivad[oa]s?\b|\bdeshabilitad[oa]s?\b|"
    r"\bdésactivée?s?\b|отключен\w*|無効(?:化|に)|已(?:关闭|禁用)",
)

# Hidden parts (comments, invisible elements) are suspect when they speak to the model...
_AI_ADDRESS = _rx(
    r"\b(?:ai|llm|language\s+model|model|assistant|agent|bot|chatbot|copilot|claude|chatgpt|gpt|gemini)s?\b"
    r"\s*(?:reading\s+this|:|,)",
    r"\b(?:note|message|instructions?|reminder)\s+(?:to|for)\s+(?:the\s+)?(?:ai|llm|language\s+model|model|"
    r"assistant|agent|bot|copilot|claude|chatgpt)\b",
    r"\bdear\s+(?:ai|llm|assistant|model|agent|claude|chatgpt|gpt)\b",
    r"给\s*(?:ai|助手|模型|ai\s*助手)|ai\s*助手[:,]",
    r"\b(?:para\s+la\s+ia|nota\s+para\s+la\s+ia)\b|\basistente\s*:",
    r"\bpour\s+l'(?:ia|assistant)\b|\bassistant\s+ia\b",
    r"\ban\s+(?:die\s+ki|den\s+(?:ki-)?assistenten)\b|\bki-assistent",
    r"\bдля\s+(?:ии|ассистента|нейросети|ии-ассистента)\b|\bии-ассистент",
    r"(?:ai|アシスタント|モデル)(?:へ|への)",
)
# ... or ask for secrecy.
_COVERT = _rx(
    r"\b(?:secretly|silently|quietly|covertly|stealthily)\b|\bwithout\s+(?:telling|informing|notifying)\b|"
    r"\b(?:do\s+not|don't|never)\s+(?:tell|mention|reveal|disclose)\b|\bhidden\s+instruction",
    r"悄悄|偷偷|秘密地|暗中|不要告诉",
    r"\ben\s+secreto\b|\bsin\s+avisar\b|\bno\s+lo\s+menciones\b|\ba\s+escondidas\b",
    r"\ben\s+silence\b|\bsecrètement\b|\bsans\s+le\s+dire\b|\bne\s+dis\s+rien\b|\bdiscrètement\b",
    r"\bheimlich\b|\bunbemerkt\b|\berwähne\s+es\s+nicht\b|\bohne\s+es\s+zu\s+sagen\b",
    r"тайно|незаметно|втихую|не\s+говори|ничего\s+не\s+говори",
    r"こっそり|密かに|内緒で|知らせずに|言わないで",
)

# Words that make a document *about* security: quotes in such a document are examples.
_SECURITY_STRONG = _rx(
    r"\bprompt[\s-]+injections?\b|\binjection\s+de\s+prompts?\b|\binyecci[oó]n\s+de\s+prompts?\b|"
    r"\bprompt-injektion\b|инъекци\w*\s+промпт\w*|提示(?:词)?注入|プロンプトインジェクション",
    r"\bjailbreak\w*|\bred[\s-]team\w*|\bexfiltrat\w*|越狱|脱獄|\bthreat\s+model\w*",
)
_SECURITY_WEAK = _rx(
    r"\binjections?\b|\battack(?:s|er|ers|ing)?\b|\bmalicious\b|\badversarial\b|\bexploit\w*|\bpayloads?\b|"
    r"\bphishing\b|\bsecurity\b|\bvulnerab\w+|\btrojan\b|\buntrusted\b",
    r"注入|攻击|恶意|载荷|漏洞|安全",
    r"\binyecci[oó]n\b|\bataques?\b|\batacantes?\b|\bmalicios\w+|\bseguridad\b|\bvulnerabilidad\w*",
    r"\battaques?\b|\battaquants?\b|\bmalveillant\w*|\bsécurité\b|\bvulnérabilit\w*",
    r"\binjektion\b|\bangriff\w*|\bangreifer\w*|\bbösartig\w*|\bsicherheit\w*|\bschadcode\b",
    r"инъекци\w*|атак\w*|злоумышленник\w*|вредоносн\w*|безопасност\w*|уязвим\w*",
    r"インジェクション|攻撃|悪意|セキュリティ|脆弱性",
)

# ------------------------------------------------------------------------------------------
# Structural markers

# Chat-template tokens -> finding name.
_TOKEN_NAMES = {
    "<|im_start|>": "<|im_start|>",
    "<|im_end|>": "<|im_start|>",
    "[inst]": "[INST]",
    "[/inst]": "[INST]",
    "<<sys>>": "<<SYS>>",
    "<</sys>>": "<<SYS>>",
    "</s>": "</s>",
    "<s>": "</s>",
}
_TOKEN = _rx(
    r"<\|im_(?:start|end|sep)\|>",
    r"\[/?inst\]",
    r"<</?sys>>",
    r"</?s>",
    r"<\|(?:begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|eom_id|python_tag|endoftext|"
    r"system|user|assistant|end|start|channel|message|return|call|constrain|tool_call|"
    r"(?:begin|end)[▁_ ]of[▁_ ]sentence)\|>",
    r"<(?:start|end)_of_turn>",
    r"\[/?(?:system_prompt|available_tools|tool_calls|tool_results)\]",
)
_ROLE_AFTER_TOKEN = _re(r"[ \t]*\n?[ \t]*(?:system|user|assistant|developer|model|tool|ipython|human)\b")

# Role labels at the start of a line: "System:", "**Assistant:**", "[SYSTEM]:", "### System",
# "<system>", "[system](#...)".
_ROLE_WORDS = (
    r"system(?:\s+(?:message|prompt|override|notice|instructions?))?|assistant|ai|developer|model|operator|"
    r"administrator|admin|human|user|系统(?:消息|提示词?)?|助手|用户|sistema|asistente|usuario|système|systeme|"
    r"utilisateur|assistent|benutzer|nutzer|система|ассистент|пользователь|システム(?:プロンプト)?|アシスタント|"
    r"ユーザー|system-?prompt|prompt\s+del\s+sistema|prompt\s+système|системный\s+промпт"
)
_ROLE_LABEL = _re(
    rf"\n[ \t]{{0,3}}(?:(?P<h>#{{1,6}})[ \t]*(?P<hr>{_ROLE_WORDS})[ \t]*:?[ \t]*$"
    rf"|<(?P<tr>{_ROLE_WORDS})>[ \t]*$"
    rf"|\[(?P<br>{_ROLE_WORDS})\](?:\(#[^)\n]*\))?[ \t]*(?::[ \t]*)?(?=\S|$)"
    rf"|(?:\*\*|__)?(?P<cr>{_ROLE_WORDS})[ \t]*(?:(?:\*\*|__)[ \t]*:|:[ \t]*(?:\*\*|__)?)(?=[ \t]*\S)"
    rf"|[\"']?role[\"']?[ \t]*:[ \t]*[\"']?(?P<yr>system|assistant|developer)[\"']?,?[ \t]*$)",
    re.MULTILINE,
)
_TURN_END = _re(
    rf"\n[ \t]*\n|\n(?=[ \t]*(?:#{{1,6}}[ \t]*(?:{_ROLE_WORDS})[ \t]*$"
    rf"|(?:\[|<|\*\*)?(?:{_ROLE_WORDS})[ \t]*(?:\*\*|\]|>)?[ \t]*:))",
    re.MULTILINE,
)
_PRIVILEGED_ROLE = _re(
    r"system|assistant|ai$|developer|model|operator|admin|系统|助手|sistema|asistente|système|systeme|assistent|"
    r"система|ассистент|システム|アシスタント"
)
_SYSTEM_PROMPT_ROLE = _re(r"prompt|промпт|系统提示|システムプロンプト")

_COMMENT = _re(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_MD_COMMENT = _re(r"\n\[(?://|comment|_|#)\]:[ \t]*(?:#|<>)[ \t]*(?:\(.*\)|\".*\"|'.*')[ \t]*$", re.MULTILINE)
_HIDDEN_OPEN = _re(
    r"<(\w+)\b[^>]{0,400}?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|em|pt)?\s*[;\"']|"
    r"opacity\s*:\s*0(?:\.0+)?\s*[;\"']|\shidden(?:\s|>|=))[^>]{0,400}>"
)

_TOOL_MARKUP = _rx(
    r"<tool_call>|<function_calls?>|<invoke\s+name=|<\|tool_call\|>|\[tool_calls\]|<\|python_tag\|>",
    r"\"tool_calls\"\s*:",
    r"\{\s*\"(?:name|tool|tool_name|function|recipient_name)\"\s*:\s*\"[^\"\n]{1,80}\"\s*,\s*"
    r"\"(?:arguments|parameters|args|input|tool_input|params)\"\s*:",
)
_DESTRUCTIVE_COMMANDS = (
    r"\brm\s+-(?:[a-z]*r[a-z]*f|[a-z]*f[a-z]*r)[a-z]*\s+(?:--no-preserve-root\s+)?(?:/\*?|~/?\*?|\$home/?|\*|"
    r"\.{1,2}/?)(?=[\s`'\";|&)]|$)",
    r"\bgit\s+push\s+(?:[^\n`]*\s)?(?:--force|-f)\b[^\n`]*\b(?:main|master)\b",
    r"\bgit\s+push\s+[^\n`]*\s\+(?:main|master)\b",
    r"\bmkfs(?:\.\w+)?\s+/dev/|\bdd\s+if=[^\n]*\bof=/dev/(?:sd|nvme|hd|disk)|\bchmod\s+-r\s+777\s+/(?:\s|$)",
    r":\(\)\s*\{\s*:\|:&\s*\};:|\bformat\s+c:|\bdel\s+/[sfq]\s+/[sfq]\s+c:\\|\bremove-item\s+-recurse\s+-force\s+c:\\",
)
_DESTRUCTIVE_SHELL = _rx(*_DESTRUCTIVE_COMMANDS)  # reported wherever they are
# inside tool-call markup, SQL that drops data counts too (alone it is everyday documentation)
_DESTRUCTIVE = _rx(*_DESTRUCTIVE_COMMANDS, r"\bdrop\s+(?:table|database)\b", r"\b(?:delete|wipe|destroy|purge)_?all\b")
_DANGER_STEM = (
    r"(?:delete|remove|drop|wipe|destroy|purge|erase|truncate|transfer|payment|grant|revoke|shutdown|nuke|"
    r"borrar|eliminar|destruir|supprimer|effacer|détruire|löschen|loeschen|entfernen|zerstören|удал|очист|"
    r"уничтож|删除|清空|销毁|削除|消去)"
)
# English: "call the delete_all tool" (an order: see _IMPERATIVE_BEFORE), "delete all ... using the X tool"
_TOOL_CALL_EN = _rx(
    rf"\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?[`'\"]?[\w.-]*{_DANGER_STEM}[\w.-]*[`'\"]?"
    r"(?:\s+(?:tool|function|command|action|endpoint|api)\b|\s*\(\)|\s+(?:with|using)\s*[{(])",
)
_TOOL_CALL_DIRECTIVE = _rx(
    r"\b(?:execute|run)\s+[`'\"]?(?:drop\s+(?:database|table)|truncate\s+table)\b[^\n]{0,80}?\b(?:using|with|via)\s+"
    r"(?:the\s+)?[\w-]+\s+tool\b",
    r"\b(?:delete|remove|wipe|destroy|erase|purge)\s+(?:all|every)\b[^.\n]{0,60}?\b(?:using|with|via|through)\s+"
    r"(?:the\s+)?[\w-]+\s+(?:tool|function|api)\b",
    rf"(?:调用|使用|执行|运行|触发)\s*[`'\"]?[\w.-]*{_DANGER_STEM}[\w.-]*[`'\"]?\s*(?:工具|函数|命令|接口)",
    rf"\b(?:llama|invoca|usa|utiliza|ejecuta|activa)\s+(?:a\s+)?(?:la\s+|el\s+)?(?:herramienta|función|funcion|"
    rf"comando)\s+[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"\b(?:appelle|appelez|invoque|invoquez|utilise|utilisez|exécute|exécutez|lance|lancez)\s+(?:l'|la\s+|le\s+)?"
    rf"(?:outil|fonction|commande)\s+[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"\b(?:rufe|ruf|nutze|verwende|benutze|führe|starte)\b[^.\n]{{0,40}}\b(?:tool|werkzeug|funktion|befehl)\s+"
    rf"[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"(?:вызови|вызовите|используй|используйте|запусти|запустите|выполни|выполните)\s+(?:инструмент|функцию|"
    rf"команду)\s+[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"{_DANGER_STEM}[\w.-]*[`'\"]?\s*(?:ツール|関数|コマンド)を[^。\n]{{0,40}}(?:呼び出|実行|使)",
)
# An English call verb counts when it is an order: at the start of a clause, or after one of these.
_IMPERATIVE_BEFORE = _re(
    r"(?:^|[.!?:;,\-–—(\n]|\b(?:please|now|then|first|immediately|always|must|should|you|and|just|also|"
    r"next|finally|simply|to))\s*$"
)

# ------------------------------------------------------------------------------------------
# Exfiltration

_URL = _re(r"https?://[^\s)<>\]\"'`]+(?<![.,;:!?])")
_EMAIL_AT = _re(r"@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b")
_SEND = _rx(
    r"\b(?:send|sends|post|posting|upload|forward|transmit|exfiltrate|e-?mail|mail|share|paste|leak|submit|deliver|"
    r"pipe|push|report|include|attach|append)\w*\b",
    r"发送|发到|上传|提交|转发|传到|贴到|发给",
    r"\b(?:env[ií]a|env[ií]e|enviar|manda|mande|sube|suba|publica|reenv[ií]a|comparte|pega)\w*",
    r"\b(?:envoie|envoyez|envoyer|transmets|transmettez|poste|postez|publie|téléverse|partage|colle)\w*",
    r"\b(?:sende|senden|schicke|schicken|übermittle|poste|teile|lade)\w*",
    r"(?:отправ|пришли|загрузи|перешли|передай|опубликуй)\w*",
    r"送信|送っ|送る|アップロード|転送|投稿",
)
_SECRET = _rx(
    r"\bapi[\s_-]?keys?\b|\bsecrets?\b|\bcredentials?\b|\bpasswords?\b|\bpasswd\b|\bprivate[\s_-]?keys?\b|"
    r"\bssh[\s_-]?keys?\b|\b(?:access|auth|bearer|session)[\s_-]?tokens?\b|\btokens\b|\.env\b|"
    r"\benv(?:ironment)?[\s_-]?var(?:iable)?s\b|\bid_rsa\b|\bid_ed25519\b|~/\.ssh|~/\.aws|\.netrc\b|\.npmrc\b|"
    r"\.pypirc\b|\bkubeconfig\b|\bcookies?\b|\bsystem\s+prompt\b|\bchat\s+history\b|\bconversation\b|"
    r"\buser'?s\s+(?:messages|data|files)\b",
    r"密钥|密码|凭证|令牌|环境变量|系统提示|对话",
    r"\bclaves?\b|\bcontraseñas?\b|\bcredenciales\b|\bvariables\s+de\s+entorno\b|\bconversación\b",
    r"\bclés?\b|\bmots\s+de\s+passe\b|\bidentifiants\b|\bjetons?\b|\bvariables\s+d'environnement\b",
    r"schlüssel|passw[öo]rt|zugangsdaten|umgebungsvariablen|gesprächsverlauf",
    r"ключ|парол|учетн|учётн|токен|переменн\w*\s+окружения|переписк|разговор",
    r"キー|パスワード|認証情報|トークン|環境変数|会話",
)
_NEGATED_SEND = _re(r"\b(?:never|don't|do\s+not|no|not)\s+(?:\w+\s+)?$")
_OUTPUT_OF = _re(r"\b(?:output|result|contents?)\s+of\b|\bfollowed\s+by\b|\bappend(?:ed|ing)?\b")
_SENSITIVE_PATH = _rx(
    r"~/\.ssh/(?![\w.-]*\.pub\b)[\w.-]+",
    r"\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub)",
    r"\.aws/credentials",
    r"~/\.config/gh/hosts\.yml|~/\.netrc|~/\.git-credentials|/etc/shadow|~/\.kube/config|~/\.docker/config\.json",
)
_DISCLOSE = _rx(
    r"\b(?:include|paste|post|print|output|show|reveal|display|dump|echo|cat|send|upload|share|comment|attach|"
    r"copy)\w*\b",
    r"发送|输出|打印|显示|贴|上传|送信|表示|出力|貼り",
    r"\b(?:env[ií]a|muestra|imprime|incluye|pega|sube|envoie|affiche|inclus|colle|sende|zeige|füge)\w*",
    r"(?:отправ|выведи|покажи|вставь|скопируй|копируй)\w*",
    r"\b(?:copia|copiar|copie|copier|copiez|kopiere|kopieren)\b|コピー|复制",
)
_PIPE_OUT = _rx(
    r"\b(?:curl|wget|nc|ncat|netcat|invoke-webrequest|iwr|invoke-restmethod|http|httpie|requests\.(?:post|get|put)|"
    r"fetch|axios(?:\.post)?|urllib\.request)\b"
)
_SECRET_SOURCE = _re(
    r"(?:^|[\s|;&(`$\"'])(?:env|printenv|set)\s*(?:\||\)|$)|\$\((?:env|printenv|cat\s[^)]*)\)|`(?:env|printenv)`|"
    r"\bos\.environ\b(?!\s*(?:\[|\.get))|\bprocess\.env\b(?!\s*[.\[])|@\.env\b|@~/\.|"
    r"\bcat\s+[^\n|;]*(?:\.env\b|id_rsa|id_ed25519|credentials|\.netrc|\.pypirc|\.npmrc|/etc/(?:passwd|shadow))",
    re.MULTILINE,
)
_LINK = _re(r"\]\((https?://[^)\n]{1,600})\)")  # markdown links and images
_IMG = _re(r"<img\b[^>]*?\bsrc\s*=\s*[\"']?(https?://[^\"'\s>]+)")
_PLACEHOLDER = _re(r"\{[^}\s]{0,40}\}|\$\{?\w+|<[^>]{1,80}>|%s|\[[A-Z_]{3,}\]")
_CAPS_VALUE = _re(r"=([A-Z][A-Z_]{2,})(?=&|$|#)")
_REPLACE = _rx(
    r"\b(?:replac|substitut|fill\s+in|insert|put)\w*",
    r"替换|换成|填入|填写",
    r"\b(?:sustitu|reemplaz|remplaç|remplac|ersetz|заме|подстав)\w*",
    r"置き換|置換|差し替え",
)

# ------------------------------------------------------------------------------------------
# Encodings

_DECODE_CUE = _rx(
    r"\b(?:decod|decipher|deciph|un-?hex|unescap|base64-decod|rot-?13|reverse|read\b[^.\n]{0,30}\bbackwards)\w*\b"
    r"[^.\n]{0,100}?\b(?:and|then|,)\s+(?:then\s+)?(?:follow|execute|obey|run|do\s+what|carry\s+out|apply|comply|"
    r"act\s+on|treat\s+it\s+as|perform)",
    r"\b(?:follow|execute|obey|carry\s+out)\b[^.\n]{0,40}\bafter\s+decoding\b",
    r"(?:解码|解密|译码)[^。\n]{0,20}?(?:并|后|然后|再)?(?:执行|遵循|照做|按照|服从)",
    r"\bdecodific\w*[^.\n]{0,80}?\by\s+(?:sigue|ejecuta|obedece|cumple)",
    r"\bdécod\w*[^.\n]{0,80}?\bet\s+(?:exécute|suis|obéis|applique)",
    r"\bdekodier\w*[^.\n]{0,80}?\b(?:aus|befolge|folge|befolgen|ausführen)\b",
    r"(?:расшифру|декодиру|раскодиру)\w*[^.\n]{0,80}?(?:выполни|следуй|исполни)",
    r"デコードして[^。\n]{0,40}(?:従|実行)",
)
# Runs that may be base64 (standard or URL-safe), base32 or hex; each is tried in turn.
# (searched in the text with a space in front, so that a run can start it)
_RUN = _re(r"[^A-Za-z0-9+/_=-]([A-Za-z0-9+/_-]{16,}={0,6})(?![A-Za-z0-9+/_=-])")
_HEX_ESC = _re(r"\\x[0-9A-Fa-f]{2}(?:\\x[0-9A-Fa-f]{2}){5,}")
_PCT = _re(r"%[0-9A-Fa-f]{2}(?:[\w.~-]{0,3}%[0-9A-Fa-f]{2}){5,}")
_ENTITIES = _re(r"&#(?:\d{2,7}|x[0-9A-Fa-f]{2,6});(?:&#(?:\d{2,7}|x[0-9A-Fa-f]{2,6});){3,}")
_UESC = _re(r"\\u[0-9A-Fa-f]{4}(?:\\u[0-9A-Fa-f]{4}){3,}")
_KEYWORDS = ("ignore", "disregard", "instructions", "previous", "system prompt", "reveal", "password", "api key")
_ROT13_HINT = _rx(*(codecs.encode(w, "rot13") for w in _KEYWORDS))
_REVERSED_HINT = _rx(*(w[::-1] for w in _KEYWORDS))

# ------------------------------------------------------------------------------------------
# Invisible characters

_TAGS = _re("[\U000e0000-\U000e007f]+")
_FLAG_TAGS = _re("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,6}\U000e007f")
_BIDI = _re("[\u202a-\u202e\u2066-\u2069]")
_VS_RUN = _re("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
# Dropped before matching (and so never able to split a word in two).
_IGNORABLE = _re(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]"
)


_EMOJI = (
    (0x1F000, 0x1FAFF), (0x2600, 0x27BF), (0x2300, 0x23FF), (0x2B00, 0x2BFF), (0x2190, 0x21FF),
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x2049), (0x2122, 0x2139), (0x3030, 0x303D),
    (0x3297, 0x3299), (0xFE0F, 0xFE0F), (0x20E3, 0x20E3), (0xE0020, 0xE007F),
)  # fmt: skip
_JOINING = (
    (0x0590, 0x08FF), (0x0900, 0x0DFF), (0x0E00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x18AF),
    (0xA8E0, 0xA8FF), (0xFB1D, 0xFDFF), (0xFE70, 0xFEFE),
)  # fmt: skip
_NO_SPACES = ((0x0E00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF))


def _show(s: str, limit: int = 80) -> str:
    """An excerpt on one line, with invisible characters spelled out."""
    out = "".join(
        c if c.isprintable() and not _IGNORABLE.match(c)
        else " " if c.isspace()
        else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF
        else f"\\U{ord(c):08x}"
        for c in s.strip()
    )  # fmt: skip
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


# ------------------------------------------------------------------------------------------
# The scan

# The rules run over whole documents (the others only over a sentence, a comment or a turn).
_LOCATOR_RULES = (
    _IGNORE, _REVOKED, _NO_REFUSAL, _FORGET, _YOU_ARE_NOW, _YOU_ARE_NOW_BARE, _NEW_INSTRUCTIONS, _OVERRIDE,
    _SYSTEM_PROMPT, _CONCEAL,
    _TOKEN, _TOOL_MARKUP, _DESTRUCTIVE_SHELL, _TOOL_CALL_EN, _TOOL_CALL_DIRECTIVE, _PIPE_OUT, _SENSITIVE_PATH,
    _DECODE_CUE, _ROT13_HINT, _REVERSED_HINT, _SECURITY_STRONG, _SECURITY_WEAK, _SEND, _SECRET,
)  # fmt: skip


@functools.cache
def _locator(whole: bool = False) -> _Locator:
    return _Locator(_LOCATOR_RULES, whole)


def _locate(low: str) -> dict[_Rule, list[re.Match[str]]]:
    return _locator(len(low) > 100_000).run(low)


@dataclass(slots=True)
class _Hit:
    name: str
    pos: int  # in the normalised text; -1 for what was found outside it
    excerpt: str  # raw; shown by scan_findings
    severity: Severity = "high"
    via: str = "text"


@dataclass(slots=True)
class _Doc:
    norm: str  # NFKC, invisibles dropped
    low: str  # lower-cased, same length as norm
    mask: bytearray  # region of each character
    found: dict[_Rule, list[re.Match[str]]]  # matches of the whole-document rules
    hidden: list[tuple[int, int, str]] = field(default_factory=list)  # hidden parts: start, end, name
    framed: bool = False  # live prose is about security
    starts: dict = field(default_factory=dict)  # rule -> sorted match starts, for ``within``
    decoded: dict = field(default_factory=dict)  # (decoded text, depth) -> its findings, shared by a scan

    def matches(self, rule: _Rule) -> list[re.Match[str]]:
        return self.found.get(rule, [])

    def within(self, rule: _Rule, a: int, b: int) -> re.Match[str] | None:
        """A match of whole-document ``rule`` starting in ``[a, b)``."""
        key = id(rule)
        starts = self.starts.get(key)
        if starts is None:
            ms = sorted(self.matches(rule), key=lambda m: m.start())
            starts = self.starts[key] = ([m.start() for m in ms], ms)
        i = bisect.bisect_left(starts[0], a)
        return starts[1][i] if i < len(starts[0]) and starts[0][i] < b else None

    def severity(self, pos: int) -> Severity:
        if pos < 0 or not self.framed:
            return "high"
        return "quoted" if self.mask[pos] in (_CODE, _QUOTE) else "high"

    def hit(self, name: str, start: int, end: int) -> _Hit:
        return _Hit(name, start, self.norm[start : min(end, start + 200)], self.severity(start))


# Every character the raw checks and the normalisation care about: one pass finds whether any is there.
_SPECIAL = _re(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]"
)


def _normalise(text: str) -> str:
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        # line by line: nothing composes across a newline, and most lines are already normal
        text = "\n".join(
            line if line.isascii() or unicodedata.is_normalized("NFKC", line) else unicodedata.normalize("NFKC", line)
            for line in text.split("\n")
        )
    if not text.isascii():
        if _SPECIAL.search(text):
            text = _IGNORABLE.sub("", text)
        for a in "’‘ʼ´":
            text = text.replace(a, "'")
    return text


def _lower(s: str) -> str:
    low = s.lower()
    if len(low) == len(s):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in s)  # keep offsets (e.g. "İ")


_FENCE = _re(r"\n[ \t]{0,3}(`{3,}|~{3,})[^\n]*")
_SPAN = _re(r"``(?:[^`]|`(?!`)){1,2000}?``|`[^`\n]{1,2000}`")
_BLOCKQUOTE = _re(r"\n[ \t]{0,3}>[^\n]*")
_QUOTATION = _re(
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


def _mask(low: str) -> tuple[bytearray, list[tuple[int, int, str]]]:
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
        _mark(mask, m.start(), end - 1, _CODE)  # from the fence's line start (text offset - 1 + 1)
        pos = end
    parts = [(m.start(), m.end(), "hidden HTML comment") for m in _COMMENT.finditer(low)]
    parts += [(m.start(), m.end() - 1, "hidden HTML comment") for m in _MD_COMMENT.finditer(text)]
    parts += [(a, b, "hidden HTML element") for a, b in _hidden_elements(low)]
    for a, b, name in sorted(parts):
        if mask[a] == _LIVE:
            _mark(mask, a, b, _HIDDEN)
            hidden.append((a, b, name))
    for m in _SPAN.finditer(low):
        if mask[m.start()] == _LIVE:
            _mark(mask, m.start(), m.end(), _CODE)
    for m in _BLOCKQUOTE.finditer(text):
        if mask[m.start()] == _LIVE:
            _mark(mask, m.start(), m.end() - 1, _QUOTE)
    return mask, hidden


def _mark_quotations(low: str, mask: bytearray) -> None:
    """Text in quotation marks; only needed (so only looked for) in documents about security."""
    for m in _QUOTATION.finditer(low):
        if mask[m.start()] == _LIVE and mask[m.end() - 1] == _LIVE:
            _mark(mask, m.start(), m.end(), _QUOTE)


def _framed(doc: _Doc) -> bool:
    """Whether the live prose is about security (so quotes in it are examples)."""
    score, seen, mask = 0, set(), doc.mask
    for rule, weight in ((_SECURITY_STRONG, 2), (_SECURITY_WEAK, 1)):
        for m in doc.matches(rule):
            word = m.group()
            if mask[m.start()] == _LIVE and word not in seen:
                seen.add(word)
                score += weight
                if score >= 2:
                    return True
    return False


def _line_start(low: str, pos: int, limit: int = 1000) -> int:
    """Start of the line holding ``pos``, looking back at most ``limit`` characters."""
    lo = max(0, pos - limit)
    return max(low.rfind("\n", lo, pos) + 1, lo)


def _line_end(low: str, pos: int, limit: int = 1000) -> int:
    """End of the line holding ``pos``, looking ahead at most ``limit`` characters."""
    hi = min(len(low), pos + limit)
    i = low.find("\n", pos, hi)
    return hi if i < 0 else i


def _sentence(doc: _Doc, start: int, end: int) -> tuple[int, int]:
    """The sentence around ``low[start:end]``: cut at line ends, at ". ", "! ", "? " and "。", and at
    most 300 characters either side."""
    low = doc.low
    lo = _line_start(low, start, 300)
    hi = _line_end(low, end, 300)
    for sep in (". ", "! ", "? ", "。"):
        i = low.rfind(sep, lo, start)
        if i >= 0:
            lo = i + len(sep)
        j = low.find(sep, end, hi)
        if j >= 0:
            hi = j + 1
    return lo, hi


def _phrases(doc: _Doc, hits: list[_Hit]) -> None:
    for name, rule in (
        ("ignore previous instructions", _IGNORE),
        ("ignore previous instructions", _REVOKED),
        ("forget everything", _FORGET),
        ("you are now", _YOU_ARE_NOW),
        ("new instructions", _NEW_INSTRUCTIONS),
        ("override", _OVERRIDE),
        ("override", _NO_REFUSAL),
        ("system prompt", _SYSTEM_PROMPT),
        ("conceal from user", _CONCEAL),
    ):
        hits.extend(doc.hit(name, m.start(), m.end()) for m in doc.matches(rule))
    for m in doc.matches(_YOU_ARE_NOW_BARE):
        if n := _NAME_AFTER.match(doc.norm, m.end()):
            hits.append(doc.hit("you are now", m.start(), n.end()))


def _tokens(doc: _Doc, hits: list[_Hit]) -> None:
    low, mask = doc.low, doc.mask
    found = sorted((m.start(), m.end(), m.group()) for m in doc.matches(_TOKEN) if mask[m.start()] != _CODE)
    for i, (a, b, tok) in enumerate(found):
        if tok == "<s>":
            continue
        j = a - 1
        while j >= 0 and low[j] in " \t>":
            j -= 1
        structural = (
            j < 0
            or low[j] == "\n"
            or _ROLE_AFTER_TOKEN.match(low, b) is not None
            or (i > 0 and not low[found[i - 1][1] : a].strip())
            or (i + 1 < len(found) and not low[b : found[i + 1][0]].strip())
        )
        if structural:
            hits.append(doc.hit(_TOKEN_NAMES.get(tok, "chat template token"), a, b + 60))


def _any_in(sorted_positions: list[int], a: int, b: int) -> bool:
    i = bisect.bisect_left(sorted_positions, a)
    return i < len(sorted_positions) and sorted_positions[i] < b


def _role_turns(doc: _Doc, hits: list[_Hit], strong: list[int]) -> None:
    """Role labels at the start of a line ("System:", "### Assistant", "<system>") followed by orders."""
    low, mask = doc.low, doc.mask
    text = "\n" + low  # offsets one to the right of low's
    for m in _ROLE_LABEL.finditer(text):
        label = m.start()  # = offset in low of the line start
        if mask[label] == _CODE:
            continue
        role = next(g for g in (m.group("hr"), m.group("tr"), m.group("br"), m.group("cr"), m.group("yr")) if g)
        start = m.end() - 1
        nl = _line_end(low, start, 600)
        if not low[start:nl].strip():  # label alone on its line: the content is the next paragraph
            start = nl
            while start < len(low) and low[start] in " \t\n":
                start += 1
        e = _TURN_END.search(low, start, start + 600)
        end = e.start() if e else min(len(low), start + 600)
        if end <= start:
            continue
        privileged = _PRIVILEGED_ROLE.search(role) is not None
        if _any_in(strong, start, end) or (privileged and _DIRECTIVE_WEAK.search(low, start, end)):
            name = "system prompt" if _SYSTEM_PROMPT_ROLE.search(role) else "fake role turn"
            hits.append(doc.hit(name, label, end))


def _hidden_parts(doc: _Doc, hits: list[_Hit], strong: list[int]) -> None:
    """Comments and invisible elements that speak to the model, ask for secrecy or hold an order."""
    low = doc.low
    for a, b, name in doc.hidden:
        if _any_in(strong, a, b) or _COVERT.search(low, a, b) or _AI_ADDRESS.search(low, a, b):
            h = doc.hit(name, a, b)
            h.severity, h.via = "high", name.removeprefix("hidden ")
            hits.append(h)


def _tool_bait(doc: _Doc, hits: list[_Hit]) -> None:
    low, mask = doc.low, doc.mask
    for m in doc.matches(_TOOL_MARKUP):
        a = m.start()
        ends = (mask.find(r, a, a + 400) for r in (_LIVE, _QUOTE, _HIDDEN))
        code_end = min((i for i in ends if i >= 0), default=a + 400)  # the markup, not what follows the code
        if mask[a] != _CODE or _DESTRUCTIVE.search(low, a, code_end):
            hits.append(doc.hit("tool-call bait", a, a + 120))
    hits.extend(doc.hit("tool-call bait", m.start(), m.end()) for m in doc.matches(_DESTRUCTIVE_SHELL))
    for m in doc.matches(_TOOL_CALL_EN):
        before = _line_start(low, m.start(), 80)
        if _IMPERATIVE_BEFORE.search(low, before, m.start()):
            hits.append(doc.hit("tool-call bait", m.start(), m.end()))
    hits.extend(doc.hit("tool-call bait", m.start(), m.end()) for m in doc.matches(_TOOL_CALL_DIRECTIVE))


def _exfiltration(doc: _Doc, hits: list[_Hit]) -> None:
    low, norm = doc.low, doc.norm
    seen: set[int] = set()

    def add(start: int, end: int) -> None:
        a, b = _sentence(doc, start, end)
        if a not in seen:
            seen.add(a)
            hits.append(doc.hit("exfiltration", a, b))
            hits[-1].severity = doc.severity(start)

    # secrets piped to a network client: `env | curl ...`, `curl -d "$(cat ~/.aws/credentials)" ...`
    for m in doc.matches(_PIPE_OUT):
        if _SECRET_SOURCE.search(low, _line_start(low, m.start(), 300), _line_end(low, m.end(), 300)):
            add(m.start(), m.end())
    # an order to send secrets to a URL or an e-mail address
    dests = [m.span() for m in _URL.finditer(low)]
    dests += [m.span() for m in _EMAIL_AT.finditer(low) if m.start() and _is_word(low[m.start() - 1])]
    for ds, de in dests:
        if not doc.within(_SEND, ds - 400, de + 400):
            continue
        a, b = _sentence(doc, ds, de)
        v = doc.within(_SEND, a, b)
        if v and doc.within(_SECRET, a, b) and not _NEGATED_SEND.search(low, max(a, v.start() - 20), v.start()):
            add(ds, de)
    for ds, de in dests:  # "open https://...?env= followed by the output of `printenv`"
        a, b = _sentence(doc, ds, de)
        if _SECRET_SOURCE.search(low, a, b) and _OUTPUT_OF.search(low, a, b):
            add(ds, de)
    # secret files read out
    for m in doc.matches(_SENSITIVE_PATH):
        a, b = _sentence(doc, m.start(), m.end())
        if _DISCLOSE.search(low, a, b):
            add(m.start(), m.end())
    # images and links that carry data out in their URL: a placeholder in the query, or a
    # CAPITALS value that the text says to replace
    told_to_replace: dict[str, bool] = {}

    def replaced(word: str) -> bool:
        """Whether a sentence outside the link says to replace ``word``."""
        if word not in told_to_replace:
            told_to_replace[word] = False
            for w in re.finditer(rf"{re.escape(word)}(?![A-Za-z0-9_])", norm):
                if (w.start() and _is_word(norm[w.start() - 1])) or norm.startswith("=", w.start() - 1):
                    continue  # part of a longer word, or a value in a URL
                a, b = _sentence(doc, w.start(), w.end())
                if _REPLACE.search(low, a, b):
                    told_to_replace[word] = True
                    break
        return told_to_replace[word]

    for m in (*_LINK.finditer(norm), *_IMG.finditer(norm)):
        query = m.group(1).partition("?")[2]
        if query and (_PLACEHOLDER.search(query) or any(replaced(c.group(1)) for c in _CAPS_VALUE.finditer(query))):
            add(m.start(), m.end())


def _try(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except (ValueError, binascii.Error, UnicodeError):
        return None


def _bytes_text(raw: object) -> str | None:
    """``raw`` as text, when it is UTF-8 that reads like words (not a hash, key or image)."""
    if not isinstance(raw, bytes) or len(raw) < 8:
        return None
    try:
        t = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if sum(c.isprintable() or c in "\n\t" for c in t) < 0.95 * len(t):
        return None
    return t if sum(c.isalpha() or c.isspace() for c in t) >= 0.6 * len(t) else None


_HEX_RUN = _re(r"(?:[0-9A-Fa-f]{2})+")
_B32_RUN = _re(r"[A-Z2-7]+=*")
_UPPER, _LOWER_CASE, _B32_DIGIT = _re("[A-Z]"), _re("[a-z]"), _re("[2-7]")


def _run_text(run: str) -> tuple[str, str] | None:
    """A run of base64/base32/hex characters decoded to text, with the encoding's name."""
    if _HEX_RUN.fullmatch(run):
        t = _bytes_text(_try(lambda: bytes.fromhex(run)))
        if t:
            return t, "hex"
    if _B32_RUN.fullmatch(run) and _B32_DIGIT.search(run):
        s = run.rstrip("=")
        t = _bytes_text(_try(lambda: base64.b32decode(s + "=" * (-len(s) % 8))))
        if t:
            return t, "base32"
    if _LOWER_CASE.search(run) and _UPPER.search(run):
        s = run.rstrip("=")
        alt = b"-_" if ("-" in s or "_" in s) else None
        t = _bytes_text(_try(lambda: base64.b64decode(s + "=" * (-len(s) % 4), altchars=alt)))
        if t:
            return t, "base64"
    return None


def _decoded(doc: _Doc, hits: list[_Hit], depth: int) -> None:
    """Orders to decode and follow; encoded runs whose decoded text holds findings."""
    norm, low = doc.norm, doc.low
    hits.extend(doc.hit("encoded instruction", m.start(), m.end()) for m in doc.matches(_DECODE_CUE))
    if depth >= _MAX_DEPTH:
        return

    def rescan(pos: int, decoded: str, via: str) -> None:
        key = (decoded, depth + 1)
        if key not in doc.decoded:
            doc.decoded[key] = [h for h in _scan_clean(decoded, depth + 1, doc.decoded) if h.severity == "high"]
        inner = doc.decoded[key]
        if inner:
            sev = doc.severity(pos)
            hits.append(_Hit("encoded instruction", pos, decoded[:200], sev, via))
            hits.extend(_Hit(h.name, pos, h.excerpt, sev, via) for h in inner)

    for m in _RUN.finditer(" " + norm):
        if got := _run_text(m.group(1)):
            rescan(m.start(1) - 1, *got)
    for rx, via, fn in (
        (_HEX_ESC, "hex", lambda s: _bytes_text(_try(lambda: bytes.fromhex(s.replace("\\x", ""))))),
        (_PCT, "%-escapes", urllib.parse.unquote),
        (_ENTITIES, "HTML entities", html.unescape),
        (_UESC, "\\u escapes", lambda s: s.encode().decode("unicode_escape")),
    ):
        for m in rx.finditer(norm):
            t = _try(lambda m=m, fn=fn: fn(m.group()))
            if isinstance(t, str) and t:
                rescan(m.start(), t, via)
    for hint, via, fn in (
        (_ROT13_HINT, "ROT13", lambda s: codecs.decode(s, "rot13")),
        (_REVERSED_HINT, "reversed text", lambda s: s[::-1]),
    ):
        done: set[int] = set()
        for m in doc.matches(hint):
            ls = _line_start(low, m.start(), 300)
            if ls not in done:
                done.add(ls)
                rescan(ls, fn(norm[ls : _line_end(low, m.end(), 300)]), via)


# Look-alikes: letters spaced out ("i g n o r e"), leetspeak ("1gn0r3"), Cyrillic/Greek letters
# inside Latin words ("ignоre" with a Cyrillic o). Each is looked for from a cheap seed, then
# the lines holding a seed are read again, rewritten.
_SPACED_SEED = _re(r"[ .*_-][a-z][ .*_-]{1,3}[a-z][ .*_-]{1,3}[a-z][ .*_-]{1,3}[a-z](?![a-z])")
_SPACED = _re(r"(?<![a-z])[a-z](?:[ .*_-]{1,3}[a-z](?![a-z])){4,}")  # run on single lines only
_LEET_SEED = _re(r"[013457@$](?<=[a-z].)(?=[a-z])")  # a digit inside a word: "1gn0r3"
_TOKEN_RUN = _re(r"[a-z0-9@$]+")
_LEET = str.maketrans("013457@$", "oieastas")
_MIXED_SEED = _re(r"[\u0370-\u03ff\u0400-\u04ff](?:(?<=[a-z].)|(?=[a-z]))")
_MIXED_WORD = _re(r"\w*(?:[a-z]\w*[\u0370-\u04ff]|[\u0370-\u04ff]\w*[a-z])\w*")
_SEEDS = _re("|".join(rx.source for rx in (_SPACED_SEED, _LEET_SEED, _MIXED_SEED)))
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


def _deobfuscated(low: str) -> str | None:
    """The lines (at most 600 characters around each seed) that read differently with look-alikes
    undone."""
    seeds = [m.start() for m in _SEEDS.finditer(low)]
    windows: list[list[int]] = []
    for pos in seeds:
        a, b = _line_start(low, pos, 300), _line_end(low, pos, 300)
        if windows and a <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], b)
        else:
            windows.append([a, b])
    out = [new for a, b in windows if (new := _rewrite_line(low[a:b]))]
    return "\n".join(out) or None


def _scan_clean(text: str, depth: int, decoded: dict | None = None) -> list[_Hit]:
    """Findings in the visible text (invisible characters are looked for by _scan_raw)."""
    norm = _normalise(text)
    low = _lower(norm)
    mask, hidden = _mask(low)
    doc = _Doc(norm, low, mask, _locate(low), hidden)
    doc.framed = _framed(doc)
    if doc.framed:
        _mark_quotations(low, doc.mask)
    if decoded is not None:
        doc.decoded = decoded
    hits: list[_Hit] = []
    _phrases(doc, hits)
    _tool_bait(doc, hits)
    _exfiltration(doc, hits)
    _decoded(doc, hits, depth)
    strong = sorted(h.pos for h in hits if h.pos >= 0)
    _tokens(doc, hits)
    _role_turns(doc, hits, strong)
    _hidden_parts(doc, hits, strong)
    if depth < _MAX_DEPTH and (plain := _deobfuscated(low)):
        sub = _Doc(plain, plain, bytearray(len(plain)), _locate(plain))
        more: list[_Hit] = []
        _phrases(sub, more)
        _exfiltration(sub, more)
        hits.extend(_Hit(h.name, -1, h.excerpt, "high", "look-alike letters") for h in more)
    return hits


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"


_E, _J, _S = _class(_EMOJI), _class(_JOINING), _class(_NO_SPACES)
# Invisible characters that do no visible job (see the module docstring), in one pass.
_UNEXPLAINED_INVISIBLE = _re(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180e\u2060-\u2064\u3164\uffa0]"
    "|\ufeff(?<=[\\s\\S]\ufeff)"  # a byte-order mark anywhere but at the start
    f"|\u200b(?:(?<!{_S}\u200b)|(?!{_S}))"
    f"|\u200c(?:(?<!{_J}\u200c)|(?!{_J}))"
    f"|\u200d(?:(?<!{_E}\u200d)|(?!{_E}))(?:(?<!{_J}\u200d)|(?!{_J}))"
)


def _scan_raw(text: str) -> list[_Hit]:
    """Invisible characters, and what tag characters and variation selectors smuggle."""
    hits: list[_Hit] = []
    first = None if text.isascii() else _SPECIAL.search(text)
    if first is None:
        return hits
    start = first.start()
    payloads: list[tuple[str, str]] = []
    for m in _TAGS.finditer(text, start):
        if m.start() and text[m.start() - 1] == "\U0001f3f4" and _FLAG_TAGS.fullmatch(m.group()):
            continue  # an emoji subdivision flag, e.g. England's
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0x20 <= ord(c) - 0xE0000 < 0x7F)
        hits.append(_Hit("Unicode tag characters", -1, decoded or _show(m.group()), "high", "tag characters"))
        if decoded.strip():
            payloads.append(("tag characters", decoded))
    if m := _BIDI.search(text, start):
        hits.append(_Hit("bidi control", -1, _show(text[max(0, m.start() - 20) : m.end() + 20])))
    for m in _VS_RUN.finditer(text, start):
        data = bytes((ord(c) - 0xFE00) if ord(c) <= 0xFE0F else (ord(c) - 0xE0100 + 16) for c in m.group())
        decoded = data.decode("utf-8", errors="replace")
        hits.append(_Hit("invisible Unicode", -1, decoded, "high", "variation selectors"))
        payloads.append(("variation selectors", decoded))
    if m := _UNEXPLAINED_INVISIBLE.search(text, max(0, start - 1)):
        hits.append(_Hit("invisible Unicode", -1, _show(text[max(0, m.start() - 20) : m.end() + 20])))
    for via, decoded in payloads:
        hits.extend(_Hit(h.name, -1, h.excerpt, "high", via) for h in _scan_clean(decoded, 1) if h.severity == "high")
    return hits


def _hits(text: str) -> list[_Hit]:
    return _scan_raw(text) + _scan_clean(text, 0)


def scan_findings(text: str) -> list[Finding]:
    """The first finding of each (name, severity, via) in ``text``, in ``NAMES`` order, quoted
    examples after the others."""
    seen: dict[tuple[str, str, str], Finding] = {}
    for h in _hits(text):
        seen.setdefault((h.name, h.severity, h.via), Finding(h.name, _show(h.excerpt), h.severity, h.via))
    return sorted(seen.values(), key=lambda f: (_ORDER[f.name], f.severity != "high"))


def scan(text: str) -> list[str]:
    """Names of the findings in ``text`` that are not quoted examples, in ``NAMES`` order ([] when clean)."""
    return sorted({h.name for h in _hits(text) if h.severity == "high"}, key=_ORDER.__getitem__)


def __getattr__(name: str) -> dict[str, re.Pattern[str]]:
    # ``PATTERNS`` is built on first use: compiling the multilingual rules takes a while, and
    # importing this module should not.
    if name == "PATTERNS":
        globals()["PATTERNS"] = patterns = _patterns()
        return patterns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _patterns() -> dict[str, re.Pattern[str]]:
    """The patterns behind the finding names kept from the first version of this module. Most only
    count when the context rules above agree (a role after <|im_start|>, a comment that speaks to
    the model, ...); the other names have rules of their own."""
    return {
        "ignore previous instructions": _IGNORE.pattern,
        "you are now": _YOU_ARE_NOW.pattern,
        "new instructions": _NEW_INSTRUCTIONS.pattern,
        "system prompt": _SYSTEM_PROMPT.pattern,
        "override": _OVERRIDE.pattern,
        "forget everything": _FORGET.pattern,
        "[INST]": re.compile(r"\[/?inst\]"),
        "<<SYS>>": re.compile(r"<</?sys>>"),
        "</s>": re.compile(r"</s>"),
        "<|im_start|>": re.compile(r"<\|im_(?:start|end)\|>"),
        "hidden HTML comment": _COMMENT.compiled,
    }

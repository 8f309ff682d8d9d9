"""The scan: the rules applied to a text, payloads decoded and scanned again, and the findings
that come out, by the quoted-example policy.

A text is read twice. The raw text, for invisible characters and what tag characters and
variation selectors smuggle (:func:`_scan_raw`). Then the visible text (:func:`_scan_clean`),
normalised and lower-cased: the whole-document rules run together (one :class:`~.matching.Locator`
run), the Markdown regions are marked, and each check turns matches into hits: phrases, chat
template tokens, role turns, hidden parts, tool-call bait, exfiltration, encoded payloads (decoded
and scanned again, at most ``_MAX_DEPTH`` deep), and lines with look-alike letters undone.

The policy: instructions count wherever they are, except as quoted examples (in code or a quote of
a document whose live prose is about security: severity "quoted", left out of :func:`scan`);
structural markers count only where used as structure; invisible characters and hidden parts are
never quoted examples.

:func:`scan` and :func:`scan_findings` are pure functions of the text: safe from any thread (the
only shared state is what is compiled on first use), raising nothing for any string.
"""

from __future__ import annotations

import functools
import re

from ..literal_prefilter import lower_keeping_offsets
from .characters import BIDI, FLAG_TAGS, IGNORABLE, TAGS, UNEXPLAINED_INVISIBLE, VS_RUN, normalise, show
from .cues import AI_ADDRESS, COVERT, DIRECTIVE_WEAK, SECURITY_STRONG, SECURITY_WEAK
from .document import Doc, Hit, any_in, is_word, line_end, line_start, sentence
from .encodings import DECODE_CUE, ESCAPES, LINE_CODES, REVERSED_HINT, ROT13_HINT, RUN, run_text
from .exfiltration import (
    CAPS_VALUE,
    DISCLOSE,
    EMAIL_AT,
    IMG,
    LINK,
    NEGATED_SEND,
    OUTPUT_OF,
    PIPE_OUT,
    PLACEHOLDER,
    REPLACE,
    SECRET,
    SECRET_SOURCE,
    SEND,
    SENSITIVE_PATH,
    URL,
)
from .findings import ORDER, Finding
from .lookalikes import deobfuscated
from .markdown import CODE, HIDDEN, LIVE, QUOTE, about_security, mark_quotations, regions
from .markers import PRIVILEGED_ROLE, ROLE_AFTER_TOKEN, ROLE_LABEL, SYSTEM_PROMPT_ROLE, TOKEN, TOKEN_NAMES, TURN_END
from .matching import Locator, Rule
from .overrides import (
    CONCEAL,
    FORGET,
    IGNORE,
    NAME_AFTER,
    NEW_INSTRUCTIONS,
    NO_REFUSAL,
    OVERRIDE,
    REVOKED,
    SYSTEM_PROMPT,
    YOU_ARE_NOW,
    YOU_ARE_NOW_BARE,
)
from .tool_calls import (
    DESTRUCTIVE,
    DESTRUCTIVE_SHELL,
    IMPERATIVE_BEFORE,
    TOOL_CALL_DIRECTIVE,
    TOOL_CALL_EN,
    TOOL_MARKUP,
)

_MAX_DEPTH = 2  # decoded text is scanned again, and what it decodes to, no further

# The rules run over whole documents (the others only over a sentence, a comment or a turn).
_LOCATOR_RULES = (
    IGNORE, REVOKED, NO_REFUSAL, FORGET, YOU_ARE_NOW, YOU_ARE_NOW_BARE, NEW_INSTRUCTIONS, OVERRIDE,
    SYSTEM_PROMPT, CONCEAL,
    TOKEN, TOOL_MARKUP, DESTRUCTIVE_SHELL, TOOL_CALL_EN, TOOL_CALL_DIRECTIVE, PIPE_OUT, SENSITIVE_PATH,
    DECODE_CUE, ROT13_HINT, REVERSED_HINT, SECURITY_STRONG, SECURITY_WEAK, SEND, SECRET,
)  # fmt: skip


@functools.cache
def _locator(whole: bool = False) -> Locator:
    return Locator(_LOCATOR_RULES, whole)


def _locate(low: str) -> dict[Rule, list[re.Match[str]]]:
    return _locator(len(low) > 100_000).run(low)


def _phrases(doc: Doc, hits: list[Hit]) -> None:
    for name, rule in (
        ("ignore previous instructions", IGNORE),
        ("ignore previous instructions", REVOKED),
        ("forget everything", FORGET),
        ("you are now", YOU_ARE_NOW),
        ("new instructions", NEW_INSTRUCTIONS),
        ("override", OVERRIDE),
        ("override", NO_REFUSAL),
        ("system prompt", SYSTEM_PROMPT),
        ("conceal from user", CONCEAL),
    ):
        hits.extend(doc.hit(name, m.start(), m.end()) for m in doc.matches(rule))
    for m in doc.matches(YOU_ARE_NOW_BARE):
        if n := NAME_AFTER.match(doc.norm, m.end()):
            hits.append(doc.hit("you are now", m.start(), n.end()))


def _tokens(doc: Doc, hits: list[Hit]) -> None:
    low, mask = doc.low, doc.mask
    found = sorted((m.start(), m.end(), m.group()) for m in doc.matches(TOKEN) if mask[m.start()] != CODE)
    for i, (a, b, tok) in enumerate(found):
        if tok == "<s>":
            continue
        j = a - 1
        while j >= 0 and low[j] in " \t>":
            j -= 1
        structural = (
            j < 0
            or low[j] == "\n"
            or ROLE_AFTER_TOKEN.match(low, b) is not None
            or (i > 0 and not low[found[i - 1][1] : a].strip())
            or (i + 1 < len(found) and not low[b : found[i + 1][0]].strip())
        )
        if structural:
            hits.append(doc.hit(TOKEN_NAMES.get(tok, "chat template token"), a, b + 60))


def _role_turns(doc: Doc, hits: list[Hit], strong: list[int]) -> None:
    """Role labels at the start of a line ("System:", "### Assistant", "<system>") followed by orders."""
    low, mask = doc.low, doc.mask
    text = "\n" + low  # offsets one to the right of low's
    for m in ROLE_LABEL.finditer(text):
        label = m.start()  # = offset in low of the line start
        if mask[label] == CODE:
            continue
        role = next(g for g in (m.group("hr"), m.group("tr"), m.group("br"), m.group("cr"), m.group("yr")) if g)
        start = m.end() - 1
        nl = line_end(low, start, 600)
        if not low[start:nl].strip():  # label alone on its line: the content is the next paragraph
            start = nl
            while start < len(low) and low[start] in " \t\n":
                start += 1
        e = TURN_END.search(low, start, start + 600)
        end = e.start() if e else min(len(low), start + 600)
        if end <= start:
            continue
        privileged = PRIVILEGED_ROLE.search(role) is not None
        if any_in(strong, start, end) or (privileged and DIRECTIVE_WEAK.search(low, start, end)):
            name = "system prompt" if SYSTEM_PROMPT_ROLE.search(role) else "fake role turn"
            hits.append(doc.hit(name, label, end))


def _hidden_parts(doc: Doc, hits: list[Hit], strong: list[int]) -> None:
    """Comments and invisible elements that speak to the model, ask for secrecy or hold an order."""
    low = doc.low
    for a, b, name in doc.hidden:
        if any_in(strong, a, b) or COVERT.search(low, a, b) or AI_ADDRESS.search(low, a, b):
            h = doc.hit(name, a, b)
            h.severity, h.via = "high", name.removeprefix("hidden ")
            hits.append(h)


def _tool_bait(doc: Doc, hits: list[Hit]) -> None:
    low, mask = doc.low, doc.mask
    for m in doc.matches(TOOL_MARKUP):
        a = m.start()
        ends = (mask.find(r, a, a + 400) for r in (LIVE, QUOTE, HIDDEN))
        code_end = min((i for i in ends if i >= 0), default=a + 400)  # the markup, not what follows the code
        if mask[a] != CODE or DESTRUCTIVE.search(low, a, code_end):
            hits.append(doc.hit("tool-call bait", a, a + 120))
    hits.extend(doc.hit("tool-call bait", m.start(), m.end()) for m in doc.matches(DESTRUCTIVE_SHELL))
    for m in doc.matches(TOOL_CALL_EN):
        before = line_start(low, m.start(), 80)
        if IMPERATIVE_BEFORE.search(low, before, m.start()):
            hits.append(doc.hit("tool-call bait", m.start(), m.end()))
    hits.extend(doc.hit("tool-call bait", m.start(), m.end()) for m in doc.matches(TOOL_CALL_DIRECTIVE))


def _exfiltration(doc: Doc, hits: list[Hit]) -> None:
    low, norm = doc.low, doc.norm
    seen: set[int] = set()

    def add(start: int, end: int) -> None:
        a, b = sentence(doc, start, end)
        if a not in seen:
            seen.add(a)
            hits.append(doc.hit("exfiltration", a, b))
            hits[-1].severity = doc.severity(start)

    # secrets piped to a network client: `env | curl ...`, `curl -d "$(cat ~/.aws/credentials)" ...`
    for m in doc.matches(PIPE_OUT):
        if SECRET_SOURCE.search(low, line_start(low, m.start(), 300), line_end(low, m.end(), 300)):
            add(m.start(), m.end())
    # an order to send secrets to a URL or an e-mail address
    dests = [m.span() for m in URL.finditer(low)]
    dests += [m.span() for m in EMAIL_AT.finditer(low) if m.start() and is_word(low[m.start() - 1])]
    for ds, de in dests:
        if not doc.within(SEND, ds - 400, de + 400):
            continue
        a, b = sentence(doc, ds, de)
        v = doc.within(SEND, a, b)
        if v and doc.within(SECRET, a, b) and not NEGATED_SEND.search(low, max(a, v.start() - 20), v.start()):
            add(ds, de)
    for ds, de in dests:  # "open https://...?env= followed by the output of `printenv`"
        a, b = sentence(doc, ds, de)
        if SECRET_SOURCE.search(low, a, b) and OUTPUT_OF.search(low, a, b):
            add(ds, de)
    # secret files read out
    for m in doc.matches(SENSITIVE_PATH):
        a, b = sentence(doc, m.start(), m.end())
        if DISCLOSE.search(low, a, b):
            add(m.start(), m.end())
    # images and links that carry data out in their URL: a placeholder in the query, or a
    # CAPITALS value that the text says to replace
    told_to_replace: dict[str, bool] = {}

    def replaced(word: str) -> bool:
        """Whether a sentence outside the link says to replace ``word``."""
        if word not in told_to_replace:
            told_to_replace[word] = False
            for w in re.finditer(rf"{re.escape(word)}(?![A-Za-z0-9_])", norm):
                if (w.start() and is_word(norm[w.start() - 1])) or norm.startswith("=", w.start() - 1):
                    continue  # part of a longer word, or a value in a URL
                a, b = sentence(doc, w.start(), w.end())
                if REPLACE.search(low, a, b):
                    told_to_replace[word] = True
                    break
        return told_to_replace[word]

    for m in (*LINK.finditer(norm), *IMG.finditer(norm)):
        query = m.group(1).partition("?")[2]
        if query and (PLACEHOLDER.search(query) or any(replaced(c.group(1)) for c in CAPS_VALUE.finditer(query))):
            add(m.start(), m.end())


def _decoded(doc: Doc, hits: list[Hit], depth: int) -> None:
    """Orders to decode and follow; encoded runs whose decoded text holds findings."""
    norm, low = doc.norm, doc.low
    hits.extend(doc.hit("encoded instruction", m.start(), m.end()) for m in doc.matches(DECODE_CUE))
    if depth >= _MAX_DEPTH:
        return

    def rescan(pos: int, decoded: str, via: str) -> None:
        key = (decoded, depth + 1)
        if key not in doc.decoded:
            doc.decoded[key] = [h for h in _scan_clean(decoded, depth + 1, doc.decoded) if h.severity == "high"]
        inner = doc.decoded[key]
        if inner:
            sev = doc.severity(pos)
            hits.append(Hit("encoded instruction", pos, decoded[:200], sev, via))
            hits.extend(Hit(h.name, pos, h.excerpt, sev, via) for h in inner)

    for m in RUN.finditer(" " + norm):
        if got := run_text(m.group(1)):
            rescan(m.start(1) - 1, *got)
    for rx, via, decode in ESCAPES:
        for m in rx.finditer(norm):
            if t := decode(m.group()):
                rescan(m.start(), t, via)
    for hint, via, fn in LINE_CODES:
        done: set[int] = set()
        for m in doc.matches(hint):
            ls = line_start(low, m.start(), 300)
            if ls not in done:
                done.add(ls)
                rescan(ls, fn(norm[ls : line_end(low, m.end(), 300)]), via)


def _scan_clean(text: str, depth: int, decoded: dict[tuple[str, int], list[Hit]] | None = None) -> list[Hit]:
    """Findings in the visible text (invisible characters are looked for by _scan_raw)."""
    norm = normalise(text)
    low = lower_keeping_offsets(norm)
    mask, hidden = regions(low)
    doc = Doc(norm, low, mask, _locate(low), hidden)
    doc.framed = about_security(doc.mask, doc.matches(SECURITY_STRONG), doc.matches(SECURITY_WEAK))
    if doc.framed:
        mark_quotations(low, doc.mask)
    if decoded is not None:
        doc.decoded = decoded
    hits: list[Hit] = []
    _phrases(doc, hits)
    _tool_bait(doc, hits)
    _exfiltration(doc, hits)
    _decoded(doc, hits, depth)
    strong = sorted(h.pos for h in hits if h.pos >= 0)
    _tokens(doc, hits)
    _role_turns(doc, hits, strong)
    _hidden_parts(doc, hits, strong)
    if depth < _MAX_DEPTH and (plain := deobfuscated(low)):
        sub = Doc(plain, plain, bytearray(len(plain)), _locate(plain))
        more: list[Hit] = []
        _phrases(sub, more)
        _exfiltration(sub, more)
        hits.extend(Hit(h.name, -1, h.excerpt, "high", "look-alike letters") for h in more)
    return hits


def _scan_raw(text: str) -> list[Hit]:
    """Invisible characters, and what tag characters and variation selectors smuggle."""
    hits: list[Hit] = []
    first = None if text.isascii() else IGNORABLE.search(text)
    if first is None:
        return hits
    start = first.start()
    payloads: list[tuple[str, str]] = []
    for m in TAGS.finditer(text, start):
        if m.start() and text[m.start() - 1] == "\U0001f3f4" and FLAG_TAGS.fullmatch(m.group()):
            continue  # an emoji subdivision flag, e.g. England's
        decoded = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0x20 <= ord(c) - 0xE0000 < 0x7F)
        hits.append(Hit("Unicode tag characters", -1, decoded or show(m.group()), "high", "tag characters"))
        if decoded.strip():
            payloads.append(("tag characters", decoded))
    if m := BIDI.search(text, start):
        hits.append(Hit("bidi control", -1, show(text[max(0, m.start() - 20) : m.end() + 20])))
    for m in VS_RUN.finditer(text, start):
        data = bytes((ord(c) - 0xFE00) if ord(c) <= 0xFE0F else (ord(c) - 0xE0100 + 16) for c in m.group())
        decoded = data.decode("utf-8", errors="replace")
        hits.append(Hit("invisible Unicode", -1, decoded, "high", "variation selectors"))
        payloads.append(("variation selectors", decoded))
    if m := UNEXPLAINED_INVISIBLE.search(text, max(0, start - 1)):
        hits.append(Hit("invisible Unicode", -1, show(text[max(0, m.start() - 20) : m.end() + 20])))
    for via, decoded in payloads:
        hits.extend(Hit(h.name, -1, h.excerpt, "high", via) for h in _scan_clean(decoded, 1) if h.severity == "high")
    return hits


def _hits(text: str) -> list[Hit]:
    return _scan_raw(text) + _scan_clean(text, 0)


def scan_findings(text: str) -> list[Finding]:
    """The first finding of each (name, severity, via) in ``text``, in ``NAMES`` order, quoted
    examples after the others."""
    seen: dict[tuple[str, str, str], Finding] = {}
    for h in _hits(text):
        seen.setdefault((h.name, h.severity, h.via), Finding(h.name, show(h.excerpt), h.severity, h.via))
    return sorted(seen.values(), key=lambda f: (ORDER[f.name], f.severity != "high"))


def scan(text: str) -> list[str]:
    """Names of the findings in ``text`` that are not quoted examples, in ``NAMES`` order ([] when clean)."""
    return sorted({h.name for h in _hits(text) if h.severity == "high"}, key=ORDER.__getitem__)

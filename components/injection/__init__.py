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
  The rules that run over whole documents are run together by a ``Locator`` on the literal
  prefilter: one pass of the regex engine per leading character, then only the alternatives
  that fit are tried. A 2 MB file takes a fraction of a second; everything is compiled on first
  use, not on import.

Modules
  ``detection`` (the scan and the policy), ``document`` (a text being scanned), ``markdown``
  (its regions), ``characters`` (invisible characters, normalisation), ``lookalikes``,
  ``encodings`` (payloads and their decoders), the rules by kind (``overrides``, ``markers``,
  ``tool_calls``, ``exfiltration``, ``cues``), ``matching`` (the engine that runs them),
  ``findings`` (what a scan reports).
"""

from __future__ import annotations

import re

from .detection import scan, scan_findings
from .findings import NAMES, Finding, patterns

__all__ = ["NAMES", "PATTERNS", "Finding", "scan", "scan_findings"]


def __getattr__(name: str) -> dict[str, re.Pattern[str]]:
    # ``PATTERNS`` is built on first use: compiling the multilingual rules takes a while, and
    # importing this package should not.
    if name == "PATTERNS":
        globals()["PATTERNS"] = table = patterns()
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

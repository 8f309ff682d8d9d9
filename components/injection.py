"""Prompt-injection patterns in files the agent did not write (AGENTS.md, USER.md, ...).

Text is NFKC-normalised first, so full-width and compatibility look-alikes match too;
invisible characters are looked for in the raw text, since normalisation keeps most of them.
A hit is not proof of an attack: by default the file is kept and a warning naming the
patterns is put in front of it; a setting blocks the file instead.
"""

from __future__ import annotations

import re
import unicodedata

# name -> pattern (case-insensitive, on NFKC text)
PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(rx, re.IGNORECASE | re.DOTALL)
    for name, rx in {
        "ignore previous instructions": r"\b(?:ignore|disregard|skip)\s+(?:all\s+|any\s+|the\s+)?"
        r"(?:previous|prior|above|earlier|preceding)\s+(?:instructions|rules|directions|prompts?)",
        "you are now": r"\byou\s+are\s+now\b",
        "new instructions": r"\bnew\s+instructions\s*:",
        "system prompt": r"\bsystem\s+prompt\s*:",
        "override": r"\boverrid(?:e|es|ing)\b[^.\n]{0,40}"
        r"\b(?:instructions?|rules|guidelines|safety|system|prompt|restrictions)\b",
        "forget everything": r"\bforget\s+(?:everything|all\s+(?:previous|prior|your)\b)",
        "[INST]": r"\[/?INST\]",
        "<<SYS>>": r"<</?SYS>>",
        "</s>": r"</s>",
        "<|im_start|>": r"<\|im_(?:start|end)\|>",
        "hidden HTML comment": r"<!--.*?-->",
    }.items()
}

# Zero-width characters, bidirectional controls, invisible operators, BOM and tag characters.
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")


def scan(text: str) -> list[str]:
    """Names of the patterns found in ``text``, in a fixed order."""
    found = []
    if INVISIBLE.search(text):
        found.append("invisible Unicode")
    norm = unicodedata.normalize("NFKC", text)
    for name, rx in PATTERNS.items():
        if rx.search(norm):
            found.append(name)
    return found

"""What the injection scanner reports: the :class:`Finding` record, the finding names in the
order they are reported (``NAMES``), and :func:`patterns`, the table behind the package's
``PATTERNS`` (the patterns of the finding names of the scanner's first version).

``Finding`` is an immutable ``msgspec.Struct``: findings can be compared, hashed, and encoded
as they are.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from .markdown import COMMENT
from .overrides import FORGET, IGNORE, NEW_INSTRUCTIONS, OVERRIDE, SYSTEM_PROMPT, YOU_ARE_NOW

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
ORDER = {n: i for i, n in enumerate(NAMES)}


def patterns() -> dict[str, re.Pattern[str]]:
    """The patterns behind the finding names kept from the first version of the scanner. Most only
    count when the context rules agree (a role after <|im_start|>, a comment that speaks to
    the model, ...); the other names have rules of their own."""
    return {
        "ignore previous instructions": IGNORE.pattern,
        "you are now": YOU_ARE_NOW.pattern,
        "new instructions": NEW_INSTRUCTIONS.pattern,
        "system prompt": SYSTEM_PROMPT.pattern,
        "override": OVERRIDE.pattern,
        "forget everything": FORGET.pattern,
        "[INST]": re.compile(r"\[/?inst\]"),
        "<<SYS>>": re.compile(r"<</?sys>>"),
        "</s>": re.compile(r"</s>"),
        "<|im_start|>": re.compile(r"<\|im_(?:start|end)\|>"),
        "hidden HTML comment": COMMENT.compiled,
    }

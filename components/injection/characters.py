"""Characters: the invisible ones (Unicode tag characters, bidi controls, variation selectors,
zero-width and other ignorable characters), the visible jobs that explain a zero-width
character (emoji sequences, scripts that join letters or are written without spaces), the
normalisation the rules read text through, and excerpts that spell invisible characters out.
"""

from __future__ import annotations

import re
import unicodedata

from .matching import Regex

TAGS = Regex("[\U000e0000-\U000e007f]+")
FLAG_TAGS = Regex("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,6}\U000e007f")
BIDI = Regex("[\u202a-\u202e\u2066-\u2069]")
VS_RUN = Regex("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
# Dropped before matching (and so never able to split a word in two); every character the raw
# checks and the normalisation care about, so one search finds whether there is anything to do.
IGNORABLE = Regex(
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


def show(s: str, limit: int = 80) -> str:
    """An excerpt on one line, with invisible characters spelled out."""
    out = "".join(
        c if c.isprintable() and not IGNORABLE.match(c)
        else " " if c.isspace()
        else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF
        else f"\\U{ord(c):08x}"
        for c in s.strip()
    )  # fmt: skip
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def normalise(text: str) -> str:
    """``text`` NFKC-normalised, without the ignorable characters, with typographic apostrophes as
    ``'``."""
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        # line by line: nothing composes across a newline, and most lines are already normal
        text = "\n".join(
            line if line.isascii() or unicodedata.is_normalized("NFKC", line) else unicodedata.normalize("NFKC", line)
            for line in text.split("\n")
        )
    if not text.isascii():
        if IGNORABLE.search(text):
            text = IGNORABLE.sub("", text)
        for a in "’‘ʼ´":
            text = text.replace(a, "'")
    return text


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"


_E, _J, _S = _class(_EMOJI), _class(_JOINING), _class(_NO_SPACES)
# Invisible characters that do no visible job (see the package docstring), in one pass.
UNEXPLAINED_INVISIBLE = Regex(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180e\u2060-\u2064\u3164\uffa0]"
    "|\ufeff(?<=[\\s\\S]\ufeff)"  # a byte-order mark anywhere but at the start
    f"|\u200b(?:(?<!{_S}\u200b)|(?!{_S}))"
    f"|\u200c(?:(?<!{_J}\u200c)|(?!{_J}))"
    f"|\u200d(?:(?<!{_E}\u200d)|(?!{_E}))(?:(?<!{_J}\u200d)|(?!{_J}))"
)

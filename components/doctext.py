"""Docstrings as the model reads them: the first paragraph on one line, or its first sentence."""

from __future__ import annotations

import inspect
import re

_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


def first_paragraph(doc: str | None) -> str | None:
    """The first paragraph of a docstring, whitespace collapsed to single spaces."""
    if not doc:
        return None
    text = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(text.split()) or None


def first_sentence(doc: str | None) -> str | None:
    """The first sentence of a text (all of it when it has no sentence end)."""
    if not doc:
        return None
    text = " ".join(doc.split())
    m = _SENTENCE.match(text)
    return m.group(1) if m else text

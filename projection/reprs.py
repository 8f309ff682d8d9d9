"""Messages written as Python ``repr`` strings: what some instrumentations put in a span when a
message object would not serialize.

OpenInference's LlamaIndex handler JSON-encodes a call's bound arguments with an encoder whose
fallback is ``repr(obj)`` (``openinference/instrumentation/llama_index/_handler.py``:
``_encoder``), so the ``messages`` of a wrapper LLM span arrive as text such as
``ChatMessage(role=<MessageRole.USER: 'user'>, content='Hi', additional_kwargs={})`` (LlamaIndex
before 0.12.3) or ``ChatMessage(role=<MessageRole.USER: 'user'>, additional_kwargs={},
blocks=[TextBlock(block_type='text', text='Hi')])`` (later); smolagents' dataclass messages
read ``ChatMessage(role=<MessageRole.USER: 'user'>, content=[{'type': 'text', 'text': 'Hi'}],
tool_calls=None, ...)``; LangChain's read ``HumanMessage(content='Hi', ...)``.

:func:`repr_message` reads the role and the text out of such a string when its shape is one of
these, and says so by returning None otherwise; the caller keeps the whole string as text then.
Pure functions; string literals are read with :func:`ast.literal_eval`, never evaluated.
"""

from __future__ import annotations

import ast
import re

_PY_STR = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_STR = re.compile(_PY_STR, re.S)
_HEAD = re.compile(r"\s*([A-Za-z_]\w*)\(")
_ROLE = re.compile(r"\s*role=(?:<\w+\.\w+: (" + _PY_STR + r")>|(" + _PY_STR + r"))")
_CONTENT = re.compile(r"\bcontent=")
_TEXT = re.compile(r"\btext=(" + _PY_STR + r")", re.S)
_BLOCKS = re.compile(r"\bblocks=\[")

# LangChain's message classes name their role.
_CLASS_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
}


def repr_message(text: str) -> tuple[str, str] | None:
    """(role, text) of a message written as its ``repr``; None when the shape is not one known.

    The text is the message's content (a string, or the text parts of a list of parts), else
    the text of its ``TextBlock``s. A known shape whose content is empty or not a literal keeps
    the whole string as its text: a message read from a span is never empty.
    """
    head = _HEAD.match(text)
    if head is None or not text.rstrip().endswith(")"):
        return None
    rest = head.end()
    role = _CLASS_ROLES.get(head.group(1))
    m = _ROLE.match(text, rest)
    if m is not None:
        literal = _literal(m.group(1) or m.group(2))
        if isinstance(literal, str) and literal:
            role = literal
        rest = m.end()
    if role is None:
        return None
    return role, _content(text, rest) or text


def _content(text: str, start: int) -> str:
    """The text of ``content=...`` (a string or a list of parts), else of ``blocks=[...]``."""
    m = _CONTENT.search(text, start)
    if m is not None:
        i = m.end()
        end = _literal_end(text, i)
        if end is not None:
            value = _literal(text[i:end])
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return "\n".join(_part_text(p) for p in value if _part_text(p))
    b = _BLOCKS.search(text, start)
    if b is not None:
        texts = [_literal(t.group(1)) for t in _TEXT.finditer(text, b.end())]
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return ""


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        value = part.get("text", part.get("content"))
        return value if isinstance(value, str) else ""
    return ""


def _literal(source: str) -> object:
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _literal_end(text: str, i: int) -> int | None:
    """Where the literal that starts at ``text[i]`` ends (a string, or a bracketed list or dict
    with strings inside); None when no literal starts there."""
    if i >= len(text):
        return None
    first = text[i]
    if first in "'\"":
        m = _STR.match(text, i)
        return m.end() if m else None
    if first not in "[{":
        return None
    depth = 0
    quote = ""
    j = i
    while j < len(text):
        c = text[j]
        if quote:
            if c == "\\":
                j += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None

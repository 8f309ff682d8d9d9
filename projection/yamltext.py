"""YAML scalars and values written by hand, so the call tree's bytes are ours to keep stable.

A generic dumper would do, but it offers no way to memoize a subtree's text and reuse it at a
fixed indentation, and its quoting rules change between versions. Everything written here
parses back with ``yaml.safe_load`` to the value it came from (the tests check this with
generated strings).
"""

from __future__ import annotations

import math
import re
from typing import Any

# Characters pyyaml refuses to read raw, plus line breaks other than "\n".
_NEEDS_ESCAPE = re.compile(
    "[^\x09\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
_PLAIN = re.compile(r"[^\W\d][^\x00-\x1f\x7f:#{}\[\],&*!|>'\"%@`\\?]*", re.UNICODE)
_RESERVED = frozenset(
    w
    for base in ("yes", "no", "true", "false", "on", "off", "null", "y", "n")
    for w in (base, base.capitalize(), base.upper())
)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}


def quoted(text: str) -> str:
    """A double-quoted scalar: always safe, used when plain would be read differently."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    if _NEEDS_ESCAPE.search(out) or "\n" in out or "\t" in out or "\r" in out:
        out = _NEEDS_ESCAPE.sub(_escape_char, out.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r"))
    return f'"{out}"'


def _escape_char(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def is_plain(text: str) -> bool:
    """True when ``text`` can be written unquoted (in block and flow context alike)."""
    return (
        _PLAIN.fullmatch(text) is not None
        and text[-1] != " "
        and text not in _RESERVED
        and _NEEDS_ESCAPE.search(text) is None
    )


def scalar(text: str) -> str:
    """A one-line scalar: plain when safe, else double-quoted."""
    return text if text and is_plain(text) else quoted(text)


def key_value(key: str, value: str, indent: str) -> str:
    """``key: value`` at ``indent``; multi-line text becomes a ``|`` block. Ends with a newline."""
    if "\n" in value:
        block = _block(value, indent)
        if block is not None:
            return f"{indent}{key}: {block}"
    return f"{indent}{key}: {scalar(value)}\n"


def _block(text: str, indent: str) -> str | None:
    """A literal block scalar (header + lines), or None if the text cannot be one."""
    if _NEEDS_ESCAPE.search(text) or "\r" in text or not text.strip():
        return None
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    pad = indent + "  "
    indicator = "2" if body[:1] in (" ", "\n") else ""
    lines = body.split("\n")
    out = [f"|{indicator}{chomp}\n"]
    for line in lines:
        out.append(f"{pad}{line}\n" if line else "\n")
    out.extend("\n" for _ in range(trailing - 1))
    return "".join(out)


def value_lines(key: str, value: Any, indent: str, out: list[str]) -> None:
    """Append ``key: <value>`` for any JSON value, nesting mappings and lists as blocks."""
    if isinstance(value, dict):
        if not value:
            out.append(f"{indent}{key}: {{}}\n")
            return
        out.append(f"{indent}{key}:\n")
        inner = indent + "  "
        for k, v in value.items():
            value_lines(scalar(str(k)), v, inner, out)
    elif isinstance(value, list):
        if not value:
            out.append(f"{indent}{key}: []\n")
            return
        out.append(f"{indent}{key}:\n")
        _list_lines(value, indent + "  ", out)
    elif isinstance(value, str):
        out.append(key_value(key, value, indent))
    else:
        out.append(f"{indent}{key}: {atom(value)}\n")


def _list_lines(items: list[Any], indent: str, out: list[str]) -> None:
    for item in items:
        if isinstance(item, dict) and item:
            first = True
            for k, v in item.items():
                sub: list[str] = []
                value_lines(scalar(str(k)), v, indent + "  ", sub)
                if first:
                    sub[0] = f"{indent}- " + sub[0][len(indent) + 2 :]
                    first = False
                out.extend(sub)
        elif isinstance(item, list) and item:
            out.append(f"{indent}-\n")
            _list_lines(item, indent + "  ", out)
        elif isinstance(item, str):
            line = key_value("", item, indent)  # "{indent}: value"
            out.append(f"{indent}-{line[len(indent) + 1 :]}")
        elif isinstance(item, dict):
            out.append(f"{indent}- {{}}\n")
        elif isinstance(item, list):
            out.append(f"{indent}- []\n")
        else:
            out.append(f"{indent}- {atom(item)}\n")


def atom(value: Any) -> str:
    """null, booleans and numbers as YAML reads them back."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text:  # pyyaml needs a dot in the mantissa: 1e+20 -> 1.0e+20
            mant, exp = text.split("e")
            text = f"{mant}.0e{exp}"
        return text
    if isinstance(value, int):
        return str(value)
    return scalar(str(value))

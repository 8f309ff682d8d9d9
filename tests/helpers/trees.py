"""Reading a rendered call tree in tests: as data, by function, and its ``# you are here`` line."""

from __future__ import annotations

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same rules, faster


def parse(text: str):
    """The rendered tree as data (asserting it is valid YAML on the way)."""
    return yaml.load(text, Loader=_Loader) if text else []


def find(items, function):
    """All nodes named ``function`` in a parsed tree, depth first."""
    out = []
    for item in items or []:
        if item.get("function") == function:
            out.append(item)
        out.extend(find(item.get("children"), function))
    return out


def here_line(text: str) -> str:
    lines = [line for line in text.splitlines() if "# you are here" in line]
    assert len(lines) == 1, text
    return lines[0]

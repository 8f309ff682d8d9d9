"""The prompt-cache rules table (``cache_rules.yaml``): loading it, reading a per-model value,
and the one rule the wire formats read from it: which OpenAI models cache at the breakpoints a
request marks (GPT-5.6 and later) rather than by token prefix.

The simulator (``callctx.components.cache``) reads the whole table; the OpenAI wire reads only
:func:`breakpoint_model`, always from the shipped table (a ``--rules`` copy changes what is
simulated, never what is sent).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


def load_rules(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The rules table: the shipped ``cache_rules.yaml``, or your own file."""
    if path is None:
        text = (resources.files(__package__) / "cache_rules.yaml").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    rules = yaml.safe_load(text)
    if not isinstance(rules, dict):
        raise ValueError("cache rules: expected a mapping of provider -> rules")
    return rules


@functools.cache
def shipped() -> dict[str, dict[str, Any]]:
    """The shipped table, read once (treat it as read-only)."""
    return load_rules()


def known_model(value: Any, model: str) -> bool:
    """Does a per-model rule name ``model`` (by prefix), rather than leave it to ``default``?"""
    return not isinstance(value, Mapping) or any(k != "default" and model.startswith(k) for k in value)


def by_model(value: Any, model: str) -> Any:
    """A rule value, or the entry of a ``{model prefix: value}`` map for ``model`` (longest prefix wins)."""
    if not isinstance(value, Mapping):
        return value
    best = None
    for prefix in value:
        if prefix != "default" and model.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return value[best] if best is not None else value.get("default")


_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?(?![\d.])")


def _version(model: str) -> tuple[int, int] | None:
    """``gpt-5.6-sol`` -> (5, 6), ``gpt-6-luna`` -> (6, 0); None for a name that is not
    ``gpt-<major>[.<minor>]…`` (``o3``, ``chatgpt-4o-latest``, a deployment's own name)."""
    m = _VERSION.match(model)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def breakpoint_model(model: str, row: Mapping[str, Any] | None = None) -> bool:
    """Does ``model`` cache at breakpoints, by the ``breakpoint_from`` rule of ``row`` (default:
    the shipped ``openai`` row)? A ``gpt-<major>.<minor>`` name at or after that version does;
    any other name does not (it gets automatic prefix caching, and no breakpoint markers)."""
    r = shipped().get("openai", {}) if row is None else row
    since = _version(str(r.get("breakpoint_from", "")))
    have = _version(model)
    return since is not None and have is not None and have >= since


__all__ = ["breakpoint_model", "by_model", "known_model", "load_rules", "shipped"]

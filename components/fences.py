"""Our own block tags (``<workspace>``, ``<memory-context>``, ``<call_tree>``...) made inert
inside untrusted text, so a file or a recalled note cannot close the fence it sits in."""

from __future__ import annotations

import re

_FENCES = re.compile(r"<(/?)(workspace|file|user_profile|pi_shield|memory|memory-context|call_tree|situation)\b", re.I)


def neutralize_fences(text: str) -> str:
    """Make our own block tags inert inside untrusted text, so it cannot close its fence."""
    return _FENCES.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}", text)

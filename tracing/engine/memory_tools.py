"""The six memory tools: what the model calls to browse and change its memory.

``memory_tools(backend)`` returns them as :class:`~callctx.engine.tools.Tool` objects over a memory
that implements :class:`~callctx.components.memory_store.MemoryTools` (``FileMemory`` does).
Each runs in an ``execute_tool {name}`` span whose attributes carry its arguments and its
result, so every write, edit and deletion is recorded in the trace. A refused call
(``MemoryAccessError`` for a path outside the memory folder, ``ValueError`` for an oversized
text or an ambiguous edit, ``FileNotFoundError``) raises, and the runtime reports it to the
model as an error result; invalid arguments are refused before the backend is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from callctx.components.inputs import ToolSpec
from callctx.components.memory_store import MAX_NOTE_CHARS, MAX_SEARCH_RESULTS, MEMORY_TOOLS, MemoryTools
from callctx.engine.tools import Tool

MEMORY_TOOL_NAMES: tuple[str, ...] = MEMORY_TOOLS
MAX_LIST_LINES = 500  # paths shown by one memory_list call

_LAYOUT = (
    "Memory is Markdown files in one folder: core.md (the resident summary), notes/<topic>.md and "
    "projects/<name>.md. Paths are relative to that folder and end in .md."
)


class MemoryTool(Tool):
    """A memory tool. Hashable (by name and function), unlike a plain ``Tool`` whose schema
    (a dict) makes it unhashable: ``Runtime.exec`` dedups the tools it is given in a set."""

    def __hash__(self) -> int:
        return hash((self.spec.name, self.fn))


class _Search(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: str
    limit: int = 5


class _Path(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    path: str


class _List(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    prefix: str = ""


class _Write(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    path: str
    text: str


class _Edit(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    path: str
    old: str
    new: str


_PATH = {"type": "string", "description": "Relative path of a memory file ending in .md, e.g. notes/tea.md."}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def memory_tools(backend: MemoryTools) -> list[MemoryTool]:
    """The six memory tools over ``backend``, in ``MEMORY_TOOL_NAMES`` order."""
    if not isinstance(backend, MemoryTools):
        raise TypeError(
            f"{type(backend).__name__} has no list/read/search/write/edit/forget: it cannot back the memory tools"
        )

    def search(query: str, limit: int = 5) -> str:
        hits = backend.search(query, limit)
        if not hits:
            return f"no memory matches {query!r}"
        return "\n".join(f"- {h}" for h in hits)

    def read(path: str) -> str:
        text = backend.read(path)
        if not text.strip():
            return f"({path} is empty)"
        if len(text) > MAX_NOTE_CHARS:
            return text[:MAX_NOTE_CHARS] + f"\n[… {path} cut at {MAX_NOTE_CHARS} of {len(text)} characters]"
        return text

    def list_(prefix: str = "") -> str:
        paths = backend.list(prefix)
        if not paths:
            return f"no memory files under {prefix!r}" if prefix else "no memory files yet"
        shown = paths[:MAX_LIST_LINES]
        more = len(paths) - len(shown)
        return "\n".join(shown) + (f"\n[… {more} more; narrow with a prefix]" if more > 0 else "")

    defs: list[tuple[str, str, dict[str, Any], type[msgspec.Struct], Callable[..., Any]]] = [
        (
            "memory_search",
            f"Search all of memory for paragraphs sharing words with a query; each hit names its file. {_LAYOUT}",
            _object(
                {
                    "query": {"type": "string", "description": "Words to look for (3+ letters count)."},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_SEARCH_RESULTS,
                        "default": 5,
                        "description": "Most hits to return.",
                    },
                },
                ["query"],
            ),
            _Search,
            search,
        ),
        (
            "memory_read",
            f"Read one memory file whole. {_LAYOUT}",
            _object({"path": _PATH}, ["path"]),
            _Path,
            read,
        ),
        (
            "memory_list",
            f"List the memory files, optionally under a folder such as notes/. {_LAYOUT}",
            _object(
                {"prefix": {"type": "string", "default": "", "description": "Folder or path start, e.g. notes/."}},
                [],
            ),
            _List,
            list_,
        ),
        (
            "memory_write",
            f"Create or replace a memory file with the given text (at most {MAX_NOTE_CHARS} characters). "
            f"Prefer memory_edit to change part of an existing file. {_LAYOUT}",
            _object(
                {"path": _PATH, "text": {"type": "string", "description": "The file's whole new text."}},
                ["path", "text"],
            ),
            _Write,
            backend.write,
        ),
        (
            "memory_edit",
            "Replace exactly one occurrence of a text in a memory file. Fails, changing nothing, when the text "
            f"is absent or occurs more than once (include more context to make it unique). {_LAYOUT}",
            _object(
                {
                    "path": _PATH,
                    "old": {"type": "string", "description": "The exact text to replace; must occur once."},
                    "new": {"type": "string", "description": "The text to put in its place."},
                },
                ["path", "old", "new"],
            ),
            _Edit,
            backend.edit,
        ),
        (
            "memory_forget",
            f"Delete a memory file that is wrong or no longer wanted (core.md cannot be deleted; write it "
            f"instead). {_LAYOUT}",
            _object({"path": _PATH}, ["path"]),
            _Path,
            backend.forget,
        ),
    ]
    return [MemoryTool(ToolSpec(name, text, params), fn, args) for name, text, params, args, fn in defs]

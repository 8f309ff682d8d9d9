"""Python functions as tools: a JSON schema from the signature, a call from the model's
arguments.

Plain functions run inside an ``execute_tool`` span, which the call tree folds away. An
``@agentic`` function used as a tool makes its own ``invoke_agent`` span under it, so it
enters the tree like any other call.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from callctx.components.doctext import first_paragraph
from callctx.components.inputs import ToolSpec

_P = inspect.Parameter


@dataclass(frozen=True)
class Tool:
    """A tool the model may call: its schema, and what runs it.

    ``args`` validates the model's arguments against a Python signature first; None passes
    them as given (a tool whose server checks them itself, an MCP tool say): then ``fn``
    receives the arguments as one dict."""

    spec: ToolSpec
    fn: Callable[..., Any]
    args: type[msgspec.Struct] | None
    agentic: str | None = None  # the function name in the tree, for @agentic tools

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def is_async(self) -> bool:
        """Its call returns an awaitable (an ``async def`` function)."""
        return inspect.iscoroutinefunction(self.fn)

    def call(self, arguments: dict[str, Any]) -> Any:
        """Validate the model's arguments against the signature, then call."""
        if self.args is None:
            return self.fn(arguments)
        bound = msgspec.convert(arguments, self.args, strict=False)
        return self.fn(**{f: getattr(bound, f) for f in self.args.__struct_fields__})


def tool(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool:
    """Describe ``fn`` as a tool (parameters from its signature and type hints)."""
    spec = getattr(fn, "__callctx__", None) or getattr(getattr(fn, "__func__", None), "__callctx__", None)
    tool_name = name or (spec.name if spec is not None else fn.__name__)
    sig = inspect.signature(fn)
    try:
        hints = inspect.get_annotations(getattr(fn, "__wrapped__", fn), eval_str=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to "any"
        hints = {}
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls") or p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            continue
        hint = hints.get(p.name, Any)
        fields.append((p.name, hint) if p.default is _P.empty else (p.name, hint, p.default))
    args = msgspec.defstruct(f"{tool_name}_args", fields, kw_only=True)
    (_ref,), components = msgspec.json.schema_components([args], ref_template="#/$defs/{name}")
    params = dict(components.pop(args.__name__))
    params.pop("title", None)
    if components:
        params["$defs"] = components
    params.setdefault("properties", {})
    text = description or first_paragraph(inspect.getdoc(fn)) or ""
    return Tool(ToolSpec(tool_name, text, params), fn, args, spec.name if spec else None)


_BUILT_MAX = 1024  # functions whose description is kept (the least recently offered leave first)
_built: OrderedDict[int, Tool] = OrderedDict()  # id(fn) -> its Tool (which holds fn: the id stays its own)
_built_lock = threading.Lock()


def _tool_of(fn: Callable[..., Any]) -> Tool:
    """``tool(fn)``, described once per function object while it is among the last
    :data:`_BUILT_MAX` offered (a ``Tool`` is immutable)."""
    key = id(fn)
    with _built_lock:
        found = _built.get(key)
        if found is not None and found.fn is fn:
            _built.move_to_end(key)
            return found
    made = tool(fn)
    with _built_lock:
        _built[key] = made
        while len(_built) > _BUILT_MAX:
            _built.popitem(last=False)
    return made


def as_tools(items: Iterable[Callable[..., Any] | Tool] | None, *, exclude: str | None = None) -> list[Tool]:
    """Tools from functions (or ready ``Tool``s), never offering the call ``exclude`` itself.
    Each function is described once (its signature, hints and docstring as at its first use)."""
    out: list[Tool] = []
    for item in items or ():
        t = item if isinstance(item, Tool) else _tool_of(item)
        if exclude is not None and t.agentic == exclude:
            continue  # an agentic function is never offered to itself: re-entering would recurse forever
        out.append(t)
    return out


def result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)

"""The scripted model: offline and deterministic, the default.

Answers are keyed by the function the call is made from; each key holds one answer or a
list consumed in order (the last one repeats). An answer is text, any JSON value (sent as
JSON text), a callable ``(request) -> answer``, or a request for tools:
``{"tool_calls": [{"name": "search", "arguments": {...}}]}``. The whole script can also be a
callable ``(function, request) -> answer`` or a JSON / YAML file of the mapping.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from callctx.components import tokens
from callctx.components.wire.exchange import ToolCall
from callctx.components.wire.params import Params

from .base import AsyncModel, AsyncStreamingModel, ModelRequest, Reply, StreamingModel, Usage

Script = Mapping[str, Any] | Callable[[str | None, ModelRequest], Any] | str | os.PathLike[str]


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """An answer asking for one tool call (use a list of these under ``tool_calls`` for several)."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


class ScriptedModel(StreamingModel, AsyncModel, AsyncStreamingModel):
    """Answers from a script: complete, stream, and both on an event loop. Threading: one
    model serves every thread (the answers of a list are taken in turn under a lock)."""

    provider = "scripted"

    def __init__(self, script: Script | None = None, *, model: str = "scripted", wire: str = "anthropic"):
        if isinstance(script, (str, os.PathLike)):
            script = _load(Path(script))
        self.script = script
        self.wire = wire
        self.params = Params(model=model)
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()
        self._ids = 0

    def complete(self, request: ModelRequest) -> Reply:
        answer = self._answer(request)
        if callable(answer):
            answer = answer(request)
        usage_in = sum(s.tokens for s in request.context.segments)
        if isinstance(answer, Mapping) and set(answer) == {"tool_calls"}:
            calls = [self._call(c) for c in answer["tool_calls"]]
            used = Usage(input=usage_in, output=8 * len(calls), cache_read=0, cache_write=0)
            return Reply(None, calls, used, self.params.model, "tool_use")
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        out = tokens.counter(request.context.encoding).count(text)
        used = Usage(input=usage_in, output=out, cache_read=0, cache_write=0)
        return Reply(text, [], used, self.params.model, "end_turn")

    async def acomplete(self, request: ModelRequest) -> Reply:
        return self.complete(request)

    def stream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        """The reply, its text delivered a word at a time as it would stream."""
        reply = self.complete(request)
        for piece in _pieces(reply.text or ""):
            on_text(piece)
        return reply

    async def astream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        reply = self.complete(request)
        for piece in _pieces(reply.text or ""):
            done = on_text(piece)
            if inspect.isawaitable(done):
                await done
        return reply

    def _answer(self, request: ModelRequest) -> Any:
        fn = request.function
        if self.script is None:
            return f"(scripted reply for {fn or 'the conversation'})"
        if callable(self.script) and not isinstance(self.script, Mapping):
            return self.script(fn, request)
        key = fn if fn in self.script else "*"
        if key not in self.script:
            return f"(scripted reply for {fn or 'the conversation'})"
        answers = self.script[key]
        if not isinstance(answers, list):
            return answers
        with self._lock:
            i = self._used.get(key, 0)
            self._used[key] = i + 1
        return answers[min(i, len(answers) - 1)] if answers else ""

    def _call(self, spec: Mapping[str, Any]) -> ToolCall:
        with self._lock:
            self._ids += 1
            n = self._ids
        return ToolCall(id=f"call_{n}", name=spec["name"], arguments=dict(spec.get("arguments") or {}))


def _pieces(text: str) -> list[str]:
    """A text in the pieces a stream would bring: words with the spaces after them."""
    return re.findall(r"\S+\s*|\s+", text)


def _load(path: Path) -> Mapping[str, Any]:
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: a script maps function names to answers")
    return data

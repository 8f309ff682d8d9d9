"""Official provider SDKs against a capturing transport (no network), and strict validation
of request dicts against the SDKs' own parameter types."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

httpx2 = pytest.importorskip("httpx2")
from pydantic import ConfigDict, TypeAdapter  # noqa: E402

OPENAI_TEXT = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello!"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12,
              "prompt_tokens_details": {"cached_tokens": 4}},
}  # fmt: skip


def openai_tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }  # fmt: skip


RESPONSES_TEXT = {
    "id": "resp_1", "object": "response", "created_at": 1700000000, "model": "gpt-4o-mini", "status": "completed",
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Hello!", "annotations": []}]}],
    "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
              "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
              "output_tokens_details": {"reasoning_tokens": 0}},
}  # fmt: skip

ANTHROPIC_TEXT = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 100,
              "cache_read_input_tokens": 200},
}  # fmt: skip


def anthropic_tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 300},
    }  # fmt: skip


GEMINI_TEXT = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello!"}]}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12,
                      "cachedContentTokenCount": 4},
    "modelVersion": "gemini-2.5-flash",
}  # fmt: skip


class Capture:
    """A transport that records each request and answers from a queue of bodies."""

    def __init__(self, *replies: dict[str, Any] | tuple[int, dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[Any] = []

    def handler(self, request: Any) -> Any:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        status, body = reply if isinstance(reply, tuple) else (200, reply)
        return httpx2.Response(status, json=body)

    def client(self) -> Any:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def openai_client(capture: Capture) -> Any:
    import openai

    return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=capture.client())


def anthropic_client(capture: Capture) -> Any:
    import anthropic

    return anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=capture.client())


def gemini_client(capture: Capture) -> Any:
    from google import genai
    from google.genai import types

    return genai.Client(api_key="test-key", http_options=types.HttpOptions(httpx_client=capture.client()))


# ---- strict validation against the SDK parameter types ----------------------------------------
def _materialize(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _materialize(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_materialize(v) for v in x]
    if isinstance(x, Iterator):  # pydantic validates Iterable[...] fields lazily
        return [_materialize(v) for v in x]
    return x


def strict(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tuple[tp], config=ConfigDict(extra="forbid"))


def validate(adapter: TypeAdapter[Any], value: Any) -> Any:
    return _materialize(adapter.validate_python((value,)))[0]

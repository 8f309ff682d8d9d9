"""The tool loop after the turn, provider-neutral: what the model said and what the tools
returned. Recorded with each model call so the whole request can be rebuilt."""

from __future__ import annotations

from typing import Any

import msgspec


class ToolCall(msgspec.Struct, frozen=True):
    id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class AssistantTurn(msgspec.Struct, tag="assistant", frozen=True):
    """The model's reply: text and/or tool calls."""

    text: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)


class ToolResult(msgspec.Struct, frozen=True):
    id: str
    name: str
    content: str
    is_error: bool = False


class ToolResults(msgspec.Struct, tag="tool_results", frozen=True):
    results: list[ToolResult]


class UserNote(msgspec.Struct, tag="user", frozen=True):
    """A message from the runtime to the model after its reply (e.g. the output did not validate)."""

    text: str


Exchange = AssistantTurn | ToolResults | UserNote

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(list[Exchange])


def encode(exchanges: list[Exchange]) -> str:
    return _encoder.encode(exchanges).decode()


def decode(text: str) -> list[Exchange]:
    return _decoder.decode(text)

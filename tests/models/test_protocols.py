"""The model protocols: each client is an instance of exactly the protocols it implements, a
model of another library's making is recognised by its methods alone, and the engine streams
and awaits by what ``isinstance`` says."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from callctx import agentic, setup
from callctx.components.wire.params import Params
from callctx.models import (
    AsyncModel,
    AsyncStreamingModel,
    Model,
    ModelRequest,
    Reply,
    ScriptedModel,
    StreamingModel,
    Usage,
)
from callctx.models.anthropic import AnthropicMessages
from callctx.models.gemini import Gemini
from callctx.models.openai import OpenAIChat, OpenAIResponses

PROTOCOLS = (Model, StreamingModel, AsyncModel, AsyncStreamingModel)
SDK_CLIENTS = (AnthropicMessages, OpenAIChat, OpenAIResponses, Gemini)


@pytest.mark.parametrize("cls", SDK_CLIENTS, ids=lambda c: c.__name__)
def test_the_sdk_clients_complete_stream_and_await_but_do_not_stream_on_a_loop(cls):
    model = cls("some-model", client=object())
    assert [isinstance(model, p) for p in PROTOCOLS] == [True, True, True, False]
    assert {StreamingModel, AsyncModel} <= set(cls.__mro__)  # stated among its bases


def test_the_scripted_model_implements_every_protocol():
    model = ScriptedModel()
    assert all(isinstance(model, p) for p in PROTOCOLS)
    assert set(PROTOCOLS) <= set(ScriptedModel.__mro__)


class _Plain:
    """A client of someone else's making: complete only, no base class of ours."""

    wire = "anthropic"
    provider = "plain"

    def __init__(self) -> None:
        self.params = Params(model="plain")

    def complete(self, request: ModelRequest) -> Reply:
        return Reply("one two three", usage=Usage(input=1, output=3), model="plain")


class _Streams(_Plain):
    def stream(self, request: ModelRequest, on_text: Any) -> Reply:
        for piece in ("one ", "two ", "three"):
            on_text(piece)
        return self.complete(request)


class _AwaitsStreams(_Plain):
    async def astream(self, request: ModelRequest, on_text: Any) -> Reply:
        for piece in ("one", " two", " three"):
            done = on_text(piece)
            if done is not None:
                await done
        return self.complete(request)


def test_a_foreign_model_is_recognised_by_its_methods():
    assert [isinstance(_Plain(), p) for p in PROTOCOLS] == [True, False, False, False]
    assert [isinstance(_Streams(), p) for p in PROTOCOLS] == [True, True, False, False]
    assert [isinstance(_AwaitsStreams(), p) for p in PROTOCOLS] == [True, False, False, True]
    incomplete = _Streams()
    del incomplete.params  # not a Model: not a streaming one either
    assert not isinstance(incomplete, Model) and not isinstance(incomplete, StreamingModel)


@pytest.mark.parametrize(
    ("model", "pieces"),
    [(_Plain(), ["one two three"]), (_Streams(), ["one ", "two ", "three"]), (_AwaitsStreams(), ["one two three"])],
    ids=["plain", "streams", "streams-on-a-loop"],
)
def test_exec_streams_through_the_protocol_the_model_implements(tmp_path, model, pieces):
    rt = setup(tmp_path / "e.jsonl", model=model)
    got: list[str] = []

    @agentic
    def explain() -> str:
        return rt.exec("Explain.", stream=got.append)

    try:
        assert explain() == "one two three"
    finally:
        rt.close()
    assert got == pieces  # astream is for aexec: exec delivers that model's whole text at once


@pytest.mark.parametrize(
    ("model", "pieces"),
    [
        (_Plain(), ["one two three"]),
        (_Streams(), ["one ", "two ", "three"]),
        (_AwaitsStreams(), ["one", " two", " three"]),
    ],
    ids=["plain", "streams-in-a-thread", "streams-on-the-loop"],
)
def test_aexec_streams_through_the_protocol_the_model_implements(tmp_path, model, pieces):
    rt = setup(tmp_path / "e.jsonl", model=model)
    got: list[str] = []

    async def collect(text: str) -> None:
        got.append(text)

    @agentic
    async def explain() -> str:
        return await rt.aexec("Explain.", stream=collect)

    try:
        assert asyncio.run(explain()) == "one two three"
    finally:
        rt.close()
    assert got == pieces

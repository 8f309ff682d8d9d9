"""Model clients: the offline scripted model (the default) and the providers' official SDKs."""

from __future__ import annotations

from typing import Any

from .base import AsyncModel, AsyncStreamingModel, Model, ModelError, ModelRequest, Reply, StreamingModel, Usage
from .scripted import ScriptedModel, tool_call

PROVIDERS = ("scripted", "openai", "openai-responses", "anthropic", "gemini")


def resolve(spec: str | Model | None, **options: Any) -> Model:
    """A model from ``provider:model`` (``openai:gpt-4o``, ``openai-responses:gpt-4o``,
    ``anthropic:claude-sonnet-4-5``, ``gemini:gemini-2.5-flash``, ``scripted``)."""
    if spec is None:
        return ScriptedModel()
    if not isinstance(spec, str):
        return spec
    provider, _, name = spec.partition(":")
    if provider == "scripted":
        return ScriptedModel(model=name or "scripted", **options)
    if not name:
        raise ValueError(f"model spec {spec!r} needs a model name: provider:model")
    if provider == "openai":
        from .openai import OpenAIChat

        return OpenAIChat(name, **options)
    if provider == "openai-responses":
        from .openai import OpenAIResponses

        return OpenAIResponses(name, **options)
    if provider == "anthropic":
        from .anthropic import AnthropicMessages

        return AnthropicMessages(name, **options)
    if provider in ("gemini", "google"):
        from .gemini import Gemini

        return Gemini(name, **options)
    raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")


__all__ = [
    "AsyncModel",
    "AsyncStreamingModel",
    "Model",
    "ModelError",
    "ModelRequest",
    "Reply",
    "ScriptedModel",
    "StreamingModel",
    "Usage",
    "resolve",
    "tool_call",
]

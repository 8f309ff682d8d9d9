"""Model clients: the offline scripted model (the default) and the providers' official SDKs.

Which client a ``provider:model`` spec names is the provider table's
(``callctx.components.providers``). The clients are importable from here and from
``callctx``: :class:`OpenAIChat`, :class:`OpenAIResponses`, :class:`AnthropicMessages`,
:class:`Gemini`. Each imports its SDK only when it builds its client, so an SDK that is not
installed costs nothing until it is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from callctx.components import providers

from .anthropic import AnthropicMessages
from .base import AsyncModel, AsyncStreamingModel, Model, ModelError, ModelRequest, Reply, StreamingModel, Usage
from .gemini import Gemini
from .openai import OpenAIChat, OpenAIResponses
from .scripted import ScriptedModel, tool_call

PROVIDERS = providers.NAMES


def client_class(provider: providers.Provider) -> type[Model]:
    """The client class a provider's row names (its module imported on first use)."""
    module, _, name = provider.client.partition(":")
    return getattr(importlib.import_module(module), name)


def resolve(spec: str | Model | None, **options: Any) -> Model:
    """A model from ``provider:model`` (``openai:gpt-4o``, ``openai-responses:gpt-4o``,
    ``anthropic:claude-sonnet-4-5``, ``gemini:gemini-2.5-flash``, ``scripted``); any name or
    alias of the provider table's. ``ValueError`` for an unknown provider or a missing model."""
    if spec is None:
        return ScriptedModel()
    if not isinstance(spec, str):
        return spec
    name, _, model = spec.partition(":")
    try:
        provider = providers.named(name)
    except KeyError:
        raise ValueError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}") from None
    cls: Any = client_class(provider)
    if provider.offline:
        return cls(model=model, **options) if model else cls(**options)
    if not model:
        raise ValueError(f"model spec {spec!r} needs a model name: provider:model")
    return cls(model, **options)


__all__ = [
    "AnthropicMessages",
    "AsyncModel",
    "AsyncStreamingModel",
    "Gemini",
    "Model",
    "ModelError",
    "ModelRequest",
    "OpenAIChat",
    "OpenAIResponses",
    "Reply",
    "ScriptedModel",
    "StreamingModel",
    "Usage",
    "client_class",
    "resolve",
    "tool_call",
]

"""Anthropic Messages through the official SDK, with ``cache_control`` at the breakpoints."""

from __future__ import annotations

from typing import Any

from callctx.components.wire.exchange import ToolCall
from callctx.components.wire.params import Params

from .base import ModelError, ModelRequest, Reply, Usage


class AnthropicMessages:
    wire = "anthropic"
    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        temperature: float | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        self.params = Params(model=model, max_tokens=max_tokens, temperature=temperature)
        if client is None:
            try:
                import anthropic
            except ImportError as e:  # pragma: no cover - depends on the extra
                raise ImportError("the Anthropic client needs the extra: pip install 'callctx[anthropic]'") from e
            client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        self.client = client

    def complete(self, request: ModelRequest) -> Reply:
        import anthropic

        try:
            r = self.client.messages.create(**request.body)
        except anthropic.APIError as e:
            status = getattr(e, "status_code", None)
            retryable = status is None or status in (408, 409, 429) or status >= 500
            raise ModelError("anthropic", str(e), status=status, retryable=retryable) from e
        texts = [b.text for b in r.content if b.type == "text"]
        calls = [
            ToolCall(id=b.id, name=b.name, arguments=dict(b.input or {})) for b in r.content if b.type == "tool_use"
        ]
        u = r.usage
        read = u.cache_read_input_tokens or 0
        write = u.cache_creation_input_tokens or 0
        usage = Usage(input=u.input_tokens + read + write, output=u.output_tokens, cache_read=read, cache_write=write)
        return Reply("".join(texts) if texts else None, calls, usage, r.model, r.stop_reason)

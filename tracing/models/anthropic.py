"""Anthropic Messages through the official SDK, with ``cache_control`` at the breakpoints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from callctx.components.wire.exchange import ToolCall

from .base import ModelRequest, Reply, SdkModel, StreamingModel, Usage, import_sdk, read_reply, retry_hooks


class AnthropicMessages(SdkModel, StreamingModel):
    """Messages: complete, stream, and their async forms through the SDK's async client."""

    wire = "anthropic"
    provider = "anthropic"
    default_endpoint = "https://api.anthropic.com"

    def api_errors(self) -> tuple[type[BaseException], ...]:
        import anthropic

        return (anthropic.APIError,)

    def __init__(self, model: str, *, max_tokens: int = 4096, **options: Any) -> None:
        super().__init__(model, max_tokens=max_tokens, **options)

    def connect(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        sdk = import_sdk("anthropic", "anthropic")
        http = sdk.DefaultHttpxClient(event_hooks=retry_hooks())
        return sdk.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries, http_client=http
        )

    def connect_async(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        sdk = import_sdk("anthropic", "anthropic")
        http = sdk.DefaultAsyncHttpxClient(event_hooks=retry_hooks(asynchronous=True))
        return sdk.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries, http_client=http
        )

    def complete(self, request: ModelRequest) -> Reply:
        with self.calling():
            return read_reply(self._reply, self.client.messages.create(**request.body))

    async def acomplete_with(self, client: Any, request: ModelRequest) -> Reply:
        with self.calling():
            return read_reply(self._reply, await client.messages.create(**request.body))

    def stream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        """The reply, its text handed to ``on_text`` as the deltas arrive."""
        on_text = self.passing(on_text)
        with self.calling(), self.client.messages.stream(**request.body) as events:
            for text in events.text_stream:
                on_text(text)
            return self._reply(events.get_final_message())

    @staticmethod
    def _reply(r: Any) -> Reply:
        texts = [b.text for b in r.content if b.type == "text"]
        calls = [
            ToolCall(id=b.id, name=b.name, arguments=dict(b.input or {})) for b in r.content if b.type == "tool_use"
        ]
        u = r.usage
        read = u.cache_read_input_tokens or 0
        write = u.cache_creation_input_tokens or 0
        usage = Usage(input=u.input_tokens + read + write, output=u.output_tokens, cache_read=read, cache_write=write)
        return Reply("".join(texts) if texts else None, calls, usage, r.model, r.stop_reason)

"""OpenAI (and any OpenAI-compatible server: vLLM, Ollama, LM Studio) through the official SDK.

``base_url`` points it at another server. The body the runtime built is passed as the
keyword arguments of ``chat.completions.create`` / ``responses.create``: the SDK sends it
unchanged, so what the log recorded is what went over the wire.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from callctx.components.wire.exchange import ToolCall

from .base import ModelRequest, Reply, SdkModel, StreamingModel, Unreadable, Usage, import_sdk, read_reply, retry_hooks


class _OpenAI(SdkModel):
    """What both OpenAI APIs share: the client."""

    provider = "openai"
    default_endpoint = "https://api.openai.com/v1"

    def api_errors(self) -> tuple[type[BaseException], ...]:
        import openai

        return (openai.APIError,)

    def connect(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        sdk = import_sdk("openai", "openai")
        http = sdk.DefaultHttpxClient(event_hooks=retry_hooks())
        return sdk.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries, http_client=http
        )

    def connect_async(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        sdk = import_sdk("openai", "openai")
        http = sdk.DefaultAsyncHttpxClient(event_hooks=retry_hooks(asynchronous=True))
        return sdk.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries, http_client=http
        )


class OpenAIChat(_OpenAI, StreamingModel):
    """Chat Completions."""

    wire = "openai-chat"

    def complete(self, request: ModelRequest) -> Reply:
        with self.calling():
            return read_reply(self._reply, self.client.chat.completions.create(**request.body))

    async def acomplete_with(self, client: Any, request: ModelRequest) -> Reply:
        with self.calling():
            return read_reply(self._reply, await client.chat.completions.create(**request.body))

    def stream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        """The reply, its text handed to ``on_text`` as the deltas arrive (the request sent is
        the recorded one, plus the SDK's own streaming flags)."""
        on_text = self.passing(on_text)
        with self.calling():
            chunks = self.client.chat.completions.create(
                **request.body, stream=True, stream_options={"include_usage": True}
            )
            text: list[str] = []
            calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]
            usage, model, finish = None, None, None
            chunk = None
            for chunk in chunks:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        on_text(delta.content)
                    for tc in delta.tool_calls or ():
                        entry = calls.setdefault(tc.index, ["", "", ""])
                        entry[0] = tc.id or entry[0]
                        if tc.function is not None:
                            entry[1] += tc.function.name or ""
                            entry[2] += tc.function.arguments or ""
                    finish = choice.finish_reason or finish
            if chunk is None:
                raise Unreadable("the stream ended before its first chunk")
            tool_calls = [ToolCall(id=i, name=n, arguments=_args(a)) for i, n, a in (calls[k] for k in sorted(calls))]
            return Reply("".join(text) if text else None, tool_calls, _chat_usage(usage), model, finish)

    @staticmethod
    def _reply(r: Any) -> Reply:
        choice = r.choices[0]
        msg = choice.message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=_args(c.function.arguments)) for c in msg.tool_calls or ()
        ]
        return Reply(msg.content, calls, _chat_usage(r.usage), r.model, choice.finish_reason)


def _chat_usage(u: Any) -> Usage:
    """Chat's usage: the prompt counts cached and written tokens too (writes: GPT-5.6 and later)."""
    if u is None:
        return Usage()
    details = getattr(u, "prompt_tokens_details", None)
    return Usage(
        input=u.prompt_tokens,
        output=u.completion_tokens,
        cache_read=getattr(details, "cached_tokens", None) or 0,
        cache_write=getattr(details, "cache_write_tokens", None),  # None: not reported (models before GPT-5.6)
    )


class OpenAIResponses(_OpenAI, StreamingModel):
    """The Responses API."""

    wire = "openai-responses"

    def complete(self, request: ModelRequest) -> Reply:
        with self.calling():
            return read_reply(self._reply, self.client.responses.create(**request.body))

    async def acomplete_with(self, client: Any, request: ModelRequest) -> Reply:
        with self.calling():
            return read_reply(self._reply, await client.responses.create(**request.body))

    def stream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        """The reply, its text handed to ``on_text`` as the deltas arrive."""
        on_text = self.passing(on_text)
        with self.calling(), self.client.responses.stream(**request.body) as events:
            for event in events:
                if getattr(event, "type", "") == "response.output_text.delta":
                    on_text(event.delta)
            return self._reply(events.get_final_response())

    @staticmethod
    def _reply(r: Any) -> Reply:
        calls = [
            ToolCall(id=item.call_id, name=item.name, arguments=_args(item.arguments))
            for item in r.output
            if getattr(item, "type", None) == "function_call"
        ]
        u = r.usage
        usage = Usage()
        if u is not None:
            details = getattr(u, "input_tokens_details", None)
            usage = Usage(
                input=u.input_tokens,
                output=u.output_tokens,
                cache_read=getattr(details, "cached_tokens", 0) or 0,
                cache_write=getattr(details, "cache_write_tokens", 0) or 0,
            )
        return Reply(r.output_text or None, calls, usage, r.model, r.status)


def _args(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"value": value}

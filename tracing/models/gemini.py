"""Gemini through the official ``google-genai`` SDK.

The runtime builds the wire body (camelCase, as the API receives it); here it is handed to
``generate_content`` as contents plus a config, which the SDK turns back into that body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from callctx.components.wire.exchange import ToolCall

from .base import ModelRequest, Reply, SdkModel, StreamingModel, Unreadable, Usage, import_sdk, read_reply


def sdk_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """``generate_content`` keyword arguments (minus ``model``) that make the SDK send ``body``."""
    config: dict[str, Any] = {}
    if "systemInstruction" in body:
        config["system_instruction"] = body["systemInstruction"]
    if "tools" in body:
        config["tools"] = body["tools"]
    gen = body.get("generationConfig") or {}
    if "maxOutputTokens" in gen:
        config["max_output_tokens"] = gen["maxOutputTokens"]
    if "temperature" in gen:
        config["temperature"] = gen["temperature"]
    config["automatic_function_calling"] = {"disable": True}
    return {"contents": body["contents"], "config": config}


def _answered(r: Any) -> Any:
    """A whole reply, which has candidates (none: the prompt was blocked, or this is not a reply)."""
    if not getattr(r, "candidates", None):
        feedback = getattr(r, "prompt_feedback", None)
        blocked = getattr(feedback, "block_reason", None)
        raise Unreadable(f"the prompt was blocked ({blocked})" if blocked else "the reply has no candidates")
    return r


class Gemini(SdkModel, StreamingModel):
    """generate_content and its stream, and their async forms through the client's ``aio`` side."""

    wire = "gemini"
    provider = "gcp.gemini"
    default_endpoint = "https://generativelanguage.googleapis.com"

    def connect(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        import_sdk("google.genai", "gemini")
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            timeout=int(timeout * 1000),
            base_url=base_url,
            retry_options=types.HttpRetryOptions(attempts=max_retries + 1),
        )
        return genai.Client(api_key=api_key, http_options=options)

    def api_errors(self) -> tuple[type[BaseException], ...]:
        from google.genai import errors

        return (errors.APIError,)

    @property
    def endpoint(self) -> str:
        options = getattr(getattr(self.client, "_api_client", None), "_http_options", None)
        given = self._options[1] or getattr(options, "base_url", None)
        return str(given or self.default_endpoint).rstrip("/")

    def status_of(self, error: BaseException) -> int | None:
        """The Gemini SDK's errors carry the HTTP status as ``code``."""
        code = getattr(error, "code", None)
        return code if isinstance(code, int) and isinstance(error, self.api_errors()) else None

    def complete(self, request: ModelRequest) -> Reply:
        with self.calling():
            r = self.client.models.generate_content(model=self.params.model, **sdk_arguments(request.body))
            return read_reply(self._reply, _answered(r))

    async def acomplete_with(self, client: Any, request: ModelRequest) -> Reply:
        with self.calling():
            r = await client.models.generate_content(model=self.params.model, **sdk_arguments(request.body))
            return read_reply(self._reply, _answered(r))

    def stream(self, request: ModelRequest, on_text: Callable[[str], Any]) -> Reply:
        """The reply, its text handed to ``on_text`` as the chunks arrive."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        last = None
        on_text = self.passing(on_text)
        with self.calling():
            for chunk in self.client.models.generate_content_stream(
                model=self.params.model, **sdk_arguments(request.body)
            ):
                last = chunk
                reply = self._reply(chunk)
                if reply.text:
                    texts.append(reply.text)
                    on_text(reply.text)
                calls.extend(reply.tool_calls)
            end = self._reply(last) if last is not None else Reply(None)
        numbered = [ToolCall(id=f"call_{i}", name=c.name, arguments=c.arguments) for i, c in enumerate(calls)]
        return Reply("".join(texts) if texts else None, numbered, end.usage, end.model, end.finish)

    def connect_async(self, api_key: str | None, base_url: str | None, timeout: float, max_retries: int) -> Any:
        return self.client.aio  # the Gemini client's async side shares its options

    @staticmethod
    def _reply(r: Any) -> Reply:
        parts = r.candidates[0].content.parts if r.candidates and r.candidates[0].content else []
        texts = [p.text for p in parts or () if getattr(p, "text", None)]
        calls = [
            ToolCall(id=f"call_{i}", name=p.function_call.name, arguments=dict(p.function_call.args or {}))
            for i, p in enumerate(parts or ())
            if getattr(p, "function_call", None)
        ]
        m = r.usage_metadata
        usage = (
            Usage(
                input=m.prompt_token_count or 0,
                output=m.candidates_token_count or 0,
                cache_read=m.cached_content_token_count or 0,
            )
            if m
            else Usage()
        )
        finish = r.candidates[0].finish_reason if r.candidates else None
        return Reply("".join(texts) if texts else None, calls, usage, r.model_version, str(finish) if finish else None)

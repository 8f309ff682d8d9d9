"""A fake OpenAI-compatible HTTP server for framework tests: no network, no model, a fixed script.

Serves ``POST /v1/chat/completions`` (what LangChain's ``ChatOpenAI`` calls) and
``POST /v1/responses`` (what the OpenAI Agents SDK calls by default), non-streaming only.

The script: when the request offers tools and the conversation holds no tool result yet, the
answer is one call to the first offered tool, with JSON arguments built from its parameter
schema; otherwise it is a final text. Every answer carries usage (prompt/input, completion/output
and cached tokens) computed from the sizes of the request and the answer, so the same run always
reports the same numbers. Every request received is kept in :attr:`FakeOpenAI.requests` (path and
parsed body, in arrival order), so a test can compare what the server saw with what was traced.

In-process::

    with FakeOpenAI() as fake:          # port 0: any free port
        client = OpenAI(api_key="test", base_url=fake.base_url)
        ...
        fake.requests                     # [{"path": "/v1/responses", "body": {...}}, ...]

Standalone: ``python tests/fake_openai.py PORT`` (prints the base URL, serves until killed).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = 1_700_000_000  # fixed timestamps and ids: the answers depend only on the requests


def _size(value: Any) -> int:
    return len(json.dumps(value, sort_keys=True, separators=(",", ":")))


def usage_for(prompt: Any, completion: Any) -> tuple[int, int, int]:
    """(prompt tokens, completion tokens, cached prompt tokens): about four characters a token;
    half the prompt, rounded down, counts as read from the cache."""
    prompt_tokens = max(1, _size(prompt) // 4)
    completion_tokens = max(1, _size(completion) // 4)
    return prompt_tokens, completion_tokens, prompt_tokens // 2


def example_value(name: str, schema: dict[str, Any]) -> Any:
    """A plausible value for one parameter, from its name and JSON schema."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind is None and "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return example_value(name, options[0]) if options else None
    if kind == "integer":
        return 3
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(name, schema.get("items") or {"type": "string"})]
    if kind == "object":
        return example_arguments(schema)
    low = name.lower()
    for hint, value in (
        ("city", "Paris"),
        ("query", "call trees for agent traces"),
        ("location", "Paris"),
        ("topic", "agent tracing"),
        ("url", "https://example.com"),
        ("date", "2024-01-01"),
    ):
        if hint in low:
            return value
    return f"example {name}"


def example_arguments(parameters: dict[str, Any] | None) -> dict[str, Any]:
    props = (parameters or {}).get("properties") or {}
    return {name: example_value(name, schema or {}) for name, schema in props.items()}


# ---- the script ---------------------------------------------------------------------------------
def _chat_tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if tool.get("type") == "function" else None
        if fn and fn.get("name"):
            out.append((fn["name"], fn.get("parameters") or {}))
    return out


def _chat_has_tool_result(body: dict[str, Any]) -> bool:
    return any(m.get("role") in ("tool", "function") for m in body.get("messages") or [])


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            _text_of(p.get("text", p.get("output", ""))) if isinstance(p, dict) else str(p) for p in content
        )
    return "" if content is None else str(content)


def final_text(tool_output: str | None, n_messages: int) -> str:
    if tool_output is not None:
        return f"Here is what I found: {tool_output[:120]}"
    return f"Done: answered a conversation of {n_messages} message(s)."


def chat_completion(body: dict[str, Any], n: int) -> dict[str, Any]:
    """The answer to the ``n``-th request (0-based) of a run, a chat completion."""
    messages = body.get("messages") or []
    tools = _chat_tools(body)
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "annotations": []}
    if tools and not _chat_has_tool_result(body):
        name, params = tools[0]
        call = {
            "id": f"call_fake_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(example_arguments(params))},
        }
        message["tool_calls"] = [call]
        finish, produced = "tool_calls", call
    else:
        results = [_text_of(m.get("content")) for m in messages if m.get("role") in ("tool", "function")]
        message["content"] = final_text(results[-1] if results else None, len(messages))
        finish, produced = "stop", message["content"]
    prompt, completion, cached = usage_for(messages + list(body.get("tools") or []), produced)
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": CREATED + n,
        "model": body.get("model", "fake-model"),
        "system_fingerprint": "fp_fake",
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    }


def _responses_items(body: dict[str, Any]) -> list[Any]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items or [])


def _responses_tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (t["name"], t.get("parameters") or {})
        for t in body.get("tools") or []
        if t.get("type") == "function" and t.get("name")
    ]


def response(body: dict[str, Any], n: int) -> dict[str, Any]:
    """The answer to the ``n``-th request (0-based) of a run, a Responses API response."""
    items = _responses_items(body)
    tools = _responses_tools(body)
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    if tools and not outputs:
        name, params = tools[0]
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_fake_{n}",
            "call_id": f"call_fake_{n}",
            "name": name,
            "arguments": json.dumps(example_arguments(params)),
            "status": "completed",
        }
    else:
        text = final_text(_text_of(outputs[-1].get("output")) if outputs else None, len(items))
        item = {
            "type": "message",
            "id": f"msg_fake_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }
    prompt, completion, cached = usage_for([body.get("instructions"), items, body.get("tools") or []], item)
    return {
        "id": f"resp_fake_{n}",
        "object": "response",
        "created_at": CREATED + n,
        "completed_at": CREATED + n,
        "status": "completed",
        "model": body.get("model", "fake-model"),
        "instructions": body.get("instructions"),
        "output": [item],
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "error": None,
        "incomplete_details": None,
        "metadata": {},
        "previous_response_id": body.get("previous_response_id"),
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


ROUTES = {"/v1/chat/completions": chat_completion, "/v1/responses": response}


# ---- the server ---------------------------------------------------------------------------------
class FakeOpenAI:
    """The fake server, in a background thread. ``base_url`` is what an OpenAI client takes."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._server.server_address[0]}:{self.port}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The bodies of the model calls received (the routes above), in arrival order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"] in ROUTES]

    def record(self, path: str, body: Any) -> int:
        """Keeps one request; returns its index among the requests to the same route."""
        with self._lock:
            n = sum(1 for r in self.requests if r["path"] == path)
            self.requests.append({"path": path, "body": body})
            return n

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_fake_{len(fake.requests)}")
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": None}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                fake.record(path, raw.decode("utf-8", "replace"))
                return self._error(400, "body is not JSON")
            n = fake.record(path, body)
            route = ROUTES.get(path)
            if route is None:
                return self._error(404, f"the fake OpenAI server does not serve {path}")
            if not isinstance(body, dict):
                return self._error(400, "body is not a JSON object")
            if body.get("stream"):
                return self._error(400, "the fake OpenAI server answers stream=false requests only")
            self._send(200, route(body, n))

        def do_GET(self) -> None:
            fake.record(self.path, None)
            self._error(404, f"the fake OpenAI server does not serve GET {self.path}")

    return Handler


if __name__ == "__main__":
    server = FakeOpenAI(port=int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._server.serve_forever()

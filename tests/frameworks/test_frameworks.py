"""Real agent frameworks, traced by their real OpenInference instrumentations, exporting over
OTLP/HTTP to ``callctx serve``, against a fake OpenAI-compatible server: the OpenAI Agents SDK
and a LangGraph graph. Each runs in its own extra environment (``make extras``); CI builds
them and runs these tests.

For each: the tree's nodes are the agents, graph nodes and tools as their author named them;
every request the fake server received is listed as a call with the usage it returned; each
call's context shows the messages that were sent."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from helpers.extras import ROOT, venv_python
from helpers.fake_openai import ROUTES, FakeOpenAI
from helpers.stores import all_calls
from helpers.trees import find, parse

from callctx.cli.main import main
from callctx.projection import Projection
from callctx.serve import Receiver, serve_http
from callctx.store.contexts import reconstruct

FRAMEWORKS = {
    "openai_agents": {"service": "support-agent", "session": "support-session-1"},
    "langgraph": {"service": "research-graph", "session": "research-thread-1"},
}


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def run(request, tmp_path_factory):
    """(name, receiver, the fake server's requests) after one run of the framework's agent."""
    name = request.param
    python = venv_python(name)
    if python is None:
        pytest.skip(f"the {name} environment is not built (make extras)")
    tmp = tmp_path_factory.mktemp(name)
    rx = Receiver(tmp / "received.jsonl")
    srv = serve_http(rx, "127.0.0.1", 0)
    with FakeOpenAI() as fake:
        try:
            proc = subprocess.run(
                [str(python), str(ROOT / "tests" / "frameworks" / f"{name}_agent.py"),
                 f"http://127.0.0.1:{srv.server_port}", fake.base_url],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-3000:]
            deadline = time.monotonic() + 30
            while not _settled(rx, len(fake.bodies)) and time.monotonic() < deadline:
                time.sleep(0.05)  # polls until the exported spans are in
        finally:
            srv.shutdown()
        requests = list(fake.requests)
    yield name, rx, requests
    rx.close()


def _settled(rx: Receiver, n_requests: int) -> bool:
    calls = all_calls(rx.store)
    return n_requests > 0 and len(calls) >= n_requests and all(c.status != "running" for c in calls)


def test_every_request_is_a_call_with_the_usage_it_returned(run):
    name, rx, requests = run
    calls = all_calls(rx.store)
    assert len(calls) == len(requests) > 0
    for i, (call, req) in enumerate(zip(calls, requests, strict=True)):
        n = sum(1 for r in requests[:i] if r["path"] == req["path"])
        usage = ROUTES[req["path"]](req["body"], n)["usage"]
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        assert call.usage.input == prompt, (name, i)
        assert call.usage.output == completion, (name, i)
        assert (call.usage.cache_read or 0) == details.get("cached_tokens", 0), (name, i)
        assert call.foreign and call.status == "ok" and call.model
        assert call.service == FRAMEWORKS[name]["service"]
        assert call.latency_ms is not None and call.latency_ms >= 0


def _sent_texts(body: dict) -> list[str]:
    """The texts of the messages a request carried (Chat Completions or Responses)."""
    texts = []
    if body.get("instructions"):
        texts.append(body["instructions"])
    for m in body.get("messages") or body.get("input") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str) and content:
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("text"))
        elif isinstance(m, dict) and m.get("type") == "function_call_output":
            texts.append(str(m.get("output")))
    return texts


def test_each_call_shows_the_messages_that_were_sent(run):
    name, rx, requests = run
    calls = all_calls(rx.store)
    for call, req in zip(calls, requests, strict=True):
        rec = reconstruct(rx.store.recorded(call)).messages
        shown = "\n".join([*rec.system, *(m.text for m in rec.messages)])
        for text in _sent_texts(req["body"]):
            assert text in shown, (name, call.index, text)


def test_the_tree_names_agents_nodes_and_tools_as_their_author_did(run):
    name, rx, _ = run
    p = Projection.from_log(rx.log.path)
    assert rx.store.tree(FRAMEWORKS[name]["session"]) == p.session_tree(FRAMEWORKS[name]["session"])
    session = FRAMEWORKS[name]["session"]
    tree = parse(p.session_tree(session))
    if name == "openai_agents":
        assert find(tree, "Weather agent"), tree
    else:
        graph = find(tree, "LangGraph")[0]
        assert [c["function"] for c in graph["children"]] == ["planner", "tools", "writer"]
    tools = {n.function for n in p.nodes.values() if n.kind == "tool"}
    assert tools == {"get_weather"} if name == "openai_agents" else {"search_papers"}


def test_the_cli_lists_and_shows_the_calls(run, capsys):
    _, rx, requests = run
    assert main(["calls", str(rx.log.path)]) == 0
    listing = capsys.readouterr().out
    assert listing.count("(span)") == len(requests)
    assert main(["context", str(rx.log.path), "--at", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["reconstructed"] is True and doc["verified"] is False and doc["messages"]

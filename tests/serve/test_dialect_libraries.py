"""Spans made by other libraries' own decorators (OpenInference, Langfuse, OpenLLMetry, the
GenAI-convention handler), exported over OTLP to our receiver, fold into the tree shape ours
make. Each library runs in its own environment (``make extras``); skipped when it is missing."""

from __future__ import annotations

import subprocess
import time

import pytest
from helpers.extras import ROOT, venv_python
from helpers.stores import served_trees
from helpers.trees import find, parse

from callctx.serve import Receiver, serve_http

PLANNER = [{"function": "planner", "output": "plan: notes on paris-0 paris-1",
            "children": [{"function": "researcher", "status": "done"}]}]  # fmt: skip


def run_library(name: str, tmp_path) -> Receiver:
    python = venv_python(name)
    if python is None:
        pytest.skip(f"the {name} environment is not built (make extras)")
    rx = Receiver(tmp_path / "received.jsonl")
    srv = serve_http(rx, "127.0.0.1", 0)
    try:
        proc = subprocess.run(
            [str(python), str(ROOT / "tests" / "dialects" / f"{name}_agent.py"), f"http://127.0.0.1:{srv.server_port}"],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        end = time.monotonic() + 10
        while rx.stats.spans < 4 and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        srv.shutdown()
    return rx


def trees(rx: Receiver) -> dict[str, list]:
    return {k: parse(text) for k, text in served_trees(rx.store).items()}


def test_openinference_decorators(tmp_path):
    rx = run_library("openinference", tmp_path)
    assert trees(rx) == {"openinference-session": PLANNER}


def test_langfuse_observe(tmp_path):
    rx = run_library("langfuse", tmp_path)
    assert trees(rx) == {"langfuse-session": PLANNER}


def test_openllmetry_decorators(tmp_path):
    rx = run_library("traceloop", tmp_path)
    (tree,) = trees(rx).values()
    assert tree[0]["function"] == "trip" and tree[0]["output"] == "plan: notes on paris-0 paris-1"
    (planner,) = find(tree, "planner")
    assert [c["function"] for c in planner["children"]] == ["researcher"]
    assert not find(tree, "search")  # the tool call is folded away; auto-instrumented HTTP is transparent


def test_genai_convention_handler(tmp_path):
    rx = run_library("genai", tmp_path)
    (tree,) = trees(rx).values()
    assert tree[0]["function"] == "trip"
    (planner,) = find(tree, "planner")
    assert planner["children"] == [{"function": "researcher", "status": "done"}]
    assert not find(tree, "search") and "gpt-4o-mini" not in str(tree)

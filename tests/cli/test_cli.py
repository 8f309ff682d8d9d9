"""The command line: the demo, and rebuilding every model call byte for byte from the log."""

from __future__ import annotations

import json

import pytest
from helpers.cli import cli
from helpers.stores import calls_in

from callctx.cli.common import EXIT_INPUT, EXIT_MISMATCH
from callctx.cli.main import main
from callctx.cli.research_agent import run
from callctx.components import wire


@pytest.fixture
def demo_log(runtime):
    calls = run(runtime)
    runtime.close()
    return runtime.log_path, calls


def test_every_demo_call_rebuilds_byte_for_byte(demo_log):
    log, live = demo_log
    assert len(live) == 11
    for call in live:
        code, out, err = cli("context", str(log), "--at", str(call.index), "--json")
        assert code == 0, err
        rebuilt = json.loads(out)
        assert rebuilt == call.body
        assert wire.canonical(rebuilt) == wire.canonical(call.body)
        code, out, _ = cli("context", str(log), "--at", str(call.index))
        assert code == 0 and "verified" in out and f"call {call.index}: {call.function}" in out


def test_calls_and_tree(demo_log):
    log, live = demo_log
    code, out, _ = cli("calls", str(log))
    assert code == 0
    rows = out.splitlines()[1:12]
    assert len(rows) == 11 and "reported by the provider" in out.splitlines()[-1]
    assert "_lit_decide" in rows[1] and "research_agent → literature → _lit_decide" in rows[1]
    code, out, _ = cli("tree", str(log), "--at", "2")
    assert code == 0 and out == live[1].tree


def test_context_in_another_providers_format(demo_log):
    log, _ = demo_log
    for provider in ("openai", "openai-responses", "gemini", "anthropic"):
        code, out, err = cli("context", str(log), "--at", "3", "--provider", provider, "--json")
        assert code == 0, err
        body = json.loads(out)
        assert body  # a request in that provider's shape
    code, out, _ = cli("context", str(log), "--at", "3", "--provider", "gemini", "--json")
    assert "contents" in json.loads(out)


def test_tampered_log_fails_loudly(demo_log, tmp_path):
    log, _ = demo_log
    # change the stored texts without changing their hashes: rebuilding must refuse them
    lines = [
        line.replace("AAAI long paper", "NeurIPS paper") if line.startswith('{"e":"blob"') else line
        for line in log.read_text().splitlines(keepends=True)
    ]
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("".join(lines))
    code, _, err = cli("context", str(bad), "--at", "2")
    assert code == EXIT_MISMATCH and "does not match its hash" in err


def test_changed_manifest_fails_the_request_hash(demo_log, tmp_path):
    log, _ = demo_log
    calls = calls_in(log)
    lines = log.read_text().splitlines(keepends=True)
    target = calls[1].span_id
    for i, line in enumerate(lines):
        if target in line and '"e":"start"' in line:
            record = json.loads(line)
            manifest = json.loads(record["attributes"]["callctx.context"])
            manifest["params"]["max_tokens"] = 10
            record["attributes"]["callctx.context"] = json.dumps(manifest)
            lines[i] = json.dumps(record) + "\n"
    bad = tmp_path / "edited.jsonl"
    bad.write_text("".join(lines))
    code, _, err = cli("context", str(bad), "--at", "2")
    assert code == EXIT_MISMATCH and "does not match what was sent" in err


def test_input_errors_have_exit_code_2(demo_log, tmp_path):
    log, _ = demo_log
    code, _, err = cli("calls", str(tmp_path / "missing.jsonl"))
    assert code == EXIT_INPUT and "no event log" in err
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff not json at all\n" * 10)
    code, _, err = cli("calls", str(garbage))
    assert code == EXIT_INPUT and "not a callctx event log" in err
    code, _, err = cli("context", str(log), "--at", "99")
    assert code == EXIT_INPUT and "out of range" in err and "1 to 11" in err
    code, _, err = cli("tree", str(log), "--at", "0")
    assert code == EXIT_INPUT
    with pytest.raises(SystemExit) as exit_info:
        cli("context", str(log), "--at", "1", "--provider", "mistral")
    assert exit_info.value.code == 2


def test_demo_command_writes_the_log_and_an_otlp_file(tmp_path):
    code, out, err = cli("demo", "--out", str(tmp_path), "--quiet")
    assert code == 0, err
    assert "11 model calls" in out and "the full context of call 2 (_lit_decide)" in out
    assert "▲ cache breakpoint" in out and "<call_tree>" in out
    log = tmp_path / "events.jsonl"
    calls = calls_in(log)
    assert len(calls) == 11
    otlp = json.loads((tmp_path / "trace.otlp.json").read_text())
    spans = [sp for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]
    names = {sp["name"] for sp in spans}
    assert "invoke_agent research_agent" in names and "chat scripted-research" in names
    assert all(len(sp["spanId"]) == 16 and len(sp["traceId"]) == 32 for sp in spans)  # hex ids
    services = {a["value"]["stringValue"] for rs in otlp["resourceSpans"] for a in rs["resource"]["attributes"]
                if a["key"] == "service.name"}  # fmt: skip
    assert services == {"callctx-demo"}  # the demo names its service (not unknown_service:python3)
    code, out, _ = cli("context", str(log), "--at", "2")
    assert code == 0


def test_the_demo_hints_work_as_printed(tmp_path):
    """Every follow-up command the demo prints runs as printed, from where the user stands,
    with the CLI not on the PATH (as after `make demo`)."""
    import os
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    cli = Path(sys.executable).parent / "callctx"
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [str(cli), "demo", "--out", str(tmp_path / "out"), "--quiet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout[proc.stdout.index("Look closer:") :]
    commands = [line.split(":", 1)[1] if line.startswith("Look closer:") else line for line in text.splitlines()]
    commands = [c.strip() for c in commands if c.strip()]
    assert len(commands) >= 4
    for command in commands:
        run = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, (command, run.stderr)


def test_an_empty_log_gets_the_same_answer_everywhere(tmp_path, capsys):
    from callctx.projection import EventLog

    log = tmp_path / "empty.jsonl"
    EventLog(log).close()
    assert main(["calls", str(log)]) == 0
    listed = capsys.readouterr().out.strip()
    assert main(["tree", str(log), "--at", "1"]) == 2
    tree = capsys.readouterr().err
    assert main(["context", str(log), "--at", "1"]) == 2
    context = capsys.readouterr().err
    said = "records no model calls (it holds no spans yet)"
    assert said in listed and said in tree and said in context


def test_calls_wide_gives_span_ids_the_tree_command_takes_and_each_callers_input(demo_log):
    log, live = demo_log
    code, out, _ = cli("calls", str(log), "--wide")
    assert code == 0
    rows = out.splitlines()[1 : 1 + len(live)]
    ids = [row.split()[1] for row in rows]
    assert ids == [c.chat_span_id for c in live]  # each call's own span
    assert "(topic: Extend LLM-as-Code" in rows[1]  # _lit_decide's first words
    code, tree, _ = cli("tree", str(log), "--span", ids[1])
    assert code == 0 and tree == live[1].tree  # the tree that call saw, by the id the listing gave


def test_tree_final_stands_alone_or_takes_a_call(demo_log):
    log, live = demo_log
    code, out, _ = cli("tree", str(log), "--final")
    assert code == 0
    assert out.startswith("- function: research_agent") and "status: running" not in out
    assert "Plan ready" in out  # the root's output: the run is over
    code, at, _ = cli("tree", str(log), "--final", "--at", "2")
    assert code == 0 and "_lit_decide" in at and at != live[1].tree  # as it stands now, not as call 2 saw it

"""Replay throughput: folding a generated 1M-event log, against decoding it alone.

The log is shaped like the logs real runs write (``callctx demo`` and agents traced by the
callctx runtime): runs of a research agent, one trace and session each, appended to one log.
Each run is a root call looping over stages; a stage is a decision call, then a plain span
(the user's own ``tracer.start_as_current_span``) holding a few step calls, then a closing
model call. Every call talks to the model through ``chat`` spans carrying the attributes the
runtime writes (model, provider, the recorded context manifest, usage, output), each with the
plain HTTP span an instrumented client adds under it; steps also call tools (some fail).
Model calls store the texts they were sent as ``blob`` records, a few new ones per call, as
the runtime does. The fold reads every record and folds the span events (``events``: what
``Projection.events`` counts); blobs are read and skipped.

Such a log takes ~1 KB per event (the demo's: ~1.4 KB), mostly the context manifests and
blobs, so decoding is a large part of a replay. The baseline is reading and decoding the same
file without folding (``read_log``, same run, same page cache); each side is timed
``--repeat`` times and the best kept. Targets: the replay at >= 0.8x the baseline's rate, and
>= 500k events/s. Absolute figures depend on
the machine (and on its load); the ratio of the replay's rate to the baseline's, printed
with them, is what compares across machines.

    python bench/replay.py [--events 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from callctx.projection import Projection, read_log
from callctx.projection import schema as s
from callctx.projection.events import KIND_INTERNAL, Blob, LogHeader, Record, SpanEnded, SpanStarted, encode

TARGET = 500_000  # events/s: the first round's absolute figure
TARGET_RATIO = 0.8  # of the decode-only baseline: what compares across machines
STAGES = 40  # stages per run: a run is ~2,000 events
STEPS = 3  # step calls per stage
RESOURCE = {
    "telemetry.sdk.language": "python",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.version": "1.45.2",
    "service.instance.id": "013e31a2-0b2a-4804-8737-e665f245d5aa",
    "service.name": "research-agent",
}
_SYSTEM = [  # the stable segments of every model call's context (stored once per log)
    ("tools", "L0", "tools", 52),
    ("identity", "L0", "system", 32),
    ("tool_enforcement", "L0", "system", 35),
    ("platform_format", "L0", "system", 32),
    ("skills_index", "L0", "system", 35),
    ("memory_global", "L0", "system", 71),
    ("environment", "L0", "system", 63),
    ("pi_shield", "L1", "system", 45),
    ("workspace_files", "L1", "system", 53),
    ("project_memory", "L1", "system", 16),
    ("user_profile", "L1", "system", 25),
    ("cwd", "L1", "system", 8),
    ("session_binding", "L1", "system", 16),
    ("deferred_catalog", "L1", "system", 41),
    ("current_date", "L1", "system", 12),
]


class Writer:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[bytes] = [encode(LogHeader(created_ns=1_700_000_000_000_000_000))]
        self.events = 0
        self.records = 1
        self.clock = 1_700_000_000_000_000_000
        self.ids = iter(range(1, 1 << 62))

    def tick(self, ns: int = 150_000) -> int:
        self.clock += ns
        return self.clock

    def sid(self) -> str:
        return hashlib.blake2b(next(self.ids).to_bytes(8, "little"), digest_size=8).hexdigest()

    def put(self, record: Record) -> None:
        self.lines.append(encode(record))
        self.records += 1
        if type(record) is not Blob:
            self.events += 1
        if len(self.lines) >= 50_000:
            self.flush()

    def flush(self) -> None:
        with open(self.path, "ab") as f:
            f.write(b"".join(self.lines))
        self.lines.clear()

    def blob(self, text: str) -> str:
        digest = hashlib.sha256(text.encode()).hexdigest()
        self.put(Blob(digest, text))
        return digest


class Run:
    """One run of the agent: a trace, a session."""

    def __init__(self, w: Writer, number: int) -> None:
        self.w = w
        self.trace = hashlib.md5(f"run {number}".encode()).hexdigest()
        self.session = f"session-{number:05d}"
        self.first = True
        self.turn = 0

    def start(self, span_id: str, parent: str | None, name: str, attrs: dict[str, Any]) -> None:
        resource, scope = (RESOURCE, "callctx") if self.first else ({}, None)
        self.first = False
        self.w.put(SpanStarted(self.trace, span_id, parent, name, self.w.tick(), attrs, KIND_INTERNAL, resource, scope))

    def end(self, span_id: str, attrs: dict[str, Any], error: str | None = None) -> None:
        status = "error" if error else "unset"
        self.w.put(SpanEnded(self.trace, span_id, self.w.tick(), status, error, attrs))

    def call(self, parent: str | None, name: str, doc: str, args: dict[str, Any], contract: bool = False) -> str:
        span_id = self.w.sid()
        attrs: dict[str, Any] = {
            s.OPERATION: s.OP_INVOKE_AGENT,
            s.AGENT_NAME: name,
            s.SPAN_KIND: "AGENT",
            s.DOC: doc,
        }
        if contract:
            attrs[s.POSITION] = f"{name} step of the stage loop"
            attrs[s.OUTPUT_CONTRACT] = f"Your output is parsed by the caller of `{name}`: emit one JSON object."
        attrs.update(
            {
                s.INPUT_VALUE: json.dumps(args, separators=(",", ":")),
                s.INPUT_MIME: s.MIME_JSON,
                s.AGENT: "research-agent",
                s.CONVERSATION: self.session,
            }
        )
        self.start(span_id, parent, f"invoke_agent {name}", attrs)
        return span_id

    def done(self, span_id: str, output: Any, summary: str | None = None) -> None:
        if isinstance(output, str):
            attrs: dict[str, Any] = {s.OUTPUT_VALUE: output, s.OUTPUT_MIME: s.MIME_TEXT}
        else:
            attrs = {s.OUTPUT_VALUE: json.dumps(output, separators=(",", ":")), s.OUTPUT_MIME: s.MIME_JSON}
        if summary is not None:
            attrs[s.SUMMARY] = summary
        self.end(span_id, attrs)

    def chat(self, parent: str, function: str, path: str, output: str | None) -> None:
        """A model call: its new context texts as blobs, the chat span, the HTTP span under it."""
        self.turn += 1
        tree = self.w.blob(
            f"<call_tree>\n- function: research_agent\n  status: running\n  children:\n"
            f"    - function: {function}\n      input:\n        turn: {self.turn}\n"
            f"      status: running  # you are here\n</call_tree>\n\n" + "  # earlier calls: done\n" * 8
        )
        situation = self.w.blob(
            f"<situation>\nYou are running INSIDE the agentic function `{function}`.\nCall path: {path}\n"
            f"Position: turn {self.turn} of {self.session}\n</situation>\n\n" + "Job: plan the paper. " * 12
        )
        user = self.w.blob(f'{{"turn":{self.turn},"session":"{self.session}","ask":"' + "next step " * 20 + '"}')
        segments = [
            [name, layer, role, f"{i:064x}", tokens, True, False, None, None, None]
            for i, (name, layer, role, tokens) in enumerate(_SYSTEM)
        ]
        segments += [
            ["call_tree", "L1", "tree", tree, 65, True, True, [131], 0, None],
            ["situation", "L2", "turn", situation, 97, False, False, None, None, None],
            ["input", "L2", "turn", user, 10, False, False, None, None, None],
        ]
        context = {
            "wire": "anthropic",
            "params": {"model": "claude-x"},
            "encoding": "o200k_base",
            "segments": segments,
            "request": user,
            "tools": f"{99:064x}",
        }
        span_id = self.w.sid()
        self.start(
            span_id,
            parent,
            "chat claude-x",
            {
                s.OPERATION: s.OP_CHAT,
                s.PROVIDER: "anthropic",
                s.REQUEST_MODEL: "claude-x",
                s.SPAN_KIND: "LLM",
                s.CONTEXT: json.dumps(context, separators=(",", ":")),
                s.FUNCTION: function,
                s.CALL_PATH: path,
            },
        )
        http = self.w.sid()
        self.start(
            http,
            span_id,
            "POST",
            {
                "http.request.method": "POST",
                "url.full": "https://api.anthropic.com/v1/messages",
                "server.address": "api.anthropic.com",
                "server.port": 443,
            },
        )
        self.end(http, {"http.response.status_code": 200})
        usage = {
            s.USAGE_INPUT: 800 + self.turn % 400,
            s.USAGE_OUTPUT: 20 + self.turn % 50,
            s.USAGE_CACHE_READ: 640,
            s.USAGE_CACHE_WRITE: 0,
            s.RESPONSE_MODEL: "claude-x",
        }
        if output is not None:
            usage.update({s.OUTPUT_VALUE: output, s.OUTPUT_MIME: s.MIME_TEXT})
        usage["gen_ai.response.finish_reasons"] = ["end_turn" if output is not None else "tool_use"]
        self.end(span_id, usage)

    def tool(self, parent: str, query: str, fails: bool) -> None:
        span_id = self.w.sid()
        self.start(
            span_id,
            parent,
            "execute_tool arxiv_search",
            {
                s.OPERATION: s.OP_EXECUTE_TOOL,
                s.TOOL_NAME: "arxiv_search",
                "gen_ai.tool.call.id": f"call_{self.turn}",
                s.TOOL_ARGUMENTS: json.dumps({"query": query}),
                s.SPAN_KIND: "TOOL",
            },
        )
        if fails:
            self.end(span_id, {}, "TimeoutError: arxiv did not answer in 30 s")
        else:
            hits = [{"id": f"2603.{self.turn:05d}", "title": f"{query}, part {i}"} for i in range(3)]
            self.end(span_id, {s.TOOL_RESULT: json.dumps(hits)})

    def go(self, stages: int) -> None:
        root = self.call(None, "research_agent", "Turn a research direction into a paper plan.", {"task": "a paper"})
        done: list[str] = []
        for k in range(stages):
            name = f"stage_{k % 7}"
            pick = self.call(root, "_pick_stage", "Select the next research stage.", {"done": done[-3:]}, True)
            self.chat(pick, "_pick_stage", "research_agent → _pick_stage", name)
            self.done(pick, name, f"go to {name}")
            done.append(name)
            stage = self.call(root, name, f"Run the {name} stage of the plan.", {"topic": "LLM-as-Code", "k": k})
            batch = self.w.sid()
            self.start(batch, stage, "prepare_batch", {"code.function": "prepare_batch", "batch.size": STEPS})
            for i in range(STEPS):
                step = self.call(batch, "check_novelty", "Check one idea for novelty.", {"idea": f"idea {k}.{i}"}, True)
                path = f"research_agent → {name} → check_novelty"
                self.chat(step, "check_novelty", path, None)
                self.tool(step, f"idea {k}.{i}", fails=(self.turn % 50 == 0))
                self.chat(step, "check_novelty", path, json.dumps({"novel": i % 2 == 0, "reason": "no prior work"}))
                self.done(step, {"novel": i % 2 == 0, "reason": "no prior work"}, "novel" if i % 2 == 0 else "known")
            self.end(batch, {})
            self.chat(stage, name, f"research_agent → {name}", f"{name}: {STEPS} ideas checked, 2 novel")
            self.done(stage, {"stage": name, "ideas": STEPS}, f"{name} done")
        self.chat(root, "research_agent", "research_agent", "Plan ready: a framework with 4 branches.")
        self.done(root, "Plan ready: a framework with 4 branches and 2 novel ideas.")


def generate(path: Path, n_events: int) -> tuple[int, int]:
    """Write a log of at least ``n_events`` span events; returns (events, records)."""
    w = Writer(path)
    number = 0
    while w.events < n_events:
        number += 1
        Run(w, number).go(STAGES)
    w.flush()
    return w.events, w.records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="time each side this many times, keep the best")
    args = ap.parse_args()
    path = Path(tempfile.mkdtemp(prefix="callctx-bench-")) / "events.jsonl"
    n, records = generate(path, args.events)
    size = path.stat().st_size

    t_decode = t_fold = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        decoded = sum(1 for _ in read_log(path))
        t_decode = min(t_decode, time.perf_counter() - t0)

        t0 = time.perf_counter()
        p = Projection.from_log(path)
        t_fold = min(t_fold, time.perf_counter() - t0)
        assert p.events == n and decoded == records, (p.events, n, decoded, records)
        del p

    rate, base = n / t_fold, n / t_decode
    print(f"replay of {n:,} events ({records:,} records with the blobs, {size / 2**20:.0f} MiB)")
    print(f"  decode only (baseline)  {t_decode:6.2f} s   {base:12,.0f} events/s")
    print(f"  decode + fold           {t_fold:6.2f} s   {rate:12,.0f} events/s   {rate / base:.2f} of the baseline")
    print(
        f"replay throughput: {rate:,.0f} events/s (target >= {TARGET:,}: {'met' if rate >= TARGET else 'not met'}), "
        f"baseline {base:,.0f} events/s, ratio {rate / base:.2f} (target >= {TARGET_RATIO}: "
        f"{'met' if rate / base >= TARGET_RATIO else 'not met'})"
    )
    path.unlink()
    path.parent.rmdir()


if __name__ == "__main__":
    main()

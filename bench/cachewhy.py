"""The cache ledger over a 10,000-call log: its time per call, and the page's first open of the
log's last call.

Two logs of ``--calls`` model calls each, written beforehand:

* **ours**: the research agent of ``callctx demo`` run again and again, ten runs a session
  (its calls recorded by the callctx runtime: manifests and texts, rebuilt for the ledger);
* **framework**: sessions of a chat agent another instrumentation traced (GenAI chat spans
  with their system text, a conversation that grows by a turn a call, and the cache read and
  write its provider reported; a timestamp in the system text every 50th call busts it).

Figures, each against a baseline measured in the same run:

* ledger time per call (:meth:`LedgerView.entries` over a fresh store), against the cache
  simulation alone over the same calls (what ``callctx cache LOG`` does: rebuild and simulate,
  no comparison, no reason) for ours, and against reading and reconstructing the spans alone
  for the framework's;
* the page's first open of the last call once the store has caught up (``callctx ui`` and
  ``serve`` keep the ledger up to date as the log grows: :meth:`LocalStore.follow`), target
  at most 300 ms; against the first open with another provider's cache asked for (a what-if
  the ledger does not hold: every call before it is simulated first, as every first open was
  before the ledger). Also printed: the first open on a store that has not caught up, the
  ledger built on the way, and as ``callctx ui`` and ``serve`` answer it (at once, the cache
  pane pending until the ledger reaches the call).

    python bench/cachewhy.py [--calls 10000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from callctx import setup
from callctx.cli.research_agent import run
from callctx.components import cache
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted, encode
from callctx.projection.log import EventLog
from callctx.store.contexts import reconstruct, restore
from callctx.store.ledger import LedgerView
from callctx.store.local import LocalStore
from callctx.store.model import Filter
from callctx.ui.simulation import LogSimulation
from callctx.ui.views import Views

TARGET_MS = 300.0
SESSION = 40  # framework calls per session
RUNS = 10  # runs of the research agent per session of ours
SYSTEM = " ".join(f"Follow rule {i}: answer in the customer's language and cite the policy." for i in range(120))


def our_log(path: Path, calls: int) -> int:
    """Sessions of ``RUNS`` runs of the research agent (11 calls a run) until ``calls``."""
    per_run = 11
    runs = -(-calls // per_run)
    for first in range(0, runs, RUNS):
        rt = setup(path, session_id=f"bench-{first // RUNS}")
        for _ in range(min(RUNS, runs - first)):
            run(rt)
        rt.close()
    with LocalStore(path) as store:
        return store.state().calls


def framework_log(path: Path, calls: int) -> int:
    t0 = 1_800_000_000 * 10**9
    with EventLog(path) as log:
        for n in range(calls):
            conv, turn = divmod(n, SESSION)
            trace = format(0xF00D0000 + conv, "032x")
            span = format(n + 1, "016x")
            system = SYSTEM if n % 50 != 49 else SYSTEM.replace("rule 60", f"rule 60 (now {n})")
            messages = [{"role": "user", "parts": [{"type": "text", "content": f"question {k} of session {conv}"}]}
                        for k in range(turn + 1)]  # fmt: skip
            start = t0 + n * 2 * 10**9
            attrs = {s.OPERATION: s.OP_CHAT, s.REQUEST_MODEL: "claude-sonnet-4-5", s.PROVIDER: "anthropic",
                     s.AGENT_NAME: "support", s.CONVERSATION: f"session-{conv}",
                     s.SYSTEM_INSTRUCTIONS: json.dumps([{"type": "text", "content": system}]),
                     s.INPUT_MESSAGES: json.dumps(messages)}  # fmt: skip
            end = {s.USAGE_INPUT: 40, s.USAGE_OUTPUT: 20, s.USAGE_CACHE_READ: 3000 if turn else 0,
                   s.USAGE_CACHE_WRITE: 0 if turn else 3000}  # fmt: skip
            log.write(encode(SpanStarted(trace, span, None, "chat claude-sonnet-4-5", start, attrs, 1,
                                         {"service.name": "support-bot"})))  # fmt: skip
            log.write(encode(SpanEnded(trace, span, start + 10**9, "ok", None, end)))
    return calls


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def all_calls(store: LocalStore, f: Filter) -> list:
    out, offset = [], 0
    while offset is not None:
        page = store.calls(f, offset=offset, limit=1000)
        out += page.items
        offset = page.next_offset
    return out


def simulate_only(path: Path) -> int:
    """The cache simulation alone over our calls: rebuild each, step the simulator."""
    with LocalStore(path) as store:
        own = all_calls(store, Filter(ours=True))
        sim = LogSimulation("anthropic", own[0].model or "", None, cache.Tokenizer())

        def restored(chunk):
            return [restore(rec.call, rec.texts) for rec in store.recorded_many(chunk)]

        sim.upto(own, len(own) - 1, restored)
        return len(own)


def reconstruct_only(path: Path) -> int:
    with LocalStore(path) as store:
        calls = all_calls(store, Filter())
        for at in range(0, len(calls), 500):
            for rec in store.recorded_many(calls[at : at + 500]):
                reconstruct(rec)
        return len(calls)


def ledger(path: Path) -> int:
    with LocalStore(path) as store:
        return len(LedgerView(store).entries())


def first_open(path: Path, *, caught_up: bool, provider: str | None = None, wait: bool = True) -> float:
    with LocalStore(path) as store:
        n = store.state().calls
        if caught_up:
            store.ledger.update()  # what follow() has done by the time a person opens the page
        views = Views(store, wait_for_cache=wait)
        took, _ = timed(lambda: views.call(n, provider))
        return took * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=10_000)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="callctx-bench-cachewhy-"))
    ours, theirs = folder / "ours.jsonl", folder / "framework.jsonl"
    t, n_ours = timed(lambda: our_log(ours, args.calls))
    print(f"ours: {n_ours:,} calls written in {t:.1f} s ({ours.stat().st_size / 1e6:.0f} MB)")
    framework_log(theirs, args.calls)
    print(f"framework: {args.calls:,} calls ({theirs.stat().st_size / 1e6:.0f} MB)")
    for p in (ours, theirs):  # index both first: the figures are the ledger's, not the indexer's
        LocalStore(p).close()

    base, _ = timed(lambda: simulate_only(ours))
    took, n = timed(lambda: ledger(ours))
    print(f"\nledger, ours:      {took / n * 1e3:.3f} ms a call  (simulation alone {base / n * 1e3:.3f} ms; "
          f"ratio {took / base:.2f})")  # fmt: skip
    base, _ = timed(lambda: reconstruct_only(theirs))
    took, n = timed(lambda: ledger(theirs))
    print(f"ledger, framework: {took / n * 1e3:.3f} ms a call  (reading the spans alone {base / n * 1e3:.3f} ms; "
          f"ratio {took / base:.2f})")  # fmt: skip

    print()
    for name, p in (("ours", ours), ("framework", theirs)):
        hot = first_open(p, caught_up=True)
        verdict = "met" if hot <= TARGET_MS else "NOT met"
        line = (
            f"first open of the last call, {name}: {hot:.0f} ms once caught up (target {TARGET_MS:.0f} ms: {verdict})"
        )
        if name == "ours":
            old = first_open(p, caught_up=True, provider="openai")
            line += f"; simulating every call before it {old:.0f} ms (ratio {hot / old:.3f})"
        cold = first_open(p, caught_up=False)
        shown = first_open(p, caught_up=False, wait=False)
        print(
            line + f"; not caught up: {cold:.0f} ms with the ledger built on the way, {shown:.0f} ms shown with its "
            "cache pane pending (callctx ui, serve)"
        )


if __name__ == "__main__":
    main()

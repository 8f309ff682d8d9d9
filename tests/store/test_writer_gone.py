"""A span that never ended reads as ``running`` while its writer holds the log, and as
``interrupted`` once the writer is gone (however it went): in the store's listings, its trees,
the CLI and the page's API alike."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

from helpers.cli import cli_ok

from callctx.projection.log import EventLog, writers_alive
from callctx.store.local import LocalStore

WRITER = textwrap.dedent(
    """
    import sys
    from callctx import ScriptedModel, agentic, setup

    class Waiting(ScriptedModel):
        def complete(self, request):
            print("in the call", flush=True)
            sys.stdin.readline()  # blocked here until the test kills the process
            return super().complete(request)

    rt = setup(sys.argv[1], model=Waiting())

    @agentic
    def plan():
        return rt.exec("hello")

    plan()
    """
)


def _statuses(store: LocalStore) -> tuple[str, str, list[str]]:
    (call,) = store.calls().items
    (tree,) = store.trees().items
    roots = store.spans(tree.key).items
    return call.status, tree.status, [r.status for r in roots]


def test_a_killed_writers_calls_read_as_interrupted_everywhere(tmp_path):
    log = tmp_path / "events.jsonl"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline() == "in the call\n"  # the chat span has started and is in the file
        store = LocalStore(log)
        try:
            assert writers_alive(log)
            assert _statuses(store) == ("running", "running", ["running"])
            before = store.state().cursor
            assert "running" in cli_ok("calls", log)
            writer.send_signal(signal.SIGKILL)
            writer.wait()
            assert not writers_alive(log)
            assert store.state().cursor != before  # the page's poll sees a change with no new bytes
            assert _statuses(store) == ("interrupted", "interrupted", ["interrupted"])
            assert "interrupted" in store.span_tree(store.spans(store.trees().items[0].key).items[0].span_id,
                                                    final=True)  # fmt: skip
        finally:
            store.close()
        out = cli_ok("calls", log)
        assert "interrupted" in out and "running" not in out
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        writer.stdout.close()
        writer.stdin.close()


def test_a_log_is_held_from_open_to_close(tmp_path):
    path = tmp_path / "events.jsonl"
    assert not writers_alive(path)  # no file: nobody writes it
    first, second = EventLog(path), EventLog(path)
    assert writers_alive(path)
    first.close()
    assert writers_alive(path)  # another writer still has it open
    second.close()
    assert not writers_alive(path)


def test_finished_given_outright_is_not_asked(tmp_path):
    path = tmp_path / "events.jsonl"
    with EventLog(path):
        held, live = LocalStore(path, finished=True), LocalStore(path)
        try:
            held.state(), live.state()
            assert held.finished and not live.finished
        finally:
            held.close(), live.close()
    live = LocalStore(path)
    try:
        live.state()
        assert live.finished  # the last writer closed it
    finally:
        live.close()

"""The six memory tools, end to end: the scripted model calls them through the runtime's tool
loop; refusals reach the model as error results; every edit is recorded in the trace."""

from __future__ import annotations

import json
import os
import stat

import pytest

from callctx import FileMemory, ScriptedModel, agentic, setup, tool_call
from callctx.components.memory_store import MAX_NOTE_CHARS, MemoryAccessError, MemoryTools
from callctx.components.wire.exchange import ToolResults
from callctx.engine.memory_tools import MEMORY_TOOL_NAMES, memory_tools
from callctx.projection import read_log
from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted


def calls_of(*calls):
    """One scripted answer asking for several tool calls at once."""
    return {"tool_calls": [c["tool_calls"][0] for c in calls]}


@pytest.fixture
def env(tmp_path):
    """(runtime, memory, seen call records, run(function name, script answers))."""
    mem = FileMemory(tmp_path / "mem")
    model = ScriptedModel({})
    rt = setup(tmp_path / "e.jsonl", memory=mem, model=model)
    seen = []
    rt.on_call(seen.append)

    def run(name, answers):
        model.script = {name: answers}

        def body():
            return rt.exec(f"please {name}", tools=memory_tools(rt.config.base.memory))

        body.__name__ = body.__qualname__ = name
        return agentic(body)()

    yield rt, mem, seen, run
    rt.close()


def results(seen):
    """Every tool result the model was sent, in order (the last call carries the whole loop)."""
    return [r for e in seen[-1].exchanges if isinstance(e, ToolResults) for r in e.results]


def test_the_six_tools_and_their_schemas(tmp_path):
    tools = memory_tools(FileMemory(tmp_path / "m"))
    assert [t.name for t in tools] == list(MEMORY_TOOL_NAMES) == [
        "memory_search", "memory_read", "memory_list", "memory_write", "memory_edit", "memory_forget",
    ]  # fmt: skip
    by = {t.name: t.spec for t in tools}
    assert by["memory_edit"].parameters["required"] == ["path", "old", "new"]
    assert by["memory_write"].parameters["additionalProperties"] is False
    assert all("notes/" in t.spec.description and t.spec.description for t in tools)
    assert isinstance(FileMemory(tmp_path / "m"), MemoryTools)
    with pytest.raises(TypeError):
        memory_tools(object())


def test_write_read_search_list_edit_forget(env, tmp_path):
    _rt, mem, seen, run = env
    out = run(
        "remember",
        [
            tool_call("memory_write", path="notes/tea.md", text="The user prefers tea.\n\nTea with milk, no sugar."),
            calls_of(
                tool_call("memory_read", path="notes/tea.md"),
                tool_call("memory_search", query="what does the user prefer to drink? tea"),
                tool_call("memory_list"),
                tool_call("memory_list", prefix="projects/"),
            ),
            "saved",
        ],
    )
    assert out == "saved"
    write, read, search, listed, empty = results(seen)
    assert not any(r.is_error for r in (write, read, search, listed, empty))
    assert write.content == "created notes/tea.md (47 characters)"
    assert read.content == "The user prefers tea.\n\nTea with milk, no sugar."
    assert search.content.startswith("- (notes/tea.md) The user prefers tea.")
    assert listed.content == "notes/tea.md"
    assert empty.content == "no memory files under 'projects/'"
    note = mem.workspace / "notes" / "tea.md"
    assert stat.S_IMODE(note.stat().st_mode) == 0o600
    assert stat.S_IMODE(note.parent.stat().st_mode) == 0o700
    assert os.listdir(note.parent) == ["tea.md"]  # no temp file left behind
    assert mem.recall("tea") and "tea" in mem.recall("tea")[0]  # the prefetch sees the note too

    seen.clear()
    run(
        "revise",
        [
            tool_call("memory_edit", path="notes/tea.md", old="Tea", new="Green tea"),  # case-sensitive: once
            tool_call("memory_edit", path="notes/tea.md", old="tea", new="coffee"),  # twice now: ambiguous
            tool_call("memory_edit", path="notes/tea.md", old="cocoa", new="x"),  # absent
            "revised",
        ],
    )
    once, ambiguous, absent = results(seen)
    assert not once.is_error and "replaced 1 occurrence" in once.content
    assert ambiguous.is_error and "occurs 2 times" in ambiguous.content and "Nothing changed" in ambiguous.content
    assert absent.is_error and "not found" in absent.content
    assert note.read_text() == "The user prefers tea.\n\nGreen tea with milk, no sugar."

    seen.clear()
    run(
        "tidy",
        [
            tool_call("memory_forget", path="notes/tea.md"),
            tool_call("memory_read", path="notes/tea.md"),
            tool_call("memory_forget", path="core.md"),
            tool_call("memory_list"),
            "done",
        ],
    )
    forgot, gone, core, listed = results(seen)
    assert not forgot.is_error and forgot.content == "forgot notes/tea.md"
    assert gone.is_error and gone.content.startswith("FileNotFoundError") and "notes/tea.md" in gone.content
    assert core.is_error and "core.md" in core.content
    assert listed.content == "no memory files yet"
    assert not note.exists()


def test_the_edit_is_recorded_in_the_trace(env):
    rt, mem, _seen, run = env
    run(
        "note",
        [
            tool_call("memory_write", path="projects/callctx.md", text="Status: draft"),
            tool_call("memory_edit", path="projects/callctx.md", old="draft", new="released"),
            "ok",
        ],
    )
    rt.close()
    records = list(read_log(rt.log_path))
    starts = [r for r in records if isinstance(r, SpanStarted) and r.name == "execute_tool memory_edit"]
    assert len(starts) == 1
    (start,) = starts
    assert start.attributes[s.TOOL_NAME] == "memory_edit"
    assert json.loads(start.attributes[s.TOOL_ARGUMENTS]) == {
        "path": "projects/callctx.md", "old": "draft", "new": "released",
    }  # fmt: skip
    (end,) = [r for r in records if isinstance(r, SpanEnded) and r.span_id == start.span_id]
    assert "edited projects/callctx.md" in end.attributes[s.TOOL_RESULT]
    assert end.status != "error"
    assert mem.read("projects/callctx.md") == "Status: released"


def test_paths_outside_the_folder_are_refused(env, tmp_path):
    _rt, mem, seen, run = env
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("the secret")
    (mem.workspace / "notes").mkdir(parents=True)
    (mem.workspace / "notes" / "link.md").symlink_to(secret)
    (mem.workspace / "projects").symlink_to(outside, target_is_directory=True)
    run(
        "escape",
        [
            calls_of(
                tool_call("memory_write", path="../x.md", text="escaped"),
                tool_call("memory_read", path="/etc/passwd"),
                tool_call("memory_write", path="/tmp/abs.md", text="escaped"),
                tool_call("memory_read", path="notes/link.md"),
                tool_call("memory_write", path="notes/link.md", text="overwritten"),
                tool_call("memory_edit", path="notes/link.md", old="secret", new="gone"),
                tool_call("memory_forget", path="notes/link.md"),
                tool_call("memory_write", path="projects/new.md", text="escaped"),
                tool_call("memory_write", path="notes/evil.txt", text="not markdown"),
                tool_call("memory_write", path="notes/x.md", text="x", mode="0777"),  # unknown argument
            ),
            "refused",
        ],
    )
    got = results(seen)
    assert len(got) == 10 and all(r.is_error for r in got), got
    dotdot, passwd, absolute, read_link, write_link, edit_link, forget_link, via_dir, txt, extra = got
    assert "MemoryAccessError" in dotdot.content and "'..'" in dotdot.content
    assert "absolute" in passwd.content and "absolute" in absolute.content
    for r in (read_link, write_link, edit_link, forget_link, via_dir):
        assert "MemoryAccessError" in r.content and "outside the memory folder" in r.content, r
    assert ".md" in txt.content
    assert "invalid arguments" in extra.content
    assert secret.read_text() == "the secret"
    assert sorted(os.listdir(outside)) == ["secret.md"]
    assert not (tmp_path / "x.md").exists() and not os.path.exists("/tmp/abs.md")
    assert "the secret" not in read_link.content
    assert mem.list() == []  # the links leaving the folder are not listed either


def test_oversized_write_is_refused(env):
    _rt, mem, seen, run = env
    run(
        "dump",
        [
            tool_call("memory_write", path="notes/big.md", text="x" * (MAX_NOTE_CHARS + 1)),
            tool_call("memory_write", path="notes/big.md", text="x" * MAX_NOTE_CHARS),
            tool_call("memory_edit", path="notes/big.md", old="x" * MAX_NOTE_CHARS, new="y" * (MAX_NOTE_CHARS + 1)),
            "ok",
        ],
    )
    too_big, at_limit, grown = results(seen)
    assert too_big.is_error and "over the limit" in too_big.content and "Nothing was written" in too_big.content
    assert not at_limit.is_error
    assert grown.is_error and "over the limit" in grown.content
    assert mem.read("notes/big.md") == "x" * MAX_NOTE_CHARS


def test_store_edges(tmp_path):
    mem = FileMemory(tmp_path / "m")
    assert mem.list() == [] and mem.search("anything") == []
    mem.write("core.md", "Core facts.")
    assert mem.write("core.md", "Core facts, revised.") == "replaced core.md (20 characters)"
    assert mem.core() == "Core facts, revised."
    for bad in ("", "notes/", "notes/.hidden.md", "notes//a.md", "./a.md", "a\\b.md", "C:/x.md", "a" * 300 + ".md"):
        with pytest.raises(MemoryAccessError):
            mem.write(bad, "x")
    with pytest.raises(ValueError, match="empty"):
        mem.edit("core.md", "", "x")
    with pytest.raises(FileNotFoundError):
        mem.edit("notes/none.md", "a", "b")
    with pytest.raises(FileNotFoundError):
        mem.forget("notes/none.md")
    (mem.workspace / "notes").mkdir()
    (mem.workspace / "notes" / "dir.md").mkdir()
    with pytest.raises(MemoryAccessError, match="not a regular file"):
        mem.write("notes/dir.md", "x")
    # a link that stays inside the folder acts on its target
    (mem.workspace / "notes" / "alias.md").symlink_to(mem.workspace / "core.md")
    mem.edit("notes/alias.md", "revised", "edited")
    assert mem.read("core.md") == "Core facts, edited."
    assert mem.list() == ["core.md", "notes/alias.md"]
    assert mem.list("notes") == ["notes/alias.md"]


def test_concurrent_edits_are_not_lost(tmp_path):
    import threading

    mem = FileMemory(tmp_path / "m")
    mem.write("notes/todo.md", "\n".join(f"[{i}]" for i in range(16)))
    start = threading.Barrier(16)

    def edit(i):
        start.wait()
        mem.edit("notes/todo.md", f"[{i}]", f"[{i} done]")

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mem.read("notes/todo.md") == "\n".join(f"[{i} done]" for i in range(16))
    assert os.listdir(mem.workspace / "notes") == ["todo.md"]

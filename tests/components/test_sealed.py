"""The block-stable layout: tree blocks once sent are sent again byte-identical, as the same
blocks; the previous call's breakpoint stays a block boundary and within Anthropic's 20-block
lookback of the next one; the strict, block-keyed cache then hits as the text-keyed one does.
OpenAI (GPT-5.6 on) finds entries only at the request's own marks: the layout names the block
where an earlier call put one, and the OpenAI wire and the simulator mark it."""

from __future__ import annotations

import itertools

from callctx import ScriptedModel, setup
from callctx.cli.research_agent import SKILLS, demo_workspace, run, scaled_script
from callctx.components.cache import Simulator, Tokenizer, request_of
from callctx.components.context import TreeText
from callctx.components.inputs import Sealed
from callctx.components.sealed import lay_out


def _run(tmp_path, rounds=6):
    workspace, memory = demo_workspace(tmp_path, scale=2)
    rt = setup(tmp_path / "events.jsonl", workspace=workspace, memory=memory, skills=SKILLS, session_id="s")
    try:
        return run(rt, model=ScriptedModel(scaled_script(rounds), model="claude-sonnet-4-5"))
    finally:
        rt.close()


def test_sent_blocks_go_out_again_whole(tmp_path):
    calls = _run(tmp_path)
    trees = [c.context.segment("call_tree") for c in calls]
    trees = [t for t in trees if t is not None]
    assert len(trees) > 40
    resplit = reused = 0
    for prev, cur in itertools.pairwise(trees):
        assert "".join(cur.blocks) == cur.text
        # every leading block of the previous call that the new text still starts with is reused whole
        pos = k = 0
        while k < len(prev.blocks) and cur.text.startswith(prev.blocks[k], pos):
            pos += len(prev.blocks[k])
            k += 1
        reused += k
        if cur.blocks[:k] != prev.blocks[:k]:
            resplit += 1
        # the previous breakpoint is a boundary of this call's blocks whenever its text is still there
        ends = list(itertools.accumulate(len(b) for b in cur.blocks))
        prev_end = sum(len(b) for b in prev.blocks[: prev.breakpoint_block + 1])
        if prev.breakpoint_block < k:
            assert prev_end in ends
            assert cur.breakpoint_block - ends.index(prev_end) <= 20  # within the lookback
    assert resplit == 0 and reused > len(trees)


def test_block_keyed_hits_match_text_keyed_ones(tmp_path):
    calls = _run(tmp_path)
    tok = Tokenizer()
    reqs = [request_of(c.context, c.exchanges, time_s=i * 10.0, tokenize=tok) for i, c in enumerate(calls)]
    block = Simulator("anthropic", "claude-sonnet-4-5", key="block").run(reqs)
    text = Simulator("anthropic", "claude-sonnet-4-5", key="text").run(reqs)
    assert block.read > 0.5 * block.total
    assert block.limit_share >= 0.9 and abs(block.limit_share - text.limit_share) < 0.05


def test_new_blocks_merge_to_stay_within_reach():
    chunks = [f"- function: f{i}\n" for i in range(60)]
    cuts = list(itertools.accumulate(len(c) for c in chunks))[:-1]
    tree = TreeText(chunks, cuts, here=cuts[-1])
    first = lay_out(tree, "\n\n", max_gap=16)
    assert len(first.blocks) <= 16 and first.breakpoint == len(first.blocks) - 2
    grown = TreeText([*chunks, "- function: g\n"], [*cuts, cuts[-1] + len(chunks[-1])], cuts[-1] + len(chunks[-1]))
    second = lay_out(grown, "\n\n", [Sealed(tuple(first.blocks), first.breakpoint)], max_gap=16)
    assert second.blocks[: first.breakpoint + 1] == first.blocks[: first.breakpoint + 1]  # sealed: unchanged
    assert second.reused >= first.breakpoint + 1
    assert second.breakpoint - first.breakpoint <= 16


def test_the_layout_names_where_an_earlier_call_put_a_breakpoint():
    chunks = [f"- function: f{i}\n" for i in range(6)]
    cuts = list(itertools.accumulate(len(c) for c in chunks))[:-1]
    first = lay_out(TreeText(chunks, cuts, here=cuts[3], parent=cuts[1]), "\n\n")
    assert first.reuse is None  # no earlier call
    sealed = Sealed(tuple(first.blocks), first.breakpoint, first.parent)
    # a sibling after it: its text still holds the earlier call's breakpoint block, which it names
    grown = TreeText([*chunks[:4], "- function: f3 done\n", "- function: g\n"], cuts, here=cuts[4], parent=cuts[1])
    sibling = lay_out(grown, "\n\n", [sealed])
    assert sibling.reuse == first.breakpoint
    assert sibling.blocks[: first.breakpoint + 1] == first.blocks[: first.breakpoint + 1]
    # moving up a level: the text parts before the earlier call's breakpoint; its parent block remains
    up = TreeText([*chunks[:2], "- function: f2 done\n", "- function: h\n"], cuts[:3], here=cuts[2], parent=None)
    upper = lay_out(up, "\n\n", [sealed])
    assert upper.reuse == first.parent


def _openai_run(tmp_path, wire, rounds=3):
    workspace, memory = demo_workspace(tmp_path, scale=2)
    rt = setup(tmp_path / "events.jsonl", workspace=workspace, memory=memory, skills=SKILLS, session_id="s")
    script = scaled_script(rounds)
    try:
        return rt.log_path, run(rt, model=ScriptedModel(script, model="gpt-5.6-sol", wire=wire))
    finally:
        rt.close()


def test_breakpoint_bodies_rebuild_from_the_log_byte_for_byte(tmp_path):
    from helpers.stores import rebuilt_calls

    log, calls = _openai_run(tmp_path, "openai-responses")
    rebuilt = rebuilt_calls(log)
    assert len(rebuilt) == len(calls) and all(d.verified for d in rebuilt)
    trees = [d.context.segment("call_tree") for d in rebuilt]
    assert any(t is not None and t.reuse_block is not None for t in trees)  # recorded, and restored
    assert [d.body for d in rebuilt] == [c.body for c in calls]


def test_the_simulator_marks_where_the_openai_wire_marks(tmp_path):
    import json

    _, calls = _openai_run(tmp_path, "openai-chat")
    tok = Tokenizer()
    for c in calls:
        req = request_of(c.context, c.exchanges, tokenize=tok, marking="openai")
        assert sum(b.breakpoint for b in req.blocks) == json.dumps(c.body).count('"prompt_cache_breakpoint"')
        assert req.route == c.body["prompt_cache_key"]


def test_openai_breakpoint_caching_reaches_the_limit(tmp_path):
    _, calls = _openai_run(tmp_path, "openai-chat", rounds=6)
    tok = Tokenizer()
    sim = Simulator("openai", "gpt-5.6-sol")
    for marking, share in (("openai", 0.95), ("anthropic", 0.0)):
        reqs = [request_of(c.context, c.exchanges, time_s=i * 10.0, tokenize=tok, marking=marking)
                for i, c in enumerate(calls)]  # fmt: skip
        reached = Simulator("openai", "gpt-5.6-sol").run(reqs).limit_share
        if marking == "openai":
            assert sim.row == "openai-explicit" and sim.marking == "openai" and reached >= share
        else:  # Anthropic's marks alone: OpenAI finds no entry an earlier call left at an unmarked block
            assert reached < 0.9

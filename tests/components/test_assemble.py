"""The assembler: layers, order, conditions, layout, breakpoints, problems, determinism."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from helpers.contexts import base_ctx, clock

from callctx.components import (
    ContextComponent,
    FileMemory,
    Registry,
    RegistryError,
    Turn,
    assemble,
    default_registry,
)
from callctx.components.turn import decision


def comp(name, layer, order, text="x", **kw):
    return ContextComponent(name, layer, order, lambda ctx: text, **kw)


def test_registry_register_replace_unregister():
    r = Registry()
    r.register(comp("a", "L0", 5))
    with pytest.raises(RegistryError, match="already registered"):
        r.register(comp("a", "L0", 1))
    r.register(comp("a", "L0", 1, "new"), replace=True)
    assert r.get("a").order == 1
    r.unregister("a")
    assert "a" not in r
    with pytest.raises(RegistryError):
        r.unregister("a")
    with pytest.raises(ValueError, match="layer"):
        ContextComponent("bad", "L3", 1, lambda ctx: "")


def test_ordering_by_layer_then_order():
    r = Registry(
        [
            comp("l1_late", "L1", 50, "<l1_late/>"),
            comp("l0_second", "L0", 2, "<l0_second/>"),
            comp("l1_first", "L1", 1, "<l1_first/>"),
            comp("l0_first", "L0", 1, "<l0_first/>"),
            comp("l0_tie_b", "L0", 3, "<l0_tie_b/>"),
            comp("l0_tie_a", "L0", 3, "<l0_tie_a/>"),
        ]
    )
    ctx = base_ctx()
    names = [s.component for s in assemble(ctx, r).segments if s.section == "system"]
    assert names == ["l0_first", "l0_second", "l0_tie_a", "l0_tie_b", "l1_first", "l1_late"]
    assert [c.name for c in r.layer("L0")] == ["l0_first", "l0_second", "l0_tie_a", "l0_tie_b"]


def test_false_conditions_and_empty_builds_are_dropped():
    r = Registry(
        [
            comp("shown", "L0", 1, "<shown/>"),
            comp("off", "L0", 2, "<off/>", condition=lambda ctx: False),
            comp("empty", "L0", 3, ""),
            comp("blank", "L0", 4, "  \n "),
            ContextComponent("none", "L0", 5, lambda ctx: None),
        ]
    )
    c = assemble(base_ctx(), r)
    assert [s.component for s in c.section("system")] == ["shown"]
    assert c.problems == []


def test_l2_component_never_reaches_the_system_part():
    r = default_registry(plugins=False)
    r.register(comp("turn_note", "L2", 25, "<turn_note>per call</turn_note>"))
    c = assemble(base_ctx(), r)
    assert "turn_note" not in c.system
    assert [s.component for s in c.section("turn")] == ["situation", "turn_note", "input"]


def test_layout_sections_and_breakpoints():
    ctx = base_ctx()
    c = assemble(ctx)
    sections = [s.section for s in c.segments]
    assert sections == sorted(sections, key=["tools", "system", "tree", "turn"].index)
    marks = [(s.component, s.layer) for s in c.segments if s.breakpoint]
    # after the last first-layer block (the tools come before it), after the project part
    assert marks == [("environment", "L0"), ("current_date", "L1")]
    assert all(not s.cacheable and not s.breakpoint for s in c.section("turn"))


def test_non_cacheable_component_moves_the_breakpoint_in_front_of_it():
    r = default_registry(plugins=False)
    r.register(comp("volatile", "L0", 8, "<volatile>now</volatile>", cacheable=False))
    c = assemble(base_ctx(), r)
    marked = [s.component for s in c.segments if s.breakpoint and s.layer == "L0" and s.section == "system"]
    assert marked == ["skills_index"]  # the last cacheable block before "volatile"


def test_text_never_names_layers_or_breakpoints(tmp_path):
    (tmp_path / "AGENTS.md").write_text("# Project\nBuild things.\n")
    mem = FileMemory(tmp_path / "mem")
    c = assemble(base_ctx(workspace=tmp_path, memory=mem))
    for word in ("L0", "L1", "L2", "breakpoint"):
        assert re.search(rf"\b{word}\b", c.text, re.I) is None, word


def test_blocks_are_paired_xml_tags():
    c = assemble(base_ctx())
    for s in c.segments:
        if s.section in ("tools",) or s.component in ("current_date", "input"):
            continue
        m = re.match(r"<([a-z_-]+)[ >]", s.text)
        assert m, s.text
        assert s.text.rstrip().endswith(f"</{m.group(1)}>"), s.component


def test_deterministic_assembly(tmp_path):
    (tmp_path / "AGENTS.md").write_text("# Project\n")
    ctx = base_ctx(workspace=tmp_path)
    a, b = assemble(ctx), assemble(ctx)
    assert a == b
    assert a.text == b.text


def test_clock_past_midnight_changes_nothing_before_the_date():
    before = assemble(base_ctx(clock=clock(datetime(2026, 6, 24, 23, 59))))
    after = assemble(base_ctx(clock=clock(datetime(2026, 6, 24, 23, 59) + timedelta(minutes=2))))
    i = next(i for i, s in enumerate(before.segments) if s.component == "current_date")
    assert before.segments[:i] == after.segments[:i]
    assert before.segments[i].text != after.segments[i].text
    assert "Today is Wednesday, June 24, 2026." in before.segments[i].text
    assert "Thursday, June 25, 2026" in after.segments[i].text


def test_changed_memory_prefetch_changes_only_the_turn():
    a = assemble(base_ctx(turn=Turn(function="f", user_input="q", prefetch="- likes tea")))
    b = assemble(base_ctx(turn=Turn(function="f", user_input="q", prefetch="- likes coffee")))
    assert [s for s in a.segments if s.section != "turn"] == [s for s in b.segments if s.section != "turn"]
    assert a.turn != b.turn


@pytest.mark.parametrize(
    ("channel", "expect"),
    [
        ("webui", "Full Markdown"),
        ("telegram", "Use Markdown"),
        ("discord", "Use Markdown"),
        ("slack", "mrkdwn"),
        ("wechat", "Plain text only"),
        ("sms", "at most 160 characters"),
    ],
)
def test_channel_condition(channel, expect):
    c = assemble(base_ctx(channel=channel))
    seg = c.segment("platform_format")
    assert expect in seg.text and f"[Output channel: {channel}]" in seg.text


def test_sms_limit_and_unknown_channel():
    sms = assemble(base_ctx(channel="sms", channel_limit=70)).segment("platform_format")
    assert "at most 70 characters" in sms.text
    assert assemble(base_ctx(channel="carrier-pigeon")).segment("platform_format") is None


def test_provider_condition():
    openai = assemble(base_ctx(provider="openai")).segment("model_guidance")
    google = assemble(base_ctx(provider="gemini")).segment("model_guidance")
    assert "[Execution guidance (openai)]" in openai.text
    assert "absolute paths" in google.text
    assert assemble(base_ctx(provider="anthropic")).segment("model_guidance") is None  # native tool use
    assert assemble(base_ctx(provider="unknown")).segment("model_guidance") is None


def test_raising_component_is_reported_not_silent(caplog):
    def boom(ctx):
        raise RuntimeError("disk on fire")

    r = default_registry(plugins=False)
    r.register(ContextComponent("fragile", "L1", 3, boom))
    c = assemble(base_ctx(), r)
    assert [p.component for p in c.problems] == ["fragile"]
    assert "disk on fire" in c.problems[0].error
    assert "fragile" in caplog.text
    assert c.segment("identity") is not None  # the rest is still there


def test_raising_component_becomes_a_span_event():
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("t")
    r = Registry([ContextComponent("fragile", "L0", 1, lambda ctx: 1 / 0)])
    with tracer.start_as_current_span("call") as span:
        assemble(base_ctx(), r)
    assert [e.name for e in span.events] == ["callctx.component_failed"]
    assert span.events[0].attributes["callctx.component"] == "fragile"


def test_wrong_return_type_is_a_problem():
    r = Registry([ContextComponent("number", "L0", 1, lambda ctx: 42)])
    c = assemble(base_ctx(), r)
    assert c.problems and "int" in c.problems[0].error


def test_no_subprocess_during_assembly(tmp_path, monkeypatch):
    import subprocess

    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("x")

    def refuse(*a, **k):
        raise AssertionError("a component spawned a subprocess")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    c = assemble(base_ctx(workspace=tmp_path))
    assert c.segment("git_repo_flag").text.startswith("<git_repo>true</git_repo>")
    assert not c.problems


def test_turn_situation_and_contracts():
    t = Turn(
        function="_lit_decide",
        doc="Pick the next literature-stage action (seed_surveys / extract_framework / done). Details follow.",
        call_path=["research_agent", "literature", "_lit_decide"],
        position="literature decision step",
        output_contract=decision(),
        user_input="Research direction: LLM-as-Code",
        output_schema={"type": "object", "properties": {"action": {"enum": ["seed_surveys", "done"]}}},
    )
    c = assemble(base_ctx(turn=t))
    s = c.segment("situation").text
    assert "You are running INSIDE the agentic function `_lit_decide`." in s
    assert "Job: Pick the next literature-stage action (seed_surveys / extract_framework / done).\n" in s
    assert "Call path: research_agent → literature → _lit_decide" in s
    assert "Position: literature decision step" in s
    assert "Your output will be parsed by the caller into a decision" in s
    assert "do NOT call it" in s
    order = [seg.component for seg in c.section("turn")]
    assert order == ["situation", "input", "output_schema"]


def test_turn_without_doc_omits_job_and_caps_long_paths():
    from callctx.components.turn import artifact, passed_to

    t = Turn(function="g", call_path=[f"f{i}" for i in range(20)], output_contract=passed_to("h", "x"))
    s = assemble(base_ctx(turn=t)).segment("situation").text
    assert "Job:" not in s
    assert "Call path: f0 → f1 → … →" in s and s.count("→") == 7 and "f19" in s
    assert "Your output is passed to `h` as its `x`." in s
    expected = "Your output becomes `paper.md`, the deliverable consumed by `the reviewer`."
    assert artifact("paper.md", "the reviewer") == expected


def test_top_level_turn_has_no_situation():
    c = assemble(base_ctx(turn=Turn(user_input="hi there")))
    assert [s.component for s in c.section("turn")] == ["input"]


def test_entry_point_plugins(tmp_path, monkeypatch):
    pkg = tmp_path / "callctx_plugin_demo.py"
    pkg.write_text(
        "from callctx.components import ContextComponent\n"
        "BLOCK = ContextComponent('plugin_block', 'L1', 30, lambda ctx: '<plugin>hi</plugin>')\n"
    )
    dist = tmp_path / "callctx_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: callctx-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[callctx.components]\ndemo = callctx_plugin_demo:BLOCK\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    r = default_registry()
    assert "plugin_block" in r
    assert "<plugin>hi</plugin>" in assemble(base_ctx(), r).system


def _plugin(tmp_path, monkeypatch, dist: str, module: str, code: str, entry: str) -> None:
    """Install a plugin distribution on sys.path: a module and its entry point."""
    (tmp_path / f"{module}.py").write_text(code)
    info = tmp_path / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[callctx.components]\n{entry}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


HALFWAY = (
    "from callctx.components import ContextComponent\n"
    "def register(registry):\n"
    "    registry.register(ContextComponent('half_a', 'L1', 31, lambda ctx: '<a/>'))\n"
    "    raise RuntimeError('plugin broke halfway')\n"
)


def test_a_plugin_that_raises_halfway_registers_nothing(tmp_path, monkeypatch, caplog):
    _plugin(tmp_path, monkeypatch, "callctx-halfway", "callctx_halfway", HALFWAY, "halfway = callctx_halfway:register")
    r = default_registry()
    assert "half_a" not in r
    assert "identity" in r  # the built-ins are untouched
    assert "callctx-halfway 1.0" in caplog.text and "plugin broke halfway" in caplog.text


FRAGILE = (
    "from callctx.components import ContextComponent\n"
    "def boom(ctx):\n"
    "    raise ValueError('no luck')\n"
    "BLOCKS = [ContextComponent('fragile_plugin', 'L1', 32, boom)]\n"
)


def test_a_problem_names_the_distribution_of_its_component(tmp_path, monkeypatch):
    _plugin(tmp_path, monkeypatch, "callctx-fragile", "callctx_fragile", FRAGILE, "fragile = callctx_fragile:BLOCKS")
    r = default_registry()
    assert r.origin("fragile_plugin") == "callctx-fragile 1.0"
    assert r.origin("identity") == "callctx"
    problems = assemble(base_ctx(), r).problems
    assert [(p.component, p.origin) for p in problems] == [("fragile_plugin", "callctx-fragile 1.0")]


def test_plugins_can_be_disabled_by_name(tmp_path, monkeypatch):
    _plugin(tmp_path, monkeypatch, "callctx-fragile", "callctx_fragile", FRAGILE, "fragile = callctx_fragile:BLOCKS")
    assert "fragile_plugin" not in default_registry(disable=["fragile"])  # the entry point's name
    assert "fragile_plugin" not in default_registry(disable=["callctx-fragile"])  # the distribution's
    assert "fragile_plugin" in default_registry(disable=["something-else"])


def test_setup_reads_the_disabled_plugins_from_the_environment(tmp_path, monkeypatch):
    from callctx import setup

    _plugin(tmp_path, monkeypatch, "callctx-fragile", "callctx_fragile", FRAGILE, "fragile = callctx_fragile:BLOCKS")
    monkeypatch.setenv("CALLCTX_DISABLE_PLUGINS", "other, callctx-fragile")
    rt = setup()
    try:
        assert "fragile_plugin" not in rt.config.registry
    finally:
        rt.close()
    rt = setup(disable_plugins=["nothing"])
    try:
        assert "fragile_plugin" not in rt.config.registry
    finally:
        rt.close()
    monkeypatch.delenv("CALLCTX_DISABLE_PLUGINS")
    rt = setup()
    try:
        assert "fragile_plugin" in rt.config.registry
    finally:
        rt.close()


def test_registration_validates_before_it_changes_anything():
    r = default_registry(plugins=False)
    before = [c.name for c in r]
    with pytest.raises(RegistryError):
        r.register(ContextComponent("identity", "L0", 1, lambda ctx: "x"))
    with pytest.raises(TypeError):
        r.register("not a component")  # type: ignore[arg-type]
    assert [c.name for c in r] == before
    assert r.get("identity").build is not None and r.origin("identity") == "callctx"

"""Every scalar and value we write parses back to itself."""

from __future__ import annotations

import json

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from callctx.projection import schema as s
from callctx.projection.events import SpanEnded, SpanStarted
from callctx.projection.fold import Projection
from callctx.projection.yamltext import is_plain, key_value, scalar, value_lines

text = st.text(st.characters(codec="utf-8"), max_size=60)
tricky = st.sampled_from(
    [
        "yes",
        "No",
        "null",
        "~",
        "true",
        "1.5",
        "0x1f",
        "12:30",
        "-",
        "- a",
        "a: b",
        "a #b",
        "#x",
        "&a",
        "*a",
        "!t",
        "|",
        ">",
        "'q'",
        '"q"',
        "%x",
        "@x",
        "`x",
        " lead",
        "trail ",
        "a\nb",
        "\n\nlead",
        "trail\n\n",
        "\t",
        "\r\n",
        "\x85",
        "\u2028",
        "\ufeff",
        "\x00",
        "é",
        "进 literature",
        "🙂",
        "a,b",
        "[x]",
        "{x}",
        "? x",
        "=",
        "<<",
        "  \n  indented",
        "x\n  y\n",
        "1e3",
        ".inf",
        "",
        " ",
        "\n",
    ]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text | tricky,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text | tricky, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=600, deadline=None)
@given(value=text | tricky)
@example("-")
def test_scalars_round_trip(value):
    assert yaml.safe_load(f"k: {scalar(value)}\n") == {"k": value}
    assert yaml.safe_load(key_value("k", value, "")) == {"k": value}
    nested = "items:\n  - a: 1\n" + key_value("k", value, "    ")
    assert yaml.safe_load(nested) == {"items": [{"a": 1, "k": value}]}
    if value and is_plain(value):
        assert yaml.safe_load(f"[{value}]") == [value]  # plain scalars are flow-safe too


@settings(max_examples=400, deadline=None)
@given(value=json_values)
def test_json_values_round_trip(value):
    out: list[str] = []
    value_lines("input", value, "  ", out)
    doc = "- function: f\n" + "".join(out)
    assert yaml.safe_load(doc) == [{"function": "f", "input": value}]


@settings(max_examples=200, deadline=None)
@given(name=text.filter(bool) | tricky.filter(bool), inp=json_values, out=text | tricky, err=text)
def test_rendered_tree_parses_to_the_same_structure(name, inp, out, err):
    t = "ab" * 16
    root = {
        s.OPERATION: "invoke_agent",
        s.AGENT_NAME: name,
        s.INPUT_VALUE: json.dumps({"x": inp}),
        s.INPUT_MIME: s.MIME_JSON,
    }
    child = {s.OPERATION: "invoke_agent", s.AGENT_NAME: name}
    p = Projection(output_limit=10_000)
    p.apply_all(
        [
            SpanStarted(t, "1" * 16, None, "r", 1, root),
            SpanStarted(t, "2" * 16, "1" * 16, "c", 2, child),
            SpanEnded(t, "2" * 16, 3, "ok", None, {s.OUTPUT_VALUE: out, s.OUTPUT_MIME: s.MIME_TEXT}),
            SpanStarted(t, "3" * 16, "1" * 16, "c", 4, child),
            SpanEnded(t, "3" * 16, 5, "error", err or "E", {}),
            SpanStarted(t, "4" * 16, "1" * 16, "c", 6, child),
        ]
    )
    tree = yaml.safe_load(p.view("4" * 16).text)
    first_line = (err or "E").strip().splitlines()[0] if (err or "E").strip() else "error"
    assert tree == [
        {
            "function": name,
            "input": {"x": inp},
            "status": "running",
            "children": [
                {"function": name, "output": out},
                {"function": name, "status": "error", "error": first_line},
                {"function": name, "status": "running"},
            ],
        }
    ]

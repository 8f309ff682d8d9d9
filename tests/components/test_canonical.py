"""The request hash's canonical bytes are exactly what ``json.dumps(body, sort_keys=True,
separators=(",", ":"), ensure_ascii=False).encode()`` gives (the bytes hashed before it was
made faster), and fail the same way where that fails."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callctx.components import wire


def reference(body):
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def outcome(fn, body):
    try:
        return fn(body)
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        return (type(e), str(e))


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=600)  # the memoized sizes
    | st.sampled_from(["", "\u2028", "\x00\x1f\x7f", '"\\/', "é→…", "\U0001f600", "a" * 300])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_is_the_reference_encoding(body):
    assert outcome(wire.canonical, body) == outcome(reference, body)


@settings(max_examples=100, deadline=None)
@given(values)
def test_the_same_body_twice_gives_the_same_bytes(body):
    first = outcome(wire.canonical, body)
    assert outcome(wire.canonical, body) == first == outcome(reference, body)


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


@pytest.mark.parametrize(
    "body",
    [
        {"a": float("nan"), "b": [float("inf"), -float("inf")]},
        {1: "int key", 2: "another"},
        {"a": 1, 2: "mixed keys"},
        {None: 1, True: 2},
        {"surrogate": "\ud800"},
        {"enum": Color.RED, "text": Text("sub"), "float": 1e16, "small": 1e-7},
        {"set": {1, 2}},
        {"bytes": b"x"},
        [1, 2.5, "x", None, True, False, (), [], {}],
    ],
)
def test_unusual_values_are_left_to_json(body):
    assert outcome(wire.canonical, body) == outcome(reference, body)


def test_a_cycle_fails_as_json_fails():
    body: dict = {"a": []}
    body["a"].append(body)
    assert outcome(wire.canonical, body) == outcome(reference, body)
    assert outcome(wire.request_hash, body)[0] is ValueError

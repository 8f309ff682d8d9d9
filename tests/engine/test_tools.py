"""Functions described as tools once: the same ``Tool`` every time a function is offered, a
function of its own for every new function object (a closure made per call is described for
itself), and a bounded number kept."""

from __future__ import annotations

from callctx.engine import tools
from callctx.engine.tools import as_tools


def search(query: str, limit: int = 5) -> list[str]:
    """Search the notes."""
    return [query] * limit


def test_a_function_offered_again_is_the_same_tool():
    first, second = as_tools([search]), as_tools([search])
    assert first[0] is second[0]
    assert first[0].spec.name == "search" and first[0].call({"query": "q", "limit": 2}) == ["q", "q"]


def test_each_new_function_object_gets_its_own_description():
    def made(prefix: str):
        def lookup(key: str) -> str:
            """Look a key up."""
            return prefix + key

        return lookup

    a, b = made("a:"), made("b:")
    (ta,), (tb,) = as_tools([a]), as_tools([b])
    assert ta is not tb and ta.fn is a and tb.fn is b
    assert (ta.call({"key": "k"}), tb.call({"key": "k"})) == ("a:k", "b:k")


def test_the_descriptions_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(tools, "_BUILT_MAX", 3)

    def fresh(i: int):
        def f(x: int) -> int:
            return x + i

        return f

    fns = [fresh(i) for i in range(10)]
    described = [as_tools([f])[0] for f in fns]
    assert len(tools._built) == 3
    assert as_tools([fns[-1]])[0] is described[-1]  # the latest are kept
    assert as_tools([fns[0]])[0] is not described[0] and as_tools([fns[0]])[0].fn is fns[0]

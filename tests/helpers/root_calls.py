"""Spans whose calls make trees of their own within one trace, or across traces: what each
store must list as the fold does (root calls: calls with no agentic call above them, keyed by
the first conversation id on them or above them, else by their trace id; a parent in another
trace counts as missing)."""

from __future__ import annotations

from callctx.projection.events import Record, SpanEnded, SpanStarted

T1, T2 = "a1" * 16, "a2" * 16
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 3}


def agent(name: str, conversation: str | None = None) -> dict[str, str]:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    if conversation is not None:
        attrs["gen_ai.conversation.id"] = conversation
    return attrs


def sid(n: int) -> str:
    return format(n, "016x")


def whole(trace: str, n: int, parent: int | None, name: str, start: int, attrs: dict[str, object]) -> list[Record]:
    """A span's start and end (as a receiver writes a finished span)."""
    return [
        SpanStarted(trace, sid(n), sid(parent) if parent else None, name, start, attrs),
        SpanEnded(trace, sid(n), start + 10, "ok"),
    ]


def session_below_a_plain_root() -> list[Record]:
    """An HTTP server span (no session) with an agent of session ``S`` under it: tree ``S``."""
    return [*whole(T1, 1, None, "GET /ask", 0, {}), *whole(T1, 2, 1, "invoke_agent a", 1, agent("a", "S"))]


def lost_parent_under_a_session_root() -> list[Record]:
    """A root span that names session ``S`` with an agent under it, and a model call whose parent
    never arrives: the agent is in tree ``S``, the model call in its trace's tree."""
    return [
        *whole(T1, 1, None, "GET /ask", 0, {"gen_ai.conversation.id": "S"}),
        *whole(T1, 2, 1, "invoke_agent a", 1, agent("a")),
        *whole(T1, 3, 9, "chat m", 2, CHAT),
    ]


def parent_in_another_trace() -> list[Record]:
    """An agent whose parent is a span of another trace: a root call of its own trace."""
    return [
        *whole(T1, 1, None, "invoke_agent outer", 0, agent("outer")),
        *whole(T1, 2, 1, "chat m", 1, CHAT),
        *whole(T2, 3, 1, "invoke_agent inner", 2, agent("inner")),
        *whole(T2, 4, 3, "chat m", 3, CHAT),
    ]


CASES = {
    "a session below a plain root": (session_below_a_plain_root, ["S"]),
    "a lost parent under a root that names a session": (lost_parent_under_a_session_root, ["S", T1]),
    "a parent in another trace": (parent_in_another_trace, [T1, T2]),
}
"""Each case: its records, and the trees the fold lists for them."""

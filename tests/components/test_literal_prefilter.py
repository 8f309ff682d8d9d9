"""The literal prefilter finds every occurrence of every needle, as a search for each would, in
the order it promises; and it holds with follows that have groups of their own."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from callctx.components.literal_prefilter import Needle, Prefilter, lower_keeping_offsets

# Needles that share rare characters (gates with look-behind), have none (first three characters),
# or are Cyrillic and CJK (one pass per script), in both cases, with and without follows.
NEEDLES = [
    Needle("sk-"),
    Needle("sk-ant-"),
    Needle("glpat-", r"[a-z]{2}"),
    Needle("xoxb-"),
    Needle("key", r"[ \t]*[:=]", lower=True),
    Needle("token", lower=True),
    Needle("secret"),
    Needle("sec", r"(?!ret)"),
    Needle("AKIA", r"[A-Z0-9]{4}"),
    Needle("и", r"гнор"),
    Needle("забудь"),
    Needle("忽略"),
    Needle("无", r"视"),
]
# texts made of pieces of needles and characters around them
PIECES = [*dict.fromkeys(n.text for n in NEEDLES), "ant-", "ret", "KEY", "ab", "cd", "=", ":", " ", "\t", "гнор"]
PIECES += ["视", "İ", "é", "x", "9"]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def naive(needles: list[Needle], text: str, ascii: bool) -> dict[Needle, list[int]]:
    hay = text.encode("ascii", "replace").decode() if ascii else text
    low = lower_keeping_offsets(hay)
    out: dict[Needle, list[int]] = {}
    for n in needles:
        h = low if n.lower else hay
        rx = re.compile(re.escape(n.text) + (f"(?:{n.follow})" if n.follow else ""))
        starts = [p for p in range(len(h)) if rx.match(h, p)]
        if starts:
            out[n] = starts
    return out


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, picked=st.sets(st.sampled_from(range(len(NEEDLES))), min_size=1))
def test_it_finds_what_a_search_for_each_needle_finds(text, picked):
    needles = [NEEDLES[i] for i in sorted(picked)]
    assert Prefilter(needles).find(text) == naive(needles, text, ascii=False)
    ascii_needles = [n for n in needles if n.text.isascii()]
    assert Prefilter(ascii_needles, ascii=True).find(text) == naive(ascii_needles, text, ascii=True)


def test_occurrences_come_gate_by_gate_and_in_text_order_within_one():
    prefilter = Prefilter([Needle("忽"), Needle("d"), Needle("无"), Needle("a")])
    found = list(prefilter.finditer("无a忽d无a"))
    # the CJK needles share one pass, the first gate (its first needle comes first)
    assert found == [(Needle("无"), 0), (Needle("忽"), 2), (Needle("无"), 4), (Needle("d"), 3), (Needle("a"), 1),
                     (Needle("a"), 5)]  # fmt: skip
    assert list(prefilter.finditer("only d")) == [(Needle("d"), 5)]
    assert list(Prefilter([]).finditer("anything")) == []


def test_a_follow_may_hold_groups_of_its_own():
    needles = [Needle("xa-", r"(c)(d)?"), Needle("ya-", r"(?P<n>\d)"), Needle("za-")]
    assert Prefilter(needles).find("xa-cd ya-4 za- xa-q") == {needles[0]: [0], needles[1]: [6], needles[2]: [11]}


def test_lower_case_keeps_offsets_and_a_prefilter_is_immutable():
    assert lower_keeping_offsets("İSTANBUL Key") == "İstanbul key"
    text = "İİ token KEY: x"
    assert Prefilter([Needle("key", lower=True)]).find(text) == {Needle("key", lower=True): [9]}
    with pytest.raises(AttributeError):
        Prefilter([]).extra = 1  # type: ignore[attr-defined]

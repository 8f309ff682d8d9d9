"""Export shaping: secrets redacted, values cut with JSON kept valid, spans and requests
bounded, and the local log untouched."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from callctx import agentic
from callctx.export.shaping import REDACTED, Shaper, ShapingExporter, estimated_size, shrink_json, truncate
from callctx.projection import Projection
from callctx.projection import schema as s

SECRETS = [
    "sk-proj-abcdefghijklmnopqrstuvwx1234",
    "sk-ant-api03-abcdefghijklmnopqrstuvwx",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1" * 18,
    "xoxb-1234567890-abcdefghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_secrets_are_redacted(secret):
    text = f"use {secret} to log in"
    assert Shaper().redact(text) == f"use {REDACTED} to log in"


def test_bearer_and_passwords_keep_their_labels_and_json():
    s = Shaper()
    assert s.redact("Authorization: Bearer abc.def-ghi_jkl") == f"Authorization: Bearer {REDACTED}"
    doc = json.dumps({"user": "ada", "password": "hunter2!", "api_key": "k-123456"})
    red = json.loads(s.redact(doc))
    assert red == {"user": "ada", "password": REDACTED, "api_key": REDACTED}
    assert s.redact("password=hunter22 and more") == f"password={REDACTED} and more"
    assert s.value("http.request.header.authorization", "Basic Zm9vOmJhcg==", 100) == REDACTED
    assert s.redact("the token count was 1200") == "the token count was 1200"


def test_custom_patterns():
    s = Shaper(secrets=[r"ACME-\d{6}"])
    assert s.redact("ticket ACME-123456 ok") == f"ticket {REDACTED} ok"
    assert s.redact("sk-proj-abcdefghijklmnopqrstuvwx1234") == REDACTED  # yours add to the defaults
    from callctx.export.redact import Redactor

    only = Shaper(redactor=Redactor([r"ACME-\d{6}"]))  # a whole redactor of your own replaces them
    assert (
        only.redact("sk-proj-abcdefghijklmnopqrstuvwx1234 ACME-123456")
        == f"sk-proj-abcdefghijklmnopqrstuvwx1234 {REDACTED}"
    )


@pytest.mark.parametrize("limit", [40, 200, 1000])
def test_truncation_keeps_json_valid(limit):
    doc = {"messages": [{"role": "user", "content": "z" * 5000}, {"role": "assistant", "content": ["a"] * 500}],
           "n": 3}  # fmt: skip
    out = truncate(json.dumps(doc), limit)
    assert len(out) <= limit
    json.loads(out)
    assert truncate("plain text " * 100, 50).endswith("…") and len(truncate("plain text " * 100, 50)) == 50
    json.loads(shrink_json(list(range(10_000)), limit))


def test_span_cap_and_request_split(runtime):
    sink = InMemorySpanExporter()
    shaper = Shaper(max_value=50_000, max_span=20_000)
    exporter = ShapingExporter(sink, shaper, max_request=100_000)
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    calls = []

    class Counting(InMemorySpanExporter):
        def export(self, spans):
            calls.append(sum(estimated_size(x) for x in spans))
            return super().export(spans)

    counting = Counting()
    runtime.provider.add_span_processor(SimpleSpanProcessor(ShapingExporter(counting, shaper, max_request=100_000)))

    @agentic
    def big(text: str) -> str:
        return text + " and my key is sk-proj-abcdefghijklmnopqrstuvwx1234"

    for _ in range(12):
        big("w" * 40_000)
    runtime.close()
    shaped = counting.get_finished_spans()
    assert shaped and all(estimated_size(sp) <= 20_000 + 1000 for sp in shaped)
    assert all("sk-proj-" not in sp.attributes[s.OUTPUT_VALUE] for sp in shaped)
    # the local log keeps every byte
    p = Projection.from_log(runtime.log_path)
    assert p.events == 24
    from callctx.projection import read_log

    ends = [r for r in read_log(runtime.log_path) if type(r).__name__ == "SpanEnded"]
    assert all("sk-proj-abcdefghijklmnopqrstuvwx1234" in r.attributes[s.OUTPUT_VALUE] for r in ends)
    # batches split under the request limit
    many = [sp for sp in shaped] * 20
    batches = exporter.batches(many)
    assert len(batches) > 1 and all(sum(estimated_size(x) for x in b) <= 100_000 for b in batches)
    assert sum(len(b) for b in batches) == len(many)
    assert exporter.export(many) is SpanExportResult.SUCCESS and len(sink.get_finished_spans()) == len(many)

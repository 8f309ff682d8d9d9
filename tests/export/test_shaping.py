"""Export shaping: secrets redacted in every carrier of a span (and nothing else changed, byte
for byte), values cut with JSON kept valid, spans and requests bounded, and the local log
untouched."""

from __future__ import annotations

import json

import msgspec
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, TraceState

from callctx import agentic
from callctx.export.shaping import REDACTED, Shaper, ShapingExporter, estimated_size, shrink_json, truncate
from callctx.projection import Projection, jaeger, otlp
from callctx.projection import schema as s
from callctx.projection.events import SpanEvent, SpanLink
from callctx.projection.spans import SpanData

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


# --- every carrier of a span, and what is not a secret ------------------------------------------

SCHEMA = "https://opentelemetry.io/schemas/1.24.0"
RESOURCE = {
    "service.name": "billing-api",
    "service.version": "2.4.1",
    "deployment.environment": "production",
    "host.name": "ip-10-0-3-17.ec2.internal",
    "cloud.region": "eu-west-1",
    "telemetry.sdk.language": "python",
    "process.command_args": ("python", "-m", "billing", "--max-tokens=512"),
}
ATTRIBUTES = {
    "gen_ai.usage.input_tokens": 120,
    "gen_ai.request.max_tokens": 512,
    "http.request.header.accept": ("*/*",),
    "cache_key": "users:42",
    "token_count": 7,
    "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5",
    "session.id": "s-1",
    "url.full": "https://example.com:8443/path?x=1&page=2",
    "ok": True,
    "ratio": 0.25,
}
SCOPE = ("opentelemetry.instrumentation.httpx", "0.48b0")
EVENTS = ["exception", "gen_ai.choice", "retry: backoff 2s (attempt 2 of 3)"]


def _sdk_span(resource, scope, events, attributes, link_attributes, trace_state=()):
    provider = TracerProvider(resource=Resource(resource, SCHEMA))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(*scope, SCHEMA, {"instrumentation.kind": "client"})
    state = TraceState(trace_state)
    remote = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, True, trace_state=state)
    links = [Link(remote, link_attributes)]
    with tracer.start_as_current_span("GET /v1/items", attributes=attributes, links=links) as sp:
        for name in events:
            sp.add_event(name, {"exception.message": "read timed out after 30s", "index": 0})
    provider.shutdown()
    return memory.get_finished_spans()[0]


def _span_data(resource, scope, events, attributes, link_attributes):
    return SpanData(
        trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331", parent_id=None,
        name="GET /v1/items", start_ns=1, end_ns=2, attributes=attributes, resource=resource, scope=scope,
        events=[SpanEvent(n, 1, {"detail": {"exception.message": "timed out", "index": 0}}) for n in events],
        links=[SpanLink("0af7651916cd43dd8448eb211c80319d", "b7ad6b7169203332", link_attributes)],
    )  # fmt: skip


def test_what_is_not_a_secret_leaves_byte_for_byte():
    """Resource attributes, scope, event names, keys (at any depth), links and trace state that
    hold no secret come out exactly as they went in, on the SDK path and the export-file path."""
    span = _sdk_span(RESOURCE, SCOPE, EVENTS, ATTRIBUTES, {"link.reason": "retry of 3"}, [("vendor", "blue-42")])
    shaped = Shaper().span(span)
    assert encode_spans([shaped]).SerializeToString() == encode_spans([span]).SerializeToString()
    assert shaped.resource is span.resource and shaped.instrumentation_scope is span.instrumentation_scope

    request = {"headers": {"accept": "*/*", "x-request-id": "req-7"}, "tries": [{"max_tokens": 5}]}
    resource = {**RESOURCE, "deploy": {"region": "eu", "cache_key": "k"}}
    data = _span_data(resource, SCOPE[0], EVENTS, {**ATTRIBUTES, "request": request}, {"a": {"b": 1}})
    out = Shaper().span_data(data)
    assert msgspec.json.encode(out) == msgspec.json.encode(data)
    assert json.dumps(otlp.encode_json([out])) == json.dumps(otlp.encode_json([data]))
    assert json.dumps(jaeger.encode([out])) == json.dumps(jaeger.encode([data]))


def test_secrets_in_every_carrier_of_a_span_go():
    key = SECRETS[0]
    other = "sk-proj-zyxwvutsrqponmlkjihgfedcba9876"
    resource = {"service.name": f"billing {key}", "api_key": "plain-looking-value", key: "1", "note": f"k={key}"}
    attrs = {key: 1, other: 2, "nested": {"a": {key: {"b": other}}}, REDACTED: 3}
    span = _sdk_span(resource, (f"lib {key}", f"v {key}"), [f"boom {key}"], {key: 1, other: 2}, {key: f"x {other}"},
                     [("vendor", other)])  # fmt: skip
    shaped = Shaper().span(span)
    assert dict(shaped.resource.attributes) == {
        "service.name": f"billing {REDACTED}", "api_key": REDACTED, REDACTED: "1", "note": f"k={REDACTED}",
    }  # fmt: skip
    scope = shaped.instrumentation_scope
    assert (scope.name, scope.version) == (f"lib {REDACTED}", f"v {REDACTED}")
    assert [e.name for e in shaped.events] == [f"boom {REDACTED}"]
    assert dict(shaped.attributes) == {REDACTED: 1, f"{REDACTED} 2": 2}  # keys redacted alike stay apart
    assert dict(shaped.links[0].attributes) == {REDACTED: f"x {REDACTED}"}
    assert dict(shaped.links[0].context.trace_state) == {"vendor": REDACTED}
    data = Shaper().span_data(_span_data(resource, f"lib {key}", [f"boom {key}"], attrs, {"m": {key: other}}))
    assert data.resource == {"service.name": f"billing {REDACTED}", "api_key": REDACTED, REDACTED: "1",
                             "note": f"k={REDACTED}"}  # fmt: skip
    assert data.attributes == {REDACTED: 1, f"{REDACTED} 2": 2, "nested": {"a": {REDACTED: {"b": REDACTED}}},
                               f"{REDACTED} 3": 3}  # fmt: skip
    assert (data.scope, data.events[0].name) == (f"lib {REDACTED}", f"boom {REDACTED}")
    assert data.links[0].attributes == {"m": {REDACTED: REDACTED}}

"""An agent traced by OpenInference's own decorators, exporting OTLP/HTTP to argv[1]."""

import sys

from openinference.instrumentation import TracerProvider, using_session
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=sys.argv[1] + "/v1/traces")))
tracer = provider.get_tracer("dialect-openinference")


@tracer.tool(name="search", description="web search")
def search(query: str, k: int = 2) -> list:
    return [f"{query}-{i}" for i in range(k)]


@tracer.llm
def think(prompt: str) -> str:
    return "notes on " + prompt


@tracer.agent(name="researcher")
def researcher(topic: str) -> str:
    return think(" ".join(search(topic)))


@tracer.agent(name="planner")
def planner(goal: str) -> str:
    return "plan: " + researcher(goal)


with using_session("openinference-session"):
    planner("paris")
provider.shutdown()

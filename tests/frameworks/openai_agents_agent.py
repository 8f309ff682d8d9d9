"""An OpenAI Agents SDK agent with one function tool, traced by OpenInference's instrumentor and
exported over OTLP/HTTP to argv[1]; the model is the fake OpenAI server at argv[2] (a base URL
ending in /v1). Run with the ``openai_agents`` extra environment's python.

The SDK talks to the Responses API by default (``POST /v1/responses``), non-streaming for
``Runner.run_sync``. The instrumentor registers its processor exclusively, replacing the SDK's
default one that uploads traces to OpenAI, so nothing leaves the machine; the SDK's own
tracing must stay enabled (``set_tracing_disabled(True)`` would silence OpenInference too)."""

import os
import sys

os.environ.pop("OPENAI_API_KEY", None)

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_client
from agents.tracing import get_trace_provider
from openai import AsyncOpenAI
from openinference.instrumentation import using_session
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

otlp_url, fake_url = sys.argv[1], sys.argv[2]
provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url + "/v1/traces")))
OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)  # exclusive: drops the OpenAI uploader
processors = get_trace_provider()._multi_processor._processors
assert [type(p).__name__ for p in processors] == ["OpenInferenceTracingProcessor"], processors

set_default_openai_client(AsyncOpenAI(api_key="test", base_url=fake_url, max_retries=0), use_for_tracing=False)


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny and 22 C in {city}"


agent = Agent(
    name="Weather agent",
    instructions="You answer questions about the weather. Use the get_weather tool.",
    model="gpt-4o-mini",
    tools=[get_weather],
)

with using_session("support-session-1"):
    result = Runner.run_sync(
        agent,
        "What's the weather in Paris?",
        run_config=RunConfig(workflow_name="Weather workflow", group_id="support-thread-1"),
    )
print(result.final_output)
provider.force_flush()
provider.shutdown()

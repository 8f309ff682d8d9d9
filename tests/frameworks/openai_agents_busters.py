"""An OpenAI Agents SDK agent that answers one question per step of a plan, with the prompt-cache
busters the plan injects, traced by OpenInference's instrumentor and exported over OTLP/HTTP.

    <openai_agents python> openai_agents_busters.py OTLP_URL MODEL_BASE_URL PLAN_JSON

The model is the caching server at MODEL_BASE_URL (ending in /v1; the SDK calls the Responses
API). PLAN_JSON: ``{"service", "session", "agent", "evict_url", "advance_url", "steps": [...]}``,
each step ``{"instructions", "tools" (names, in order), "model", "question", "pause" (seconds),
"evict"}``. Before a step's run the script calls the provider's eviction endpoint when ``evict``
is set; then, for a ``pause``, it moves time forward without waiting: the provider's (its
``advance_url``, ``POST {"seconds": pause}``) and this process's span timestamps, by the same
amount (:meth:`busters_clock.Clock.pause`); then it runs the agent once, which makes two model calls (the tool call,
then the answer).

The span timestamps come from two clocks, both shifted here: the OpenTelemetry SDK's
``time_ns`` (``opentelemetry.sdk.trace``, for a span started without a time: the root span
OpenInference opens per trace) and the Agents SDK's ``DefaultTraceProvider.time_iso`` (every
other span, the model calls' among them: OpenInference starts and ends them at the Agents SDK
span's ``started_at`` / ``ended_at``)."""

import json
import os
import sys
import time
from datetime import UTC, datetime

os.environ.pop("OPENAI_API_KEY", None)

import opentelemetry.sdk.trace as otel_sdk_trace
from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_client
from agents.tracing import get_trace_provider
from agents.tracing.provider import DefaultTraceProvider
from busters_clock import Clock, post  # beside this script
from openai import AsyncOpenAI
from openinference.instrumentation import using_session
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

otlp_url, model_url, plan_path = sys.argv[1], sys.argv[2], sys.argv[3]
with open(plan_path, encoding="utf-8") as f:
    plan = json.load(f)

provider = TracerProvider(resource=Resource.create({"service.name": plan["service"]}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url + "/v1/traces")))
OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)  # exclusive: drops the OpenAI uploader
processors = get_trace_provider()._multi_processor._processors
assert [type(p).__name__ for p in processors] == ["OpenInferenceTracingProcessor"], processors

# ---- the clocks of the span timestamps, shifted by the pauses ----------------------------------
clock = Clock()


def shifted_time_iso(self: DefaultTraceProvider) -> str:
    return (datetime.now(UTC) + clock.shift).isoformat()


assert otel_sdk_trace.time_ns is time.time_ns, "the OpenTelemetry SDK no longer takes its time from time.time_ns"
assert type(get_trace_provider()) is DefaultTraceProvider, type(get_trace_provider())
otel_sdk_trace.time_ns = clock.time_ns
DefaultTraceProvider.time_iso = shifted_time_iso


set_default_openai_client(AsyncOpenAI(api_key="test", base_url=model_url, max_retries=0), use_for_tracing=False)


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny and 22 C in {city}"


@function_tool
def get_forecast(city: str, days: int) -> str:
    """The forecast for a city, for the next few days."""
    return f"Rain in {city} for {days} days"


TOOLS = {"get_weather": get_weather, "get_forecast": get_forecast}


for step in plan["steps"]:
    if step.get("evict"):
        post(plan["evict_url"], {})
    if step.get("pause"):
        clock.pause(plan["advance_url"], step["pause"])  # the TTL running out, without waiting for it
    agent = Agent(
        name=plan["agent"],
        instructions=step["instructions"],
        model=step["model"],
        tools=[TOOLS[name] for name in step["tools"]],
    )
    with using_session(plan["session"]):
        result = Runner.run_sync(agent, step["question"], run_config=RunConfig(workflow_name="Support workflow"))
    print(result.final_output, flush=True)

provider.force_flush()
provider.shutdown()

"""A LangGraph agent (model -> tools -> model) over LangChain's ChatOpenAI that answers one
question per step of a plan, with the prompt-cache busters the plan injects, traced by
OpenInference's LangChain instrumentor and exported over OTLP/HTTP.

    <langgraph python> langgraph_busters.py OTLP_URL MODEL_BASE_URL PLAN_JSON

The model is the caching server at MODEL_BASE_URL (ending in /v1; ChatOpenAI calls Chat
Completions). PLAN_JSON: ``{"service", "session", "agent", "evict_url", "advance_url", "steps":
[...]}``, each step ``{"instructions", "tools" (names, in order), "model", "question", "pause"
(seconds), "evict"}``. Before a step's run the script calls the provider's eviction endpoint when
``evict`` is set; then, for a ``pause``, it moves time forward without waiting: the provider's
(its ``advance_url``, ``POST {"seconds": pause}``) and this process's span timestamps, by the
same amount (:meth:`busters_clock.Clock.pause`); then it runs the graph once, which makes two model calls (the tool
call, then the answer). The thread id is the session.

The span timestamps come from the clocks shifted here. OpenInference starts and ends every span
at its LangChain run's times, which LangChain's tracers stamp with ``datetime.now(UTC)``: a chat
model run's start in ``langchain_core.tracers.langchain`` (OpenInference's tracer takes
``LangChainTracer.on_chat_model_start``), every other start and every end in
``langchain_core.tracers.core``. The OpenTelemetry SDK's ``time_ns`` (``opentelemetry.sdk.trace``)
stamps a span started without a time."""

import json
import os
import sys
import time
from datetime import datetime

os.environ.pop("OPENAI_API_KEY", None)
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from typing import Annotated, TypedDict

import langchain_core.tracers.core as langchain_tracer_core
import langchain_core.tracers.langchain as langchain_tracer
import opentelemetry.sdk.trace as otel_sdk_trace
from busters_clock import Clock, post  # beside this script
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

otlp_url, model_url, plan_path = sys.argv[1], sys.argv[2], sys.argv[3]
with open(plan_path, encoding="utf-8") as f:
    plan = json.load(f)

provider = TracerProvider(resource=Resource.create({"service.name": plan["service"]}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url + "/v1/traces")))
LangChainInstrumentor().instrument(tracer_provider=provider)


# ---- the clocks of the span timestamps, shifted by the pauses ----------------------------------
clock = Clock()


class ShiftedDatetime(datetime):
    """``datetime`` whose ``now`` is ``shift`` ahead (what LangChain's tracers call)."""

    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + clock.shift


assert otel_sdk_trace.time_ns is time.time_ns, "the OpenTelemetry SDK no longer takes its time from time.time_ns"
for stamps_runs in (langchain_tracer_core, langchain_tracer):
    assert stamps_runs.datetime is datetime, f"{stamps_runs.__name__} no longer stamps runs with datetime.now"
    stamps_runs.datetime = ShiftedDatetime
otel_sdk_trace.time_ns = clock.time_ns


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny and 22 C in {city}"


@tool
def get_forecast(city: str, days: int) -> str:
    """The forecast for a city, for the next few days."""
    return f"Rain in {city} for {days} days"


TOOLS = {"get_weather": get_weather, "get_forecast": get_forecast}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def graph_for(step: dict):
    tools = [TOOLS[name] for name in step["tools"]]
    model = ChatOpenAI(model=step["model"], api_key="test", base_url=model_url, max_retries=0, temperature=0)
    bound = model.bind_tools(tools)
    system = SystemMessage(step["instructions"])

    def agent(state: State) -> dict:
        return {"messages": [bound.invoke([system, *state["messages"]])]}

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name=plan["agent"])


for step in plan["steps"]:
    if step.get("evict"):
        post(plan["evict_url"], {})
    if step.get("pause"):
        clock.pause(plan["advance_url"], step["pause"])  # the TTL running out, without waiting for it
    result = graph_for(step).invoke(
        {"messages": [HumanMessage(step["question"])]},
        config={"configurable": {"thread_id": plan["session"]}},
    )
    print(result["messages"][-1].content, flush=True)

provider.force_flush()
provider.shutdown()

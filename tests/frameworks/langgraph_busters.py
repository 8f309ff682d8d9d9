"""A LangGraph agent (model -> tools -> model) over LangChain's ChatOpenAI that answers one
question per step of a plan, with the prompt-cache busters the plan injects, traced by
OpenInference's LangChain instrumentor and exported over OTLP/HTTP.

    <langgraph python> langgraph_busters.py OTLP_URL MODEL_BASE_URL PLAN_JSON

The model is the caching server at MODEL_BASE_URL (ending in /v1; ChatOpenAI calls Chat
Completions). PLAN_JSON: ``{"service", "session", "agent", "evict_url", "steps": [...]}``, each
step ``{"instructions", "tools" (names, in order), "model", "question", "pause" (seconds),
"evict"}``. Before a step's run the script calls the provider's eviction endpoint when ``evict``
is set, then waits ``pause`` seconds (time passing, for the cache's TTL to run out); then it runs
the graph once, which makes two model calls (the tool call, then the answer). The thread id is
the session."""

import json
import os
import sys
import time
import urllib.request

os.environ.pop("OPENAI_API_KEY", None)
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from typing import Annotated, TypedDict

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


def evict(url: str) -> None:
    request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()


for step in plan["steps"]:
    if step.get("evict"):
        evict(plan["evict_url"])
    if step.get("pause"):
        time.sleep(step["pause"])  # the TTL running out: nothing to wait for but time
    result = graph_for(step).invoke(
        {"messages": [HumanMessage(step["question"])]},
        config={"configurable": {"thread_id": plan["session"]}},
    )
    print(result["messages"][-1].content, flush=True)

provider.force_flush()
provider.shutdown()

"""A LangGraph graph (planner -> tools -> writer) over LangChain's ChatOpenAI, traced by
OpenInference's LangChain instrumentor and exported over OTLP/HTTP to argv[1]; the model is the
fake OpenAI server at argv[2] (a base URL ending in /v1). Run with the ``langgraph`` extra
environment's python.

ChatOpenAI calls the Chat Completions API (``POST /v1/chat/completions``), non-streaming under
``graph.invoke``. The thread id in the run config is what OpenInference reports as session.id."""

import os
import sys

os.environ.pop("OPENAI_API_KEY", None)
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

otlp_url, fake_url = sys.argv[1], sys.argv[2]
provider = TracerProvider(resource=Resource.create({"service.name": "research-graph"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url + "/v1/traces")))
LangChainInstrumentor().instrument(tracer_provider=provider)


@tool
def search_papers(query: str) -> str:
    """Search the literature for papers about a query."""
    return f"3 papers about {query}: 'Tracing agents' (2024), 'Call trees' (2023), 'Spans' (2022)"


model = ChatOpenAI(model="gpt-4o-mini", api_key="test", base_url=fake_url, max_retries=0, temperature=0)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def planner(state: State) -> dict:
    system = SystemMessage("You plan research. Call search_papers to find sources.")
    return {"messages": [model.bind_tools([search_papers]).invoke([system, *state["messages"]])]}


def writer(state: State) -> dict:
    system = SystemMessage("Write a two-sentence summary of the sources found.")
    return {"messages": [model.invoke([system, *state["messages"]])]}


graph = StateGraph(State)
graph.add_node("planner", planner)
graph.add_node("tools", ToolNode([search_papers]))
graph.add_node("writer", writer)
graph.add_edge(START, "planner")
graph.add_edge("planner", "tools")
graph.add_edge("tools", "writer")
graph.add_edge("writer", END)
app = graph.compile()

result = app.invoke(
    {"messages": [HumanMessage("Summarise recent work on tracing LLM agents.")]},
    config={"configurable": {"thread_id": "research-thread-1"}},
)
print(result["messages"][-1].content)
provider.force_flush()
provider.shutdown()

"""An agent traced by Langfuse's @observe, sending OTLP with Langfuse's own exporter to argv[1]
(no Langfuse server: the exporter's path points at a plain OTLP receiver)."""

import os
import sys

os.environ["LANGFUSE_OTEL_TRACES_EXPORT_PATH"] = "v1/traces"
from langfuse import Langfuse, observe, propagate_attributes

lf = Langfuse(public_key="pk-lf-test", secret_key="sk-lf-test", base_url=sys.argv[1])


@observe(as_type="tool", name="search")
def search(query, k=2):
    return [f"{query}-{i}" for i in range(k)]


@observe(as_type="generation")
def think(prompt):
    return "notes on " + prompt


@observe(as_type="agent", name="researcher")
def researcher(topic):
    return think(" ".join(search(topic)))


@observe(as_type="agent", name="planner")
def planner(goal):
    with propagate_attributes(session_id="langfuse-session"):
        return "plan: " + researcher(goal)


planner("paris")
lf.flush()
lf.shutdown()

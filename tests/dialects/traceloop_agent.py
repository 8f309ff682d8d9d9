"""An agent traced by OpenLLMetry (Traceloop SDK) decorators, exporting OTLP/HTTP to argv[1]."""

import sys

from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import agent, task, tool, workflow

Traceloop.init(app_name="dialect-traceloop", api_endpoint=sys.argv[1], disable_batch=True, telemetry_enabled=False)


@tool(name="search")
def search(query, k=2):
    return [f"{query}-{i}" for i in range(k)]


@task(name="think")
def think(prompt):
    return "notes on " + prompt


@agent(name="researcher")
def researcher(topic):
    return think(" ".join(search(topic)))


@agent(name="planner")
def planner(goal):
    Traceloop.set_association_properties({"session_id": "traceloop-session"})
    return "plan: " + researcher(goal)


@workflow(name="trip")
def main(goal):
    return planner(goal)


main("paris")
